-- +goose Up
-- Maven hosted versions and files:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- maven_versions --------------------------------------------------------------
CREATE TABLE maven_versions (
    id                    uuid        NOT NULL,
    namespace_id          uuid        NOT NULL,
    maven_package_id      uuid        NOT NULL,
    version               text        NOT NULL,
    size_bytes            bigint      NOT NULL DEFAULT 0, -- buffered counter
    last_downloaded_at    timestamptz NULL,               -- buffered
    gitlab_user_id        text        NULL,
    gitlab_project_id     text        NULL,
    gitlab_git_commit_sha bytea       NULL,
    soft_deleted_at       timestamptz NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT maven_versions_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_versions_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_versions_version_length CHECK (char_length(version) <= 255),
    CONSTRAINT maven_versions_gitlab_user_id_length CHECK (char_length(gitlab_user_id) <= 255),
    CONSTRAINT maven_versions_gitlab_project_id_length CHECK (char_length(gitlab_project_id) <= 255),
    CONSTRAINT maven_versions_gitlab_git_commit_sha_length CHECK (octet_length(gitlab_git_commit_sha) IN (20, 32)),
    CONSTRAINT maven_versions_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_versions_maven_package_fkey FOREIGN KEY (maven_package_id, namespace_id)
        REFERENCES maven_packages (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX maven_versions_active_version_key
    ON maven_versions (namespace_id, maven_package_id, version) WHERE soft_deleted_at IS NULL;
CREATE INDEX maven_versions_last_downloaded_at_idx
    ON maven_versions (namespace_id, maven_package_id, last_downloaded_at NULLS FIRST) WHERE soft_deleted_at IS NULL;
CREATE INDEX maven_versions_size_bytes_idx
    ON maven_versions (namespace_id, maven_package_id, size_bytes DESC) WHERE soft_deleted_at IS NULL;
CREATE INDEX maven_versions_trash_idx
    ON maven_versions (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
CREATE INDEX maven_versions_created_at_idx ON maven_versions (namespace_id, created_at DESC);
SELECT create_hash_partitions('maven_versions');

-- maven_files -----------------------------------------------------------------
-- Version files (maven_version_id set) and package-level files such as
-- maven-metadata.xml (maven_version_id NULL). sha1/md5/sha512 are Maven
-- protocol checksums (md5 optional since Maven 3.9).
CREATE TABLE maven_files (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    maven_package_id           uuid        NOT NULL,
    maven_version_id           uuid        NULL,
    file_name                  text        NOT NULL,
    blob_storage_attachment_id bigint      NOT NULL,
    blob_sha256                bytea       NOT NULL,
    sha1                       bytea       NOT NULL,
    md5                        bytea       NULL,
    sha512                     bytea       NOT NULL,
    soft_deleted_at            timestamptz NULL,
    CONSTRAINT maven_files_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_files_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_files_file_name_length CHECK (char_length(file_name) <= 255),
    CONSTRAINT maven_files_blob_sha256_length CHECK (octet_length(blob_sha256) = 32),
    CONSTRAINT maven_files_sha1_length CHECK (octet_length(sha1) = 20),
    CONSTRAINT maven_files_md5_length CHECK (octet_length(md5) = 16),
    CONSTRAINT maven_files_sha512_length CHECK (octet_length(sha512) = 64),
    CONSTRAINT maven_files_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_files_maven_package_fkey FOREIGN KEY (maven_package_id, namespace_id)
        REFERENCES maven_packages (id, namespace_id),
    CONSTRAINT maven_files_maven_version_fkey FOREIGN KEY (maven_version_id, namespace_id)
        REFERENCES maven_versions (id, namespace_id),
    CONSTRAINT maven_files_attachment_fkey FOREIGN KEY (blob_storage_attachment_id, namespace_id, blob_sha256)
        REFERENCES blob_storage_attachments (id, namespace_id, sha256),
    CONSTRAINT maven_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256)
        REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX maven_files_active_version_file_key
    ON maven_files (namespace_id, maven_version_id, file_name)
    WHERE soft_deleted_at IS NULL AND maven_version_id IS NOT NULL;
CREATE UNIQUE INDEX maven_files_active_package_file_key
    ON maven_files (namespace_id, maven_package_id, file_name)
    WHERE soft_deleted_at IS NULL AND maven_version_id IS NULL;
CREATE INDEX maven_files_attachment_idx ON maven_files (namespace_id, blob_storage_attachment_id);
CREATE INDEX maven_files_blob_sha256_idx ON maven_files (namespace_id, blob_sha256);
SELECT create_hash_partitions('maven_files');

-- +goose Down
DROP TABLE IF EXISTS maven_files;
DROP TABLE IF EXISTS maven_versions;
