-- +goose Up
-- Maven remote repositories and cached packages:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- maven_remote_repositories ---------------------------------------------------
-- Credentials: wrapped_dek, ns_key_id, ns_key_version, encrypted_username and
-- encrypted_password are one all-or-nothing unit (CHECK).
CREATE TABLE maven_remote_repositories (
    id                            uuid        NOT NULL,
    namespace_id                  uuid        NOT NULL,
    repository_id                 uuid        NOT NULL,
    url                           text        NOT NULL,
    wrapped_dek                   bytea       NULL,
    ns_key_id                     uuid        NULL,
    ns_key_version                integer     NULL,
    encrypted_username            bytea       NULL,
    encrypted_password            bytea       NULL,
    cache_validity_hours          smallint    NOT NULL DEFAULT 24,
    metadata_cache_validity_hours smallint    NOT NULL DEFAULT 24,
    last_health_status            smallint    NOT NULL DEFAULT 0, -- enum.HealthStatus
    last_health_checked_at        timestamptz NULL,
    CONSTRAINT maven_remote_repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_remote_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_remote_repositories_url_length CHECK (char_length(url) <= 1024),
    CONSTRAINT maven_remote_repositories_credentials_unit
        CHECK (num_nonnulls(wrapped_dek, ns_key_id, ns_key_version, encrypted_username, encrypted_password) IN (0, 5)),
    CONSTRAINT maven_remote_repositories_last_health_status_range CHECK (last_health_status IN (0, 1, 2)),
    CONSTRAINT maven_remote_repositories_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_remote_repositories_repository_fkey FOREIGN KEY (repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE CASCADE,
    CONSTRAINT maven_remote_repositories_ns_key_fkey FOREIGN KEY (ns_key_id, namespace_id)
        REFERENCES namespace_encryption_keys (id, namespace_id) ON DELETE RESTRICT
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX maven_remote_repositories_namespace_id_repository_id_key
    ON maven_remote_repositories (namespace_id, repository_id);
CREATE INDEX maven_remote_repositories_ns_key_idx ON maven_remote_repositories (namespace_id, ns_key_id);
SELECT create_hash_partitions('maven_remote_repositories');

-- maven_remote_packages -------------------------------------------------------
CREATE TABLE maven_remote_packages (
    id                         uuid        NOT NULL,
    namespace_id               uuid        NOT NULL,
    maven_remote_repository_id uuid        NOT NULL,
    group_id                   text        NOT NULL,
    artifact_id                text        NOT NULL,
    last_downloaded_at         timestamptz NULL, -- buffered
    soft_deleted_at            timestamptz NULL,
    CONSTRAINT maven_remote_packages_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_remote_packages_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_remote_packages_group_id_length CHECK (char_length(group_id) <= 255),
    CONSTRAINT maven_remote_packages_artifact_id_length CHECK (char_length(artifact_id) <= 255),
    CONSTRAINT maven_remote_packages_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_remote_packages_remote_repository_fkey FOREIGN KEY (maven_remote_repository_id, namespace_id)
        REFERENCES maven_remote_repositories (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX maven_remote_packages_active_coordinates_key
    ON maven_remote_packages (namespace_id, maven_remote_repository_id, group_id, artifact_id)
    WHERE soft_deleted_at IS NULL;
SELECT create_hash_partitions('maven_remote_packages');

-- +goose Down
DROP TABLE IF EXISTS maven_remote_packages;
DROP TABLE IF EXISTS maven_remote_repositories;
