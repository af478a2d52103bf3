-- +goose Up
-- Buffered-counter delta table: not spelled out by the original schema design.

-- counter_deltas --------------------------------------------------------------
-- Buffer for the buffered columns (docs/schema.md, "Buffered
-- counters") and docs/architecture.md ("no UPDATE of
-- a hot row on the request path; a periodic job merges deltas"). The schema design names
-- Redis as an example store; this project makes PostgreSQL the only required
-- service, so the buffer is this append-only table.
--
-- The request path only INSERTs one row per event; a periodic River job
-- drains it per namespace in id (= time) order, e.g.
--   DELETE FROM counter_deltas WHERE namespace_id = $1 AND id IN (
--     SELECT id FROM counter_deltas WHERE namespace_id = $1
--     ORDER BY id LIMIT 1000 FOR UPDATE SKIP LOCKED)
--   RETURNING target, target_id, field, delta, observed_at
-- and applies sums (counters, delta) and max (timestamps, observed_at) to the
-- target rows in the same transaction, so no increment is lost or applied twice.
--
-- target/field are smallint enums (enum.CounterTarget / enum.CounterField);
-- counter_deltas_target_field_valid lists the buffered (table, column) pairs
-- and must match CounterTarget.Fields() in Go. Exactly one of delta (counters)
-- and observed_at (timestamps) is set, according to the field.
-- No FK to the target row (polymorphic, and the target may be deleted before
-- the merge: its deltas are then dropped). FK to namespaces ON DELETE CASCADE:
-- pending deltas are derived bookkeeping, like namespace_statistics.
-- For target = namespace_statistics, target_id is the namespace id.
CREATE TABLE counter_deltas (
    id           uuid        NOT NULL,
    namespace_id uuid        NOT NULL,
    target       smallint    NOT NULL,
    target_id    uuid        NOT NULL,
    field        smallint    NOT NULL,
    delta        bigint      NULL,
    observed_at  timestamptz NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT counter_deltas_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT counter_deltas_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT counter_deltas_target_range CHECK (target BETWEEN 0 AND 12),
    CONSTRAINT counter_deltas_field_range CHECK (field BETWEEN 0 AND 8),
    CONSTRAINT counter_deltas_target_field_valid CHECK (
        CASE target
            WHEN 0  THEN field IN (0, 1, 2)  -- repository: artifacts_count, downloads_count, size_bytes
            WHEN 1  THEN field IN (5, 6)     -- namespace_statistics: deduplicated_size_bytes, components_count
            WHEN 2  THEN field = 7           -- container_image: last_downloaded_at
            WHEN 3  THEN field = 7           -- container_remote_image: last_downloaded_at
            WHEN 4  THEN field = 7           -- maven_package: last_downloaded_at
            WHEN 5  THEN field IN (2, 7)     -- maven_version: size_bytes, last_downloaded_at
            WHEN 6  THEN field = 7           -- maven_remote_package: last_downloaded_at
            WHEN 7  THEN field IN (2, 7)     -- maven_remote_version: size_bytes, last_downloaded_at
            WHEN 8  THEN field IN (3, 4, 7)  -- npm_package: versions_count, tags_count, last_downloaded_at
            WHEN 9  THEN field IN (2, 7)     -- npm_version: size_bytes, last_downloaded_at
            WHEN 10 THEN field = 7           -- npm_remote_package: last_downloaded_at
            WHEN 11 THEN field IN (2, 7)     -- npm_remote_version: size_bytes, last_downloaded_at
            WHEN 12 THEN field = 8           -- access_token: last_used_at
            ELSE false
        END),
    CONSTRAINT counter_deltas_value_kind CHECK (
        CASE WHEN field IN (7, 8)
             THEN delta IS NULL AND observed_at IS NOT NULL
             ELSE delta IS NOT NULL AND observed_at IS NULL
        END),
    CONSTRAINT counter_deltas_namespace_statistics_target
        CHECK (target <> 1 OR target_id = namespace_id),
    CONSTRAINT counter_deltas_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
-- Drain one namespace oldest-first.
CREATE INDEX counter_deltas_drain_idx ON counter_deltas (namespace_id, id);
SELECT create_hash_partitions('counter_deltas');

-- +goose Down
DROP TABLE IF EXISTS counter_deltas;
