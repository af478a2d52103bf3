-- +goose Up
-- PostgreSQL prepares a table's CHECK constraints again for every INSERT
-- statement: it reads each stored expression back and simplifies it before
-- the first row is checked. counter_deltas takes an INSERT from every
-- accounting trigger (each blob, link, manifest, version and file written
-- or deleted, and each GC reclaim), and its two CASE constraints, sixteen
-- branches of IN lists, cost about 0.07 ms of every such statement: more
-- than half of the insert. The same rules, written as a bit set per target
-- and one comparison, cost about a quarter of that.
--
-- target_field_valid: bit f of the target's mask says field f is buffered
-- for that table (store/enum CounterTarget.Fields; the catalog test holds
-- the two equal):
--    0 repository               519 = fields 0, 1, 2, 9
--    1 namespace_statistics      96 = 5, 6
--    2 container_image          128 = 7
--    3 container_remote_image   128 = 7
--    4 maven_package            128 = 7
--    5 maven_version            132 = 2, 7
--    6 maven_remote_package     128 = 7
--    7 maven_remote_version     132 = 2, 7
--    8 npm_package              152 = 3, 4, 7
--    9 npm_version              132 = 2, 7
--   10 npm_remote_package       128 = 7
--   11 npm_remote_version       132 = 2, 7
--   12 access_token             256 = 8
--   13-15 the remote repositories  3072 = 10, 11
-- The bounds are repeated so that the shift never sees a count out of
-- range, whatever the other constraints say.
--
-- value_kind: fields 7 to 9 are timestamps (observed_at), the others
-- counters (delta); exactly one of the two is set.
ALTER TABLE counter_deltas
    DROP CONSTRAINT counter_deltas_target_field_valid,
    ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
        target BETWEEN 0 AND 15 AND field BETWEEN 0 AND 11
        AND ((('{519,96,128,128,128,132,128,132,152,132,128,132,256,3072,3072,3072}'::integer[])[target + 1] >> field) & 1) = 1),
    DROP CONSTRAINT counter_deltas_value_kind,
    ADD CONSTRAINT counter_deltas_value_kind CHECK (
        (delta IS NULL) = (field BETWEEN 7 AND 9) AND (observed_at IS NULL) <> (field BETWEEN 7 AND 9));

-- +goose Down
ALTER TABLE counter_deltas
    DROP CONSTRAINT counter_deltas_target_field_valid,
    ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
        CASE target
            WHEN 0  THEN field IN (0, 1, 2, 9)
            WHEN 1  THEN field IN (5, 6)
            WHEN 2  THEN field = 7
            WHEN 3  THEN field = 7
            WHEN 4  THEN field = 7
            WHEN 5  THEN field IN (2, 7)
            WHEN 6  THEN field = 7
            WHEN 7  THEN field IN (2, 7)
            WHEN 8  THEN field IN (3, 4, 7)
            WHEN 9  THEN field IN (2, 7)
            WHEN 10 THEN field = 7
            WHEN 11 THEN field IN (2, 7)
            WHEN 12 THEN field = 8
            WHEN 13 THEN field IN (10, 11)
            WHEN 14 THEN field IN (10, 11)
            WHEN 15 THEN field IN (10, 11)
            ELSE false
        END),
    DROP CONSTRAINT counter_deltas_value_kind,
    ADD CONSTRAINT counter_deltas_value_kind CHECK (
        CASE WHEN field IN (7, 8, 9)
             THEN delta IS NULL AND observed_at IS NOT NULL
             ELSE delta IS NOT NULL AND observed_at IS NULL
        END);
