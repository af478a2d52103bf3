-- +goose Up
-- Core tables (docs/schema.md): namespaces,
-- namespace_statistics, repository_collections, repositories and
-- repository_collection_repositories.
--
-- Conventions used in every migration of this directory:
--   * uuid ids are application-generated UUIDv7 (no server default); each one
--     carries CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7).
--   * "limit N" in the document is CHECK (char_length(col) <= N).
--   * every table with namespace_id is PARTITION BY HASH (namespace_id) into 64
--     children in schema partitions (create_hash_partitions, 00001), except
--     namespaces (defines namespace_id) and namespace_statistics (PK is exactly
--     namespace_id and nothing references it).
--   * smallint enums: the integer-to-label mapping lives in Go, package
--     store/enum; each CHECK range here matches it (migrations enum test).

-- namespaces ------------------------------------------------------------------
CREATE TABLE namespaces (
    id                     uuid        NOT NULL,
    slug                   text        NOT NULL,
    platform               text        NOT NULL,
    entity_type            text        NOT NULL,
    entity_id              text        NOT NULL,
    billing_entity_type    text        NOT NULL,
    billing_entity_id      text        NOT NULL,
    delivery_mode_override smallint    NULL,      -- enum.DeliveryMode: 0=redirect, 1=proxy; NULL inherits the instance default
    deleted_at             timestamptz NULL,      -- soft delete (docs/schema.md, "Status columns and serving")
    purged_at              timestamptz NULL,      -- hard delete, slug retired, anchor kept for audit (docs/schema.md, "Status columns and serving")
    blocked_at             timestamptz NULL,      -- security block (docs/schema.md, "Status columns and serving")
    disabled_at            timestamptz NULL,      -- organization turned the registry off
    suspended_at           timestamptz NULL,      -- billing suspension: read-only service
    created_at             timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT namespaces_pkey PRIMARY KEY (id),
    CONSTRAINT namespaces_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT namespaces_slug_length CHECK (char_length(slug) <= 255),
    CONSTRAINT namespaces_platform_length CHECK (char_length(platform) <= 255),
    CONSTRAINT namespaces_entity_type_length CHECK (char_length(entity_type) <= 255),
    CONSTRAINT namespaces_entity_id_length CHECK (char_length(entity_id) <= 255),
    CONSTRAINT namespaces_billing_entity_type_length CHECK (char_length(billing_entity_type) <= 255),
    CONSTRAINT namespaces_billing_entity_id_length CHECK (char_length(billing_entity_id) <= 255),
    CONSTRAINT namespaces_delivery_mode_override_range CHECK (delivery_mode_override IN (0, 1))
);

-- Look a namespace up by slug.
CREATE UNIQUE INDEX namespaces_slug_key ON namespaces (slug);
-- No two unpurged rows share an anchor; a purged organization can onboard again.
CREATE UNIQUE INDEX namespaces_anchor_unpurged_key
    ON namespaces (platform, entity_type, entity_id) WHERE purged_at IS NULL;

-- Slug immutability (docs/schema.md, "Slugs and anchors") enforced in the database so that every code path
-- (direct SQL, admin tools, migrations) is caught. For an emergency slug change:
--   ALTER TABLE namespaces DISABLE TRIGGER trg_namespaces_immutable_slug;
-- +goose StatementBegin
CREATE FUNCTION namespaces_immutable_slug() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'namespaces.slug is immutable (namespace %: % -> %)', OLD.id, OLD.slug, NEW.slug
        USING ERRCODE = 'check_violation',
              HINT = 'ALTER TABLE namespaces DISABLE TRIGGER trg_namespaces_immutable_slug for an emergency change';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER trg_namespaces_immutable_slug
    BEFORE UPDATE OF slug ON namespaces
    FOR EACH ROW
    WHEN (OLD.slug IS DISTINCT FROM NEW.slug)
    EXECUTE FUNCTION namespaces_immutable_slug();

