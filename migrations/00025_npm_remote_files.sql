-- +goose Up
-- npm remote cached dist-tags and files:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- npm_remote_tags -------------------------------------------------------------
CREATE TABLE npm_remote_tags (
    id                          uuid NOT NULL,
    namespace_id                uuid NOT NULL,
    npm_remote_package_id       uuid NOT NULL,
    npm_remote_version_id       uuid NOT NULL,
    npm_remote_metadata_file_id uuid NOT NULL,
    name                        text NOT NULL,
    CONSTRAINT npm_remote_tags_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_remote_tags_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_remote_tags_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT npm_remote_tags_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_remote_tags_remote_package_fkey FOREIGN KEY (npm_remote_package_id, namespace_id)
        REFERENCES npm_remote_packages (id, namespace_id),
    CONSTRAINT npm_remote_tags_remote_version_fkey FOREIGN KEY (npm_remote_version_id, namespace_id)
        REFERENCES npm_remote_versions (id, namespace_id),
    CONSTRAINT npm_remote_tags_remote_metadata_file_fkey FOREIGN KEY (npm_remote_metadata_file_id, namespace_id)
        REFERENCES npm_remote_metadata_files (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_remote_tags_package_name_key ON npm_remote_tags (namespace_id, npm_remote_package_id, name);
CREATE INDEX npm_remote_tags_version_idx ON npm_remote_tags (namespace_id, npm_remote_version_id);
SELECT create_hash_partitions('npm_remote_tags');

-- npm_remote_files ------------------------------------------------------------
CREATE TABLE npm_remote_files (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    npm_remote_version_id      uuid        NOT NULL,
    file_name                  text        NOT NULL,
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    upstream_checked_at        timestamptz NOT NULL DEFAULT now(),
    upstream_etag              text        NULL,
    soft_deleted_at            timestamptz NULL,
    CONSTRAINT npm_remote_files_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_remote_files_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_remote_files_file_name_length CHECK (char_length(file_name) <= 255),
    CONSTRAINT npm_remote_files_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT npm_remote_files_upstream_etag_length CHECK (char_length(upstream_etag) <= 255),
    CONSTRAINT npm_remote_files_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_remote_files_remote_version_fkey FOREIGN KEY (npm_remote_version_id, namespace_id)
        REFERENCES npm_remote_versions (id, namespace_id),
    CONSTRAINT npm_remote_files_attachment_fkey FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT npm_remote_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_remote_files_active_file_key
    ON npm_remote_files (namespace_id, npm_remote_version_id, file_name) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_remote_files_attachment_idx ON npm_remote_files (namespace_id, blob_storage_attachment_id);
CREATE INDEX npm_remote_files_blob_sha256_idx ON npm_remote_files (namespace_id, blob_sha256);
SELECT create_hash_partitions('npm_remote_files');

-- +goose Down
DROP TABLE IF EXISTS npm_remote_files;
DROP TABLE IF EXISTS npm_remote_tags;
