-- +goose Up
-- npm hosted repositories and packages:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- npm_repositories ------------------------------------------------------------
CREATE TABLE npm_repositories (
    id            uuid NOT NULL,
    namespace_id  uuid NOT NULL,
    repository_id uuid NOT NULL,
    CONSTRAINT npm_repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_repositories_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_repositories_repository_fkey FOREIGN KEY (repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_repositories_namespace_id_repository_id_key ON npm_repositories (namespace_id, repository_id);
SELECT create_hash_partitions('npm_repositories');

-- npm_packages ----------------------------------------------------------------
-- name is the full package name including the scope (@myorg/pkg). The
-- versions_count / tags_count buffered counters enforce the per-package (docs/schema.md, "Lengths, names and limits")
-- limits (25,000 versions, 1,000 tags) and include soft-deleted versions.
CREATE TABLE npm_packages (
    id                 uuid        NOT NULL,
    namespace_id       uuid        NOT NULL,
    npm_repository_id  uuid        NOT NULL,
    name               text        NOT NULL,
    scope              text        NULL,
    versions_count     integer     NOT NULL DEFAULT 0, -- buffered counter
    tags_count         integer     NOT NULL DEFAULT 0, -- buffered counter
    last_downloaded_at timestamptz NULL,               -- buffered
    soft_deleted_at    timestamptz NULL,
    CONSTRAINT npm_packages_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_packages_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_packages_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT npm_packages_scope_length CHECK (char_length(scope) <= 255),
    CONSTRAINT npm_packages_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_packages_npm_repository_fkey FOREIGN KEY (npm_repository_id, namespace_id)
        REFERENCES npm_repositories (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_packages_active_name_key
    ON npm_packages (namespace_id, npm_repository_id, name) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_packages_last_downloaded_at_idx
    ON npm_packages (namespace_id, npm_repository_id, last_downloaded_at NULLS FIRST) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_packages_trash_idx
    ON npm_packages (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
-- Tombstones by publish coordinate: the pre-publish version-limit check sums
-- versions_count of tombstoned rows with the same name.
CREATE INDEX npm_packages_tombstone_name_idx
    ON npm_packages (namespace_id, npm_repository_id, name) WHERE soft_deleted_at IS NOT NULL;
SELECT create_hash_partitions('npm_packages');

-- +goose Down
DROP TABLE IF EXISTS npm_packages;
DROP TABLE IF EXISTS npm_repositories;