-- namespace_statistics --------------------------------------------------------
-- One row per namespace, created by the AFTER INSERT trigger on namespaces and
-- seeded for namespaces that exist when the table is created. Not partitioned:
-- its primary key is exactly (namespace_id) and no foreign key references it
-- (second exception of the partitioning invariant). ON DELETE CASCADE because
-- the row is derived bookkeeping that the namespace itself made exist.
CREATE TABLE namespace_statistics (
    namespace_id            uuid        NOT NULL,
    deduplicated_size_bytes bigint      NOT NULL DEFAULT 0,       -- buffered counter
    components_count        bigint      NOT NULL DEFAULT 0,       -- buffered counter
    last_reconciled_at      timestamptz NOT NULL DEFAULT 'epoch', -- reconciliation bookkeeping
    CONSTRAINT namespace_statistics_pkey PRIMARY KEY (namespace_id),
    CONSTRAINT namespace_statistics_namespace_id_fkey FOREIGN KEY (namespace_id)
        REFERENCES namespaces (id) ON DELETE CASCADE
);
-- Staleness scan: least recently reconciled first, keyset-pageable.
CREATE INDEX namespace_statistics_last_reconciled_at_idx
    ON namespace_statistics (last_reconciled_at, namespace_id);

INSERT INTO namespace_statistics (namespace_id) SELECT id FROM namespaces;

-- +goose StatementBegin
CREATE FUNCTION namespaces_create_statistics() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO namespace_statistics (namespace_id) VALUES (NEW.id);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER trg_namespaces_create_statistics
    AFTER INSERT ON namespaces
    FOR EACH ROW
    EXECUTE FUNCTION namespaces_create_statistics();

-- repository_collections ------------------------------------------------------
-- Every namespace gets a 'default' collection at creation, inserted by the
-- application in the namespace-creating transaction (the id is a Go UUIDv7, so
-- no trigger can create it on PostgreSQL 15).
CREATE TABLE repository_collections (
    id           uuid        NOT NULL,
    namespace_id uuid        NOT NULL,
    name         text        NOT NULL,
    is_default   boolean     NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT repository_collections_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT repository_collections_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT repository_collections_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT repository_collections_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX repository_collections_namespace_id_name_key
    ON repository_collections (namespace_id, name);
-- At most one default collection per namespace.
CREATE UNIQUE INDEX repository_collections_one_default_key
    ON repository_collections (namespace_id) WHERE is_default IS TRUE;
SELECT create_hash_partitions('repository_collections');

-- repositories ----------------------------------------------------------------
CREATE TABLE repositories (
    id                             uuid        NOT NULL,
    namespace_id                   uuid        NOT NULL,
    name                           text        NOT NULL,
    description                    text        NULL,
    format                         smallint    NOT NULL, -- enum.Format: 0=docker, 1=maven, 2=npm, 3=oci
    kind                           smallint    NOT NULL, -- enum.Kind: 0=hosted, 1=virtual, 2=remote
    visibility                     smallint    NOT NULL, -- enum.Visibility: 0=public, 1=private, 2=internal
    artifacts_count                bigint      NOT NULL DEFAULT 0, -- buffered counter
    downloads_count                bigint      NOT NULL DEFAULT 0, -- buffered counter
    size_bytes                     bigint      NOT NULL DEFAULT 0, -- buffered counter
    last_updated_at                timestamptz NULL,
    last_reconciled_at             timestamptz NOT NULL DEFAULT 'epoch',
    gitlab_last_updated_by_user_id text        NULL,
    soft_deleted_at                timestamptz NULL,
    created_at                     timestamptz NOT NULL DEFAULT now(),
    gitlab_created_by_user_id      text        NULL,
    CONSTRAINT repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT repositories_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT repositories_description_length CHECK (char_length(description) <= 1024),
    CONSTRAINT repositories_format_range CHECK (format IN (0, 1, 2, 3)),
    CONSTRAINT repositories_kind_range CHECK (kind IN (0, 1, 2)),
    CONSTRAINT repositories_visibility_range CHECK (visibility IN (0, 1, 2)),
    CONSTRAINT repositories_gitlab_last_updated_by_user_id_length CHECK (char_length(gitlab_last_updated_by_user_id) <= 255),
    CONSTRAINT repositories_gitlab_created_by_user_id_length CHECK (char_length(gitlab_created_by_user_id) <= 255),
    CONSTRAINT repositories_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id)
) PARTITION BY HASH (namespace_id);
-- Name unique across active and soft-deleted rows (restore never collides).
CREATE UNIQUE INDEX repositories_namespace_id_name_key ON repositories (namespace_id, name);
CREATE INDEX repositories_active_name_idx ON repositories (namespace_id, name) WHERE soft_deleted_at IS NULL;
CREATE INDEX repositories_active_format_idx ON repositories (namespace_id, format) WHERE soft_deleted_at IS NULL;
CREATE INDEX repositories_active_kind_idx ON repositories (namespace_id, kind) WHERE soft_deleted_at IS NULL;
CREATE INDEX repositories_active_visibility_idx ON repositories (namespace_id, visibility) WHERE soft_deleted_at IS NULL;
-- Landing-page sorts, each with the id DESC keyset tie-breaker.
CREATE INDEX repositories_active_artifacts_count_idx
    ON repositories (namespace_id, artifacts_count DESC, id DESC) WHERE soft_deleted_at IS NULL;
