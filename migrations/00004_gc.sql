-- +goose Up
-- Garbage-collection state required by the GC design (docs/garbage-collection.md)
-- and not spelled out by the schema design ("auxiliary tables for blob storage cleanup
-- are not described here").

-- gc_blob_review_queue --------------------------------------------------------
-- The review queue of docs/garbage-collection.md: a dedicated candidate table, not River's job
-- table, because the candidate must outlive the attempts that process it (a
-- River job row is deleted after its retention, including after discard).
--
-- One row per (namespace_id, sha256) per garbage episode: recorded when the
-- last attachment of a blob goes (under the blob-row lock, same transaction),
-- deleted when the blob is attached again (same transaction), deleted by
-- gc:cleanup after the object and blob row are gone, or discarded by the
-- dequeue re-check.
--   review_after   due time (record time + review delay, default 24 h); the
--                  sweep reads due candidates oldest first.
--   attempts       cleanup attempts so far (bounded retries).
--   strikes        candidate-specific failures; only counted while the sweep is
--                  not paused, so a broken backend does not exclude the queue.
--   backoff_until  GC-owned backoff schedule, growing with strikes; it lives
--                  here so it outlives the River job attempt that set it.
--   excluded_at    set when strikes reach the limit: the row stays for the
--                  operator but leaves the dequeue index and drain signals.
--   last_error     last failure, for the operator.
--
-- Partitioned like the blob tables, HASH(sha256) x 64: every record, clear and
-- cleanup names the digest and prunes to the partition holding the blob.
--
-- No foreign key to blob_storage_blobs (nor to namespaces), on purpose:
--   * crash recovery: the candidate is committed by an earlier transaction and
--     must survive a rollback of gc:cleanup that restores the blob row after
--     the object was already deleted; a live candidate is the marker that the
--     blob row may not describe an existing object (dedup skips re-check
--     storage under the lock).
--   * the candidate may outlive the blob row (deleted by cleanup just before
--     the candidate) and the namespace (blob rows outlive a namespace hard
--     delete until GC reclaims them, so their candidates must too).
CREATE TABLE gc_blob_review_queue (
    namespace_id  uuid        NOT NULL,
    sha256        bytea       NOT NULL,
    review_after  timestamptz NOT NULL,
    attempts      integer     NOT NULL DEFAULT 0,
    strikes       integer     NOT NULL DEFAULT 0,
    backoff_until timestamptz NULL,
    excluded_at   timestamptz NULL,
    last_error    text        NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT gc_blob_review_queue_pkey PRIMARY KEY (namespace_id, sha256),
    CONSTRAINT gc_blob_review_queue_sha256_length CHECK (octet_length(sha256) = 32),
    CONSTRAINT gc_blob_review_queue_attempts_nonnegative CHECK (attempts >= 0),
    CONSTRAINT gc_blob_review_queue_strikes_nonnegative CHECK (strikes >= 0)
) PARTITION BY HASH (sha256);
-- Dequeue oldest-due-first; excluded candidates are left out of the index.
CREATE INDEX gc_blob_review_queue_due_idx ON gc_blob_review_queue (review_after) WHERE excluded_at IS NULL;
SELECT create_hash_partitions('gc_blob_review_queue');

-- gc_sweep_state --------------------------------------------------------------
-- Sweep-pause state shared by all GC workers (docs/garbage-collection.md, "Failure isolation"):
-- when storage deletes fail broadly (environmental failure), the sweep pauses
-- for a bounded time and resumes by itself. Stored in the database because it
-- coordinates workers across replicas; it is not an operator setting (the
-- operator kill switch is a feature flag). A single row, no namespace_id, so
-- not partitioned; the boolean primary key with CHECK (singleton) keeps it at
-- exactly one row, seeded here.
CREATE TABLE gc_sweep_state (
    singleton    boolean     NOT NULL DEFAULT true,
    paused_until timestamptz NULL,
    pause_reason text        NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT gc_sweep_state_pkey PRIMARY KEY (singleton),
    CONSTRAINT gc_sweep_state_one_row CHECK (singleton),
    CONSTRAINT gc_sweep_state_pause_reason_length CHECK (char_length(pause_reason) <= 1024)
);
INSERT INTO gc_sweep_state (singleton) VALUES (true);

-- +goose Down
DROP TABLE IF EXISTS gc_sweep_state;
DROP TABLE IF EXISTS gc_blob_review_queue;
