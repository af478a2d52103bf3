-- +goose Up
-- Container remote cached blobs and manifests:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- container_remote_blobs ------------------------------------------------------
CREATE TABLE container_remote_blobs (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    container_remote_image_id  uuid        NOT NULL,
    digest                     bytea       NOT NULL,
    media_type                 text        NOT NULL,
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    soft_deleted_at            timestamptz NULL,
    CONSTRAINT container_remote_blobs_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_remote_blobs_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_remote_blobs_digest_length CHECK (octet_length(digest) = 32),
    CONSTRAINT container_remote_blobs_media_type_length CHECK (char_length(media_type) <= 255),
    CONSTRAINT container_remote_blobs_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT container_remote_blobs_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_remote_blobs_remote_image_fkey FOREIGN KEY (container_remote_image_id, namespace_id)
        REFERENCES container_remote_images (id, namespace_id),
    CONSTRAINT container_remote_blobs_attachment_fkey FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT container_remote_blobs_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_remote_blobs_active_digest_key
    ON container_remote_blobs (namespace_id, container_remote_image_id, digest) WHERE soft_deleted_at IS NULL;
CREATE INDEX container_remote_blobs_attachment_idx ON container_remote_blobs (namespace_id, blob_storage_attachment_id);
CREATE INDEX container_remote_blobs_blob_sha256_idx ON container_remote_blobs (namespace_id, blob_sha256);
SELECT create_hash_partitions('container_remote_blobs');

-- container_remote_manifests --------------------------------------------------
-- size: bytes of the subtree this cache knows about; converges as children
-- are cached (lazy remote caching).
CREATE TABLE container_remote_manifests (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    container_remote_image_id  uuid        NOT NULL,
    digest                     bytea       NOT NULL,
    media_type                 text        NOT NULL,
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    size                       bigint      NOT NULL,
    soft_deleted_at            timestamptz NULL,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT container_remote_manifests_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_remote_manifests_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_remote_manifests_digest_length CHECK (octet_length(digest) = 32),
    CONSTRAINT container_remote_manifests_media_type_length CHECK (char_length(media_type) <= 255),
    CONSTRAINT container_remote_manifests_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT container_remote_manifests_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_remote_manifests_remote_image_fkey FOREIGN KEY (container_remote_image_id, namespace_id)
        REFERENCES container_remote_images (id, namespace_id),
    CONSTRAINT container_remote_manifests_attachment_fkey FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT container_remote_manifests_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_remote_manifests_active_digest_key
    ON container_remote_manifests (namespace_id, container_remote_image_id, digest) WHERE soft_deleted_at IS NULL;
CREATE INDEX container_remote_manifests_attachment_idx
    ON container_remote_manifests (namespace_id, blob_storage_attachment_id);
CREATE INDEX container_remote_manifests_blob_sha256_idx ON container_remote_manifests (namespace_id, blob_sha256);
CREATE INDEX container_remote_manifests_trash_idx
    ON container_remote_manifests (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
CREATE INDEX container_remote_manifests_created_at_idx ON container_remote_manifests (namespace_id, created_at DESC);
SELECT create_hash_partitions('container_remote_manifests');

-- +goose Down
DROP TABLE IF EXISTS container_remote_manifests;
DROP TABLE IF EXISTS container_remote_blobs;