CREATE INDEX repositories_active_downloads_count_idx
    ON repositories (namespace_id, downloads_count DESC, id DESC) WHERE soft_deleted_at IS NULL;
CREATE INDEX repositories_active_size_bytes_idx
    ON repositories (namespace_id, size_bytes DESC, id DESC) WHERE soft_deleted_at IS NULL;
CREATE INDEX repositories_active_recently_updated_idx
    ON repositories (namespace_id, COALESCE(last_updated_at, created_at) DESC, id DESC) WHERE soft_deleted_at IS NULL;
-- Format-filtered, name-sorted browse view.
CREATE INDEX repositories_active_format_name_idx
    ON repositories (namespace_id, format, name) WHERE soft_deleted_at IS NULL;
-- Trash listing.
CREATE INDEX repositories_trash_idx
    ON repositories (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;
SELECT create_hash_partitions('repositories');

-- repository_collection_repositories ------------------------------------------
-- The application keeps every repository linked to at least one collection.
-- Deleting a repository cascades to its links (structural child).
CREATE TABLE repository_collection_repositories (
    namespace_id             uuid        NOT NULL,
    repository_collection_id uuid        NOT NULL,
    repository_id            uuid        NOT NULL,
    created_at               timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT repository_collection_repositories_pkey
        PRIMARY KEY (namespace_id, repository_collection_id, repository_id),
    CONSTRAINT repository_collection_repositories_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT repository_collection_repositories_collection_fkey
        FOREIGN KEY (repository_collection_id, namespace_id) REFERENCES repository_collections (id, namespace_id),
    CONSTRAINT repository_collection_repositories_repository_fkey
        FOREIGN KEY (repository_id, namespace_id) REFERENCES repositories (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE INDEX repository_collection_repositories_repository_idx
    ON repository_collection_repositories (namespace_id, repository_id);
SELECT create_hash_partitions('repository_collection_repositories');

-- +goose Down
DROP TABLE IF EXISTS repository_collection_repositories;
DROP TABLE IF EXISTS repositories;
DROP TABLE IF EXISTS repository_collections;
DROP TRIGGER IF EXISTS trg_namespaces_create_statistics ON namespaces;
DROP FUNCTION IF EXISTS namespaces_create_statistics();
DROP TABLE IF EXISTS namespace_statistics;
DROP TABLE IF EXISTS namespaces;
DROP FUNCTION IF EXISTS namespaces_immutable_slug();
