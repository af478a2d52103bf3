-- +goose Up
-- The accounting triggers lock the row of each blob whose references they
-- count (the GC takes the same lock before it deletes a blob). The lock
-- named the partitioned blob_storage_blobs, which is partitioned by digest,
-- so PostgreSQL planned it again at every call to prune 64 partitions:
-- 0.14 ms of planning per blob linked, per manifest pushed and per npm
-- version published, and about 1 ms per call on a new connection.
--
-- The lock now runs on the digest's partition, through a function holding
-- one copy of the statement per partition as 00064 does for the lookups by
-- namespace; digest_partition picks the copy. It locks the same row the
-- same way and returns the same size (NULL when there is no row, which it
-- then confirms on the parent). The four triggers that lock blobs are
-- rewritten in place: the statement is replaced by a call, nothing else of
-- them changes, and the migration stops if a trigger does not hold the
-- statement exactly once. Only function bodies change: no table is locked.

-- digest_partition is the remainder (0 to 63) of a sha256 in the tables
-- partitioned by HASH (sha256). PostgreSQL hashes a bytea key with
-- hashvarlenaextended, which SQL cannot call; hash_array_extended of a
-- one-element array is that hash plus 31 (its result starts at 1 and is
-- multiplied by 31 before the element's hash is added). The partition
-- then adds 0x49a0f4dd15e5a8e3 as compute_partition_hash_value does
-- (namespace_partition in 00064), modulo 64: (h - 31 + 35) mod 64 is
-- (h + 4) mod 64, taken on the low six bits so that nothing overflows.
-- TestDigestPartition compares it with satisfies_hash_partition.
CREATE FUNCTION digest_partition(sha bytea) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (((hash_array_extended(ARRAY[sha], 8816678312871386365) & 63) + 4) & 63)::int $$;

-- +goose StatementBegin
DO $do$
DECLARE
    branches text;
BEGIN
    SELECT string_agg(format(E'\n    WHEN %s THEN\n        SELECT b.size INTO blob_size FROM partitions.blob_storage_blobs_p%s b\n        WHERE b.namespace_id = ns AND b.sha256 = sha\n        FOR NO KEY UPDATE;',
                             p, lpad(p::text, 2, '0')), '' ORDER BY p)
    INTO branches FROM generate_series(0, 63) p;
    -- VOLATILE: it locks, and reads with the caller's new snapshot. A miss
    -- asks the parent too, so a partition computed wrongly (a PostgreSQL
    -- whose hash differs) costs the old planning, not a blob left out of
    -- the accounting.
    EXECUTE format(E'CREATE FUNCTION accounting_lock_blob(ns uuid, sha bytea, OUT blob_size bigint) LANGUAGE plpgsql VOLATILE AS $body$\nBEGIN\n    CASE digest_partition(sha)%s\n    END CASE;\n    IF blob_size IS NULL THEN\n        SELECT b.size INTO blob_size FROM blob_storage_blobs b\n        WHERE b.namespace_id = ns AND b.sha256 = sha\n        FOR NO KEY UPDATE;\n    END IF;\nEND;\n$body$',
        branches);
END;
$do$;
-- +goose StatementEnd

-- accounting_rewrite_blob_lock redefines the four triggers that lock blobs
-- with from_text replaced by to_text, and stops unless each holds from_text
-- exactly once. Up replaces the lock statement by the call, Down the call
-- by the statement, then drops it.
-- +goose StatementBegin
CREATE FUNCTION accounting_rewrite_blob_lock(from_text text, to_text text) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    fn text;
    def text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['accounting_blob_refs', 'accounting_remote_blob_refs',
                              'accounting_maven_remote_files', 'accounting_npm_remote_sizes'] LOOP
        def := pg_get_functiondef(fn::regproc);
        IF (length(def) - length(replace(def, from_text, ''))) / length(from_text) <> 1 THEN
            RAISE EXCEPTION '%: % is not there exactly once', fn, from_text;
        END IF;
        EXECUTE replace(def, from_text, to_text);
    END LOOP;
END;
$$;
-- +goose StatementEnd

SELECT accounting_rewrite_blob_lock(
    E'SELECT b.size INTO sz FROM blob_storage_blobs b\n        WHERE b.namespace_id = ns[i] AND b.sha256 = shas[i]\n        FOR NO KEY UPDATE;',
    'sz := accounting_lock_blob(ns[i], shas[i]);');

-- +goose Down
SELECT accounting_rewrite_blob_lock(
    'sz := accounting_lock_blob(ns[i], shas[i]);',
    E'SELECT b.size INTO sz FROM blob_storage_blobs b\n        WHERE b.namespace_id = ns[i] AND b.sha256 = shas[i]\n        FOR NO KEY UPDATE;');
DROP FUNCTION accounting_rewrite_blob_lock(text, text);
DROP FUNCTION accounting_lock_blob(uuid, bytea);
DROP FUNCTION digest_partition(bytea);
