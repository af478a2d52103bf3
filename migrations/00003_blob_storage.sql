-- +goose Up
-- Blob storage layer (docs/schema.md, "Blob tables and attachments",
-- "upload sessions", "storage usage"): blob_storage_blobs,
-- blob_storage_attachments, blob_storage_blobs_by_namespace (+ triggers) and
-- upload_sessions. This layer is never exposed through the API and holds the
-- most rows, so it keeps bigint sequence ids instead of UUIDv7.

-- blob_storage_blobs ----------------------------------------------------------
-- One row per stored object per namespace (deduplication scope). Partitioned
-- HASH(sha256) x 64 so that single-tenant deployments still spread evenly; all
-- hot paths (pull, orphan check, dedup upsert, attachment CRUD) name the digest
-- and prune to one partition.
-- No foreign key to namespaces, by design: the row owns object_storage_key, the
-- only handle to the stored object, and GC (docs/garbage-collection.md) deletes the object before
-- the row. A cascade would destroy the handle while the object exists (leak);
-- a blocking reference would hold namespace deletion hostage to GC. The row
-- outlives a namespace hard delete until GC reclaims it.
-- created_at starts the compile-time 24 h GC grace window (docs/garbage-collection.md).
CREATE SEQUENCE blob_storage_blobs_id_seq AS bigint;
CREATE TABLE blob_storage_blobs (
    id                 bigint      NOT NULL DEFAULT nextval('blob_storage_blobs_id_seq'),
    namespace_id       uuid        NOT NULL,
    sha256             bytea       NOT NULL,
    object_storage_key text        NOT NULL,
    size               bigint      NOT NULL,
    metadata_sha1      bytea       NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT blob_storage_blobs_pkey PRIMARY KEY (id, namespace_id, sha256),
    -- Deduplication, lookup by content hash, and target of every FK to blobs.
    CONSTRAINT blob_storage_blobs_namespace_id_sha256_key UNIQUE (namespace_id, sha256),
    CONSTRAINT blob_storage_blobs_sha256_length CHECK (octet_length(sha256) = 32),
    CONSTRAINT blob_storage_blobs_object_storage_key_length CHECK (char_length(object_storage_key) <= 1024),
    CONSTRAINT blob_storage_blobs_metadata_sha1_length CHECK (octet_length(metadata_sha1) = 20)
) PARTITION BY HASH (sha256);
ALTER SEQUENCE blob_storage_blobs_id_seq OWNED BY blob_storage_blobs.id;
-- Storage accounting option A: index-only SUM(size) per namespace (64 partitions).
CREATE INDEX blob_storage_blobs_namespace_id_size_idx ON blob_storage_blobs (namespace_id) INCLUDE (size);
SELECT create_hash_partitions('blob_storage_blobs');

-- blob_storage_attachments ----------------------------------------------------
-- One row per use of a blob (the reference count of docs/garbage-collection.md). Clients create
-- and delete it in the same transaction as the row that uses the blob; no
-- ON DELETE CASCADE anywhere, cleanup is application-managed.
CREATE SEQUENCE blob_storage_attachments_id_seq AS bigint;
CREATE TABLE blob_storage_attachments (
    id           bigint      NOT NULL DEFAULT nextval('blob_storage_attachments_id_seq'),
    namespace_id uuid        NOT NULL,
    sha256       bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT blob_storage_attachments_pkey PRIMARY KEY (id, namespace_id, sha256),
    CONSTRAINT blob_storage_attachments_sha256_length CHECK (octet_length(sha256) = 32),
    CONSTRAINT blob_storage_attachments_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT blob_storage_attachments_blob_fkey
        FOREIGN KEY (namespace_id, sha256) REFERENCES blob_storage_blobs (namespace_id, sha256)
) PARTITION BY HASH (sha256);
ALTER SEQUENCE blob_storage_attachments_id_seq OWNED BY blob_storage_attachments.id;
-- Orphan check / attachment count of one blob.
CREATE INDEX blob_storage_attachments_namespace_id_sha256_idx ON blob_storage_attachments (namespace_id, sha256);
SELECT create_hash_partitions('blob_storage_attachments');

