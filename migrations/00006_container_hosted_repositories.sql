-- +goose Up
-- Container (OCI / Docker) tables (docs/schema.md):
-- hosted, remote (pull-through cache) and virtual repositories, plus the
-- repository-level lifecycle override pair.
--
-- Referential actions (docs/schema.md, "Referential actions"):
--   * format child -> repositories: ON DELETE CASCADE (structural child);
--   * artifact tables -> their format child, and everything below: NO ACTION
--     (user data refuses the repository delete; blob attachments are cleaned
--     up by the application in the same transaction, never by cascade);
--   * virtual upstream -> repositories(upstream): NO ACTION (sibling
--     reference: refuses deleting a repository still listed as an upstream);
--   * virtual upstream -> virtual repo, rule -> upstream: ON DELETE CASCADE.
-- Format rows reference their blob through (blob_storage_attachment_id,
-- namespace_id, blob_sha256) -> blob_storage_attachments and
-- (namespace_id, blob_sha256) -> blob_storage_blobs, so the pull path joins the
-- blob directly by (namespace_id, sha256) and prunes to one partition.

-- container_repositories ------------------------------------------------------
-- Each migration holds at most a few partitioned tables: creating or dropping
-- one parent with 64 children and their indexes takes hundreds to thousands of
-- locks in one transaction, and the default lock table (max_locks_per_transaction
-- 64) must hold every Up and Down.

-- container_repositories ------------------------------------------------------
CREATE TABLE container_repositories (
    id            uuid NOT NULL,
    namespace_id  uuid NOT NULL,
    repository_id uuid NOT NULL,
    CONSTRAINT container_repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_repositories_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_repositories_repository_fkey FOREIGN KEY (repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_repositories_namespace_id_repository_id_key
    ON container_repositories (namespace_id, repository_id);
SELECT create_hash_partitions('container_repositories');

-- container_images ------------------------------------------------------------
CREATE TABLE container_images (
    id                      uuid        NOT NULL,
    namespace_id            uuid        NOT NULL,
    container_repository_id uuid        NOT NULL,
    name                    text        NOT NULL,
    last_downloaded_at      timestamptz NULL, -- buffered
    soft_deleted_at         timestamptz NULL,
    CONSTRAINT container_images_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_images_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_images_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT container_images_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_images_container_repository_fkey FOREIGN KEY (container_repository_id, namespace_id)
        REFERENCES container_repositories (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_images_active_name_key
    ON container_images (namespace_id, container_repository_id, name) WHERE soft_deleted_at IS NULL;
CREATE INDEX container_images_last_downloaded_at_idx
    ON container_images (namespace_id, container_repository_id, last_downloaded_at NULLS FIRST) WHERE soft_deleted_at IS NULL;
CREATE INDEX container_images_trash_idx
    ON container_images (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
SELECT create_hash_partitions('container_images');

-- +goose Down
DROP TABLE IF EXISTS container_images;
DROP TABLE IF EXISTS container_repositories;
