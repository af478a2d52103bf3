-- +goose Up
-- Schema home for the 64 hash-partition children of every partitioned table
-- (docs/schema.md, "Partitioning"): parents live in public, children here.
CREATE SCHEMA IF NOT EXISTS partitions;

-- create_hash_partitions attaches n hash partitions to the partitioned parent
-- public.<parent>, named partitions.<parent>_p00 .. _p<n-1>. The partition key
-- (HASH(namespace_id) by default, HASH(sha256) for the blob layer) is declared
-- on the parent; every child inherits the parent's indexes, constraints and
-- foreign keys. docs/schema.md fixes n = 64 for every partitioned table, so every
-- migration calls this helper instead of writing 64 statements by hand.
-- +goose StatementBegin
CREATE FUNCTION public.create_hash_partitions(parent text, n integer DEFAULT 64)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    i integer;
BEGIN
    IF n < 1 OR n > 100 THEN
        RAISE EXCEPTION 'create_hash_partitions: n must be between 1 and 100, got %', n;
    END IF;
    FOR i IN 0 .. n - 1 LOOP
        EXECUTE format(
            'CREATE TABLE partitions.%I PARTITION OF public.%I FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
            parent || '_p' || lpad(i::text, 2, '0'), parent, n, i);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS public.create_hash_partitions(text, integer);
DROP SCHEMA IF EXISTS partitions CASCADE;
