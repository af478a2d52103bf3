-- +goose Up
-- npm hosted versions and dist-tags:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- npm_versions ----------------------------------------------------------------
-- package_json is validated against a strict JSON schema in Go before writing.
CREATE TABLE npm_versions (
    id                    uuid        NOT NULL,
    namespace_id          uuid        NOT NULL,
    npm_package_id        uuid        NOT NULL,
    version               text        NOT NULL,
    package_json          jsonb       NOT NULL,
    size_bytes            bigint      NOT NULL DEFAULT 0, -- buffered counter
    last_downloaded_at    timestamptz NULL,               -- buffered
    gitlab_user_id        text        NULL,
    gitlab_project_id     text        NULL,
    gitlab_git_commit_sha bytea       NULL,
    soft_deleted_at       timestamptz NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT npm_versions_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_versions_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_versions_version_length CHECK (char_length(version) <= 255),
    CONSTRAINT npm_versions_gitlab_user_id_length CHECK (char_length(gitlab_user_id) <= 255),
    CONSTRAINT npm_versions_gitlab_project_id_length CHECK (char_length(gitlab_project_id) <= 255),
    CONSTRAINT npm_versions_gitlab_git_commit_sha_length CHECK (octet_length(gitlab_git_commit_sha) IN (20, 32)),
    CONSTRAINT npm_versions_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_versions_npm_package_fkey FOREIGN KEY (npm_package_id, namespace_id)
        REFERENCES npm_packages (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_versions_active_version_key
    ON npm_versions (namespace_id, npm_package_id, version) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_versions_last_downloaded_at_idx
    ON npm_versions (namespace_id, npm_package_id, last_downloaded_at NULLS FIRST) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_versions_size_bytes_idx
    ON npm_versions (namespace_id, npm_package_id, size_bytes DESC) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_versions_trash_idx
    ON npm_versions (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
CREATE INDEX npm_versions_created_at_idx ON npm_versions (namespace_id, created_at DESC);
SELECT create_hash_partitions('npm_versions');

-- npm_tags --------------------------------------------------------------------
CREATE TABLE npm_tags (
    id             uuid NOT NULL,
    namespace_id   uuid NOT NULL,
    npm_package_id uuid NOT NULL,
    npm_version_id uuid NOT NULL,
    name           text NOT NULL,
    CONSTRAINT npm_tags_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_tags_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_tags_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT npm_tags_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_tags_npm_package_fkey FOREIGN KEY (npm_package_id, namespace_id)
        REFERENCES npm_packages (id, namespace_id),
    CONSTRAINT npm_tags_npm_version_fkey FOREIGN KEY (npm_version_id, namespace_id)
        REFERENCES npm_versions (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_tags_package_name_key ON npm_tags (namespace_id, npm_package_id, name);
CREATE INDEX npm_tags_version_idx ON npm_tags (namespace_id, npm_version_id);
SELECT create_hash_partitions('npm_tags');

-- +goose Down
DROP TABLE IF EXISTS npm_tags;
DROP TABLE IF EXISTS npm_versions;