-- blob_storage_blobs_by_namespace ---------------------------------------------
-- Storage accounting option B: a HASH(namespace_id) shadow of
-- (namespace_id, sha256, size) maintained by triggers on blob_storage_blobs, so
-- namespace- and repository-level reconciliation read one partition.
-- ON DELETE CASCADE: derived copy, not user data (like namespace_statistics).
-- No AFTER UPDATE trigger: blob rows are immutable by convention (a content
-- change is a new sha256, i.e. a new row).
CREATE TABLE blob_storage_blobs_by_namespace (
    namespace_id uuid   NOT NULL,
    sha256       bytea  NOT NULL,
    size         bigint NOT NULL,
    CONSTRAINT blob_storage_blobs_by_namespace_pkey PRIMARY KEY (namespace_id, sha256) INCLUDE (size),
    CONSTRAINT blob_storage_blobs_by_namespace_sha256_length CHECK (octet_length(sha256) = 32),
    CONSTRAINT blob_storage_blobs_by_namespace_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE INDEX blob_storage_blobs_by_namespace_namespace_id_size_idx
    ON blob_storage_blobs_by_namespace (namespace_id) INCLUDE (size);
SELECT create_hash_partitions('blob_storage_blobs_by_namespace');

-- +goose StatementBegin
CREATE FUNCTION blob_storage_blobs_shadow_insert() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO blob_storage_blobs_by_namespace (namespace_id, sha256, size)
    VALUES (NEW.namespace_id, NEW.sha256, NEW.size);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION blob_storage_blobs_shadow_delete() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    DELETE FROM blob_storage_blobs_by_namespace
    WHERE namespace_id = OLD.namespace_id AND sha256 = OLD.sha256;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_blob_storage_blobs_shadow_insert
    AFTER INSERT ON blob_storage_blobs
    FOR EACH ROW EXECUTE FUNCTION blob_storage_blobs_shadow_insert();
CREATE TRIGGER trg_blob_storage_blobs_shadow_delete
    AFTER DELETE ON blob_storage_blobs
    FOR EACH ROW EXECUTE FUNCTION blob_storage_blobs_shadow_delete();

-- upload_sessions -------------------------------------------------------------
-- One row per in-flight upload (binary-existence model). Deleted in the
-- transaction that inserts the blob row; expired rows are purged with their
-- temporary object uploads/{upload_id}.
-- FK (repository_id, namespace_id) -> repositories has NO ACTION: docs/schema.md
-- states that the ERD's unspecified action is NO ACTION and that this key then
-- refuses the repository delete. That is also the safe choice: a cascade would
-- drop the only record of the temporary object in storage (leak); the
-- repository delete path purges the sessions (object first, then row) through
-- the (namespace_id, repository_id) index before it deletes the repository.
CREATE SEQUENCE upload_sessions_id_seq AS bigint;
CREATE TABLE upload_sessions (
    id            bigint      NOT NULL DEFAULT nextval('upload_sessions_id_seq'),
    namespace_id  uuid        NOT NULL,
    repository_id uuid        NOT NULL,
    upload_id     uuid        NOT NULL,  -- storage-level id: uploads/{upload_id}
    size_bytes    bigint      NOT NULL DEFAULT 0,      -- bytes uploaded so far; CAS token
    hash_state    bytea       NULL,                    -- serialized intermediate SHA-256 state
    dirty         boolean     NOT NULL DEFAULT false,  -- concurrent-writer poison bit
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT upload_sessions_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT upload_sessions_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT upload_sessions_repository_fkey
        FOREIGN KEY (repository_id, namespace_id) REFERENCES repositories (id, namespace_id)
) PARTITION BY HASH (namespace_id);
ALTER SEQUENCE upload_sessions_id_seq OWNED BY upload_sessions.id;
CREATE UNIQUE INDEX upload_sessions_namespace_id_upload_id_key ON upload_sessions (namespace_id, upload_id);
CREATE INDEX upload_sessions_expires_at_idx ON upload_sessions (expires_at);
CREATE INDEX upload_sessions_repository_idx ON upload_sessions (namespace_id, repository_id);
SELECT create_hash_partitions('upload_sessions');

-- +goose Down
DROP TABLE IF EXISTS upload_sessions;
DROP TRIGGER IF EXISTS trg_blob_storage_blobs_shadow_delete ON blob_storage_blobs;
DROP TRIGGER IF EXISTS trg_blob_storage_blobs_shadow_insert ON blob_storage_blobs;
DROP FUNCTION IF EXISTS blob_storage_blobs_shadow_delete();
DROP FUNCTION IF EXISTS blob_storage_blobs_shadow_insert();
DROP TABLE IF EXISTS blob_storage_blobs_by_namespace;
DROP TABLE IF EXISTS blob_storage_attachments;
DROP TABLE IF EXISTS blob_storage_blobs;
