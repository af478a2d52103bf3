-- +goose Up
-- npm hosted files (tarballs) and precomputed metadata files:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- npm_files -------------------------------------------------------------------
CREATE TABLE npm_files (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    npm_version_id             uuid        NOT NULL,
    file_name                  text        NOT NULL,
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    soft_deleted_at            timestamptz NULL,
    CONSTRAINT npm_files_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_files_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_files_file_name_length CHECK (char_length(file_name) <= 255),
    CONSTRAINT npm_files_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT npm_files_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_files_npm_version_fkey FOREIGN KEY (npm_version_id, namespace_id)
        REFERENCES npm_versions (id, namespace_id),
    CONSTRAINT npm_files_attachment_fkey FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT npm_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_files_active_file_key
    ON npm_files (namespace_id, npm_version_id, file_name) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_files_attachment_idx ON npm_files (namespace_id, blob_storage_attachment_id);
CREATE INDEX npm_files_blob_sha256_idx ON npm_files (namespace_id, blob_sha256);
SELECT create_hash_partitions('npm_files');

-- npm_metadata_files ----------------------------------------------------------
-- Precomputed packuments, one per package per kind. expires_at is the cache
-- freshness signal (writers force-expire with expires_at = now()), not a
-- hard-delete deadline. The unique index is the ON CONFLICT arbiter of the
-- rebuild upsert.
CREATE TABLE npm_metadata_files (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    npm_package_id             uuid        NOT NULL,
    kind                       smallint    NOT NULL, -- enum.NpmMetadataKind: 0=full, 1=dist_tags, 2=abbreviated
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    expires_at                 timestamptz NOT NULL,
    CONSTRAINT npm_metadata_files_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_metadata_files_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_metadata_files_kind_range CHECK (kind IN (0, 1, 2)),
    CONSTRAINT npm_metadata_files_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT npm_metadata_files_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_metadata_files_npm_package_fkey FOREIGN KEY (npm_package_id, namespace_id)
        REFERENCES npm_packages (id, namespace_id),
    CONSTRAINT npm_metadata_files_attachment_fkey FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT npm_metadata_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_metadata_files_package_kind_key ON npm_metadata_files (namespace_id, npm_package_id, kind);
CREATE INDEX npm_metadata_files_attachment_idx ON npm_metadata_files (namespace_id, blob_storage_attachment_id);
CREATE INDEX npm_metadata_files_blob_sha256_idx ON npm_metadata_files (namespace_id, blob_sha256);
SELECT create_hash_partitions('npm_metadata_files');

-- +goose Down
DROP TABLE IF EXISTS npm_metadata_files;
DROP TABLE IF EXISTS npm_files;
