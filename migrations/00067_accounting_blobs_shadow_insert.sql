-- +goose Up
-- A blob row's insert fired two triggers: a row-level one copying it into
-- blob_storage_blobs_by_namespace, and the statement-level accounting_blobs
-- adding its size to the namespace's stored bytes. Each ran a statement of
-- its own, twice per tag pushed (the config blob and the manifest's
-- payload), each paying an executor's start on a partitioned table.
--
-- accounting_blobs_insert does both in one statement: the copy is a
-- data-modifying CTE of the insert into counter_deltas, both reading the
-- transition table. Like every accounting statement trigger it is on the
-- parent and on each partition, so each inserted row is copied exactly
-- once, by the trigger of the table its statement named. Deletes keep
-- their row-level trigger: the GC deletes blob rows of many namespaces per
-- statement, and a delete joining the transition table with the
-- namespace-partitioned copy could not prune its partitions.
-- +goose StatementBegin
CREATE FUNCTION accounting_blobs_insert() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    WITH copied AS (
        INSERT INTO blob_storage_blobs_by_namespace (namespace_id, sha256, size)
        SELECT c.namespace_id, c.sha256, c.size FROM changed c
    )
    INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta)
    SELECT gen_uuidv7(), c.namespace_id, 1, c.namespace_id, 5, sum(c.size)
    FROM changed c
    WHERE EXISTS (SELECT 1 FROM namespaces n WHERE n.id = c.namespace_id)
    GROUP BY c.namespace_id
    HAVING sum(c.size) <> 0;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- The row-level copy is declared on the parent, and PostgreSQL clones it
-- onto each partition: dropping it from the parent drops the clones.
DROP TRIGGER trg_blob_storage_blobs_shadow_insert ON blob_storage_blobs;

-- +goose StatementBegin
DO $$
DECLARE
    rel regclass;
BEGIN
    FOR rel IN SELECT 'blob_storage_blobs'::regclass UNION ALL
               SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'blob_storage_blobs'::regclass LOOP
        EXECUTE format('DROP TRIGGER trg_accounting_blobs_insert ON %s', rel);
        EXECUTE format('CREATE TRIGGER trg_accounting_blobs_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS changed '
                       'FOR EACH STATEMENT EXECUTE FUNCTION accounting_blobs_insert()', rel);
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    rel regclass;
BEGIN
    FOR rel IN SELECT 'blob_storage_blobs'::regclass UNION ALL
               SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'blob_storage_blobs'::regclass LOOP
        EXECUTE format('DROP TRIGGER trg_accounting_blobs_insert ON %s', rel);
        EXECUTE format('CREATE TRIGGER trg_accounting_blobs_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS changed '
                       'FOR EACH STATEMENT EXECUTE FUNCTION accounting_blobs(%L)', rel, 'blob_storage_blobs');
    END LOOP;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER trg_blob_storage_blobs_shadow_insert
    AFTER INSERT ON blob_storage_blobs
    FOR EACH ROW EXECUTE FUNCTION blob_storage_blobs_shadow_insert();
DROP FUNCTION accounting_blobs_insert();
