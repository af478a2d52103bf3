-- +goose Up
-- Container hosted blobs and manifests:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- container_blobs -------------------------------------------------------------
-- Layers and configs. digest = blob_sha256 (content addressed), so the
-- (namespace_id, digest) index also serves checksum / vulnerability-impact
-- lookups; there is no separate blob_sha256 index here.
CREATE TABLE container_blobs (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    container_image_id         uuid        NOT NULL,
    digest                     bytea       NOT NULL,
    media_type                 text        NOT NULL,
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    soft_deleted_at            timestamptz NULL,
    CONSTRAINT container_blobs_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_blobs_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_blobs_digest_length CHECK (octet_length(digest) = 32),
    CONSTRAINT container_blobs_media_type_length CHECK (char_length(media_type) <= 255),
    CONSTRAINT container_blobs_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT container_blobs_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_blobs_container_image_fkey FOREIGN KEY (container_image_id, namespace_id)
        REFERENCES container_images (id, namespace_id),
    CONSTRAINT container_blobs_attachment_fkey FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT container_blobs_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_blobs_active_digest_key
    ON container_blobs (namespace_id, container_image_id, digest) WHERE soft_deleted_at IS NULL;
CREATE INDEX container_blobs_attachment_idx ON container_blobs (namespace_id, blob_storage_attachment_id);
CREATE INDEX container_blobs_digest_idx ON container_blobs (namespace_id, digest);
SELECT create_hash_partitions('container_blobs');

-- container_manifests ---------------------------------------------------------
-- size: total bytes of the manifest tree rooted here, precomputed at push time.
-- gitlab_git_commit_sha holds a SHA-1 (20) or SHA-256 (32) commit id.
CREATE TABLE container_manifests (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    container_image_id         uuid        NOT NULL,
    digest                     bytea       NOT NULL,
    media_type                 text        NOT NULL,
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    size                       bigint      NOT NULL,
    gitlab_user_id             text        NULL,
    gitlab_project_id          text        NULL,
    gitlab_git_commit_sha      bytea       NULL,
    soft_deleted_at            timestamptz NULL,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT container_manifests_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_manifests_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_manifests_digest_length CHECK (octet_length(digest) = 32),
    CONSTRAINT container_manifests_media_type_length CHECK (char_length(media_type) <= 255),
    CONSTRAINT container_manifests_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT container_manifests_gitlab_user_id_length CHECK (char_length(gitlab_user_id) <= 255),
    CONSTRAINT container_manifests_gitlab_project_id_length CHECK (char_length(gitlab_project_id) <= 255),
    CONSTRAINT container_manifests_gitlab_git_commit_sha_length CHECK (octet_length(gitlab_git_commit_sha) IN (20, 32)),
    CONSTRAINT container_manifests_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_manifests_container_image_fkey FOREIGN KEY (container_image_id, namespace_id)
        REFERENCES container_images (id, namespace_id),
    CONSTRAINT container_manifests_attachment_fkey FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT container_manifests_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_manifests_active_digest_key
    ON container_manifests (namespace_id, container_image_id, digest) WHERE soft_deleted_at IS NULL;
CREATE INDEX container_manifests_attachment_idx ON container_manifests (namespace_id, blob_storage_attachment_id);
CREATE INDEX container_manifests_trash_idx
    ON container_manifests (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
CREATE INDEX container_manifests_created_at_idx ON container_manifests (namespace_id, created_at DESC);
SELECT create_hash_partitions('container_manifests');

-- +goose Down
DROP TABLE IF EXISTS container_manifests;
DROP TABLE IF EXISTS container_blobs;
