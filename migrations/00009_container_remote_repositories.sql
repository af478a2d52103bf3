-- +goose Up
-- Container remote repositories (pull-through cache) and cached images:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- container_remote_repositories -----------------------------------------------
-- Upstream registry. Credentials are ciphertext under a per-row DEK wrapped by
-- the namespace key: wrapped_dek, ns_key_id, ns_key_version and the ciphertext
-- columns form one all-or-nothing unit (CHECK). The plaintext limit (2048
-- characters) is enforced in Go; no octet_length CHECK on ciphertext.
CREATE TABLE container_remote_repositories (
    id                     uuid        NOT NULL,
    namespace_id           uuid        NOT NULL,
    repository_id          uuid        NOT NULL,
    url                    text        NOT NULL,
    auth_url               text        NULL,
    wrapped_dek            bytea       NULL,
    ns_key_id              uuid        NULL,
    ns_key_version         integer     NULL,
    encrypted_username     bytea       NULL,
    encrypted_password     bytea       NULL,
    cache_validity_hours   smallint    NOT NULL DEFAULT 24,
    last_health_status     smallint    NOT NULL DEFAULT 0, -- enum.HealthStatus: 0=unknown, 1=healthy, 2=unhealthy
    last_health_checked_at timestamptz NULL,
    CONSTRAINT container_remote_repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_remote_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_remote_repositories_url_length CHECK (char_length(url) <= 1024),
    CONSTRAINT container_remote_repositories_auth_url_length CHECK (char_length(auth_url) <= 1024),
    CONSTRAINT container_remote_repositories_credentials_unit
        CHECK (num_nonnulls(wrapped_dek, ns_key_id, ns_key_version, encrypted_username, encrypted_password) IN (0, 5)),
    CONSTRAINT container_remote_repositories_last_health_status_range CHECK (last_health_status IN (0, 1, 2)),
    CONSTRAINT container_remote_repositories_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_remote_repositories_repository_fkey FOREIGN KEY (repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE CASCADE,
    CONSTRAINT container_remote_repositories_ns_key_fkey FOREIGN KEY (ns_key_id, namespace_id)
        REFERENCES namespace_encryption_keys (id, namespace_id) ON DELETE RESTRICT
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_remote_repositories_namespace_id_repository_id_key
    ON container_remote_repositories (namespace_id, repository_id);
-- Supports the ns_key FK (key-row deletes check referrers without a scan).
CREATE INDEX container_remote_repositories_ns_key_idx ON container_remote_repositories (namespace_id, ns_key_id);
SELECT create_hash_partitions('container_remote_repositories');

-- container_remote_images -----------------------------------------------------
CREATE TABLE container_remote_images (
    id                             uuid        NOT NULL,
    namespace_id                   uuid        NOT NULL,
    container_remote_repository_id uuid        NOT NULL,
    name                           text        NOT NULL,
    last_downloaded_at             timestamptz NULL, -- buffered
    soft_deleted_at                timestamptz NULL,
    CONSTRAINT container_remote_images_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_remote_images_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_remote_images_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT container_remote_images_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_remote_images_remote_repository_fkey FOREIGN KEY (container_remote_repository_id, namespace_id)
        REFERENCES container_remote_repositories (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_remote_images_active_name_key
    ON container_remote_images (namespace_id, container_remote_repository_id, name) WHERE soft_deleted_at IS NULL;
SELECT create_hash_partitions('container_remote_images');

-- +goose Down
DROP TABLE IF EXISTS container_remote_images;
DROP TABLE IF EXISTS container_remote_repositories;
