-- +goose Up
-- npm remote cached versions and metadata files:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- npm_remote_versions ---------------------------------------------------------
CREATE TABLE npm_remote_versions (
    id                    uuid        NOT NULL,
    namespace_id          uuid        NOT NULL,
    npm_remote_package_id uuid        NOT NULL,
    version               text        NOT NULL,
    package_json          jsonb       NOT NULL,
    size_bytes            bigint      NOT NULL DEFAULT 0, -- buffered counter
    last_downloaded_at    timestamptz NULL,               -- buffered
    soft_deleted_at       timestamptz NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT npm_remote_versions_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_remote_versions_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_remote_versions_version_length CHECK (char_length(version) <= 255),
    CONSTRAINT npm_remote_versions_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_remote_versions_remote_package_fkey FOREIGN KEY (npm_remote_package_id, namespace_id)
        REFERENCES npm_remote_packages (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_remote_versions_active_version_key
    ON npm_remote_versions (namespace_id, npm_remote_package_id, version) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_remote_versions_size_bytes_idx
    ON npm_remote_versions (namespace_id, npm_remote_package_id, size_bytes DESC) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_remote_versions_trash_idx
    ON npm_remote_versions (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
CREATE INDEX npm_remote_versions_created_at_idx ON npm_remote_versions (namespace_id, created_at DESC);
SELECT create_hash_partitions('npm_remote_versions');

-- npm_remote_metadata_files ---------------------------------------------------
-- Cached upstream packuments, one per package per kind; upstream_checked_at is
-- compared with metadata_cache_validity_hours.
CREATE TABLE npm_remote_metadata_files (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    npm_remote_package_id      uuid        NOT NULL,
    kind                       smallint    NOT NULL, -- enum.NpmMetadataKind: 0=full, 1=dist_tags (abbreviated not cached)
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    upstream_checked_at        timestamptz NOT NULL DEFAULT now(),
    upstream_etag              text        NULL,
    CONSTRAINT npm_remote_metadata_files_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_remote_metadata_files_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_remote_metadata_files_kind_range CHECK (kind IN (0, 1)),
    CONSTRAINT npm_remote_metadata_files_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT npm_remote_metadata_files_upstream_etag_length CHECK (char_length(upstream_etag) <= 255),
    CONSTRAINT npm_remote_metadata_files_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_remote_metadata_files_remote_package_fkey FOREIGN KEY (npm_remote_package_id, namespace_id)
        REFERENCES npm_remote_packages (id, namespace_id),
    CONSTRAINT npm_remote_metadata_files_attachment_fkey
        FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT npm_remote_metadata_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_remote_metadata_files_package_kind_key
    ON npm_remote_metadata_files (namespace_id, npm_remote_package_id, kind);
CREATE INDEX npm_remote_metadata_files_attachment_idx
    ON npm_remote_metadata_files (namespace_id, blob_storage_attachment_id);
CREATE INDEX npm_remote_metadata_files_blob_sha256_idx ON npm_remote_metadata_files (namespace_id, blob_sha256);
SELECT create_hash_partitions('npm_remote_metadata_files');

-- +goose Down
DROP TABLE IF EXISTS npm_remote_metadata_files;
DROP TABLE IF EXISTS npm_remote_versions;
