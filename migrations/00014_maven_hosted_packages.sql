-- +goose Up
-- Maven hosted repositories and packages:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- maven_repositories ----------------------------------------------------------
CREATE TABLE maven_repositories (
    id            uuid NOT NULL,
    namespace_id  uuid NOT NULL,
    repository_id uuid NOT NULL,
    CONSTRAINT maven_repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_repositories_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_repositories_repository_fkey FOREIGN KEY (repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX maven_repositories_namespace_id_repository_id_key ON maven_repositories (namespace_id, repository_id);
SELECT create_hash_partitions('maven_repositories');

-- maven_packages --------------------------------------------------------------
-- A package (group_id:artifact_id). Package delete marks this row only, so it
-- has its own tombstone index (versions below keep soft_deleted_at NULL).
CREATE TABLE maven_packages (
    id                  uuid        NOT NULL,
    namespace_id        uuid        NOT NULL,
    maven_repository_id uuid        NOT NULL,
    group_id            text        NOT NULL,
    artifact_id         text        NOT NULL,
    last_downloaded_at  timestamptz NULL, -- buffered; NULL = never downloaded (oldest)
    soft_deleted_at     timestamptz NULL,
    CONSTRAINT maven_packages_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_packages_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_packages_group_id_length CHECK (char_length(group_id) <= 255),
    CONSTRAINT maven_packages_artifact_id_length CHECK (char_length(artifact_id) <= 255),
    CONSTRAINT maven_packages_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_packages_maven_repository_fkey FOREIGN KEY (maven_repository_id, namespace_id)
        REFERENCES maven_repositories (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX maven_packages_active_coordinates_key
    ON maven_packages (namespace_id, maven_repository_id, group_id, artifact_id) WHERE soft_deleted_at IS NULL;
CREATE INDEX maven_packages_last_downloaded_at_idx
    ON maven_packages (namespace_id, maven_repository_id, last_downloaded_at NULLS FIRST) WHERE soft_deleted_at IS NULL;
CREATE INDEX maven_packages_trash_idx
    ON maven_packages (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
SELECT create_hash_partitions('maven_packages');

-- +goose Down
DROP TABLE IF EXISTS maven_packages;
DROP TABLE IF EXISTS maven_repositories;
