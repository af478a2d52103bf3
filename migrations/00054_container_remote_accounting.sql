-- +goose Up
-- Storage accounting of the container pull-through cache (docs/schema.md,
-- "Storage accounting"), by the same rules as 00041 for hosted content:
--
--   container_remote_manifests   namespace_statistics.components_count +/- 1,
--                                repositories.artifacts_count +/- 1 and
--                                last_updated_at of the remote repository.
--   container_remote_blobs,      repositories.size_bytes + size when a digest
--   container_remote_manifests   is first referenced in the remote repository,
--                                - size when its last reference there goes.
--
-- The bytes themselves are blob_storage_blobs rows like any other, so the
-- namespace's deduplicated_size_bytes already counts them (00041's
-- accounting_blobs), once per namespace whether hosted, cached or both.
-- Separate functions rather than new branches of 00041's: the Down
-- migration then drops them without restoring the older bodies. The
-- shared helper accounting_repository_deltas is reused.

-- accounting_remote_artifacts: container_remote_manifests AFTER INSERT /
-- AFTER DELETE.
-- +goose StatementBegin
CREATE FUNCTION accounting_remote_artifacts() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    sign bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    ns uuid[];
    repos uuid[];
    n bigint[];
BEGIN
    INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta)
    SELECT gen_uuidv7(), c.namespace_id, 1, c.namespace_id, 6, sign * count(*)
    FROM changed c
    WHERE EXISTS (SELECT 1 FROM namespaces n WHERE n.id = c.namespace_id)
    GROUP BY c.namespace_id;

    SELECT array_agg(x.namespace_id), array_agg(x.repository_id), array_agg(sign * x.n)
    INTO ns, repos, n
    FROM (SELECT r.namespace_id, r.repository_id, count(*) AS n
          FROM changed c
          JOIN container_remote_images i ON i.namespace_id = c.namespace_id AND i.id = c.container_remote_image_id
          JOIN container_remote_repositories r ON r.namespace_id = i.namespace_id AND r.id = i.container_remote_repository_id
          GROUP BY 1, 2) x;
    IF ns IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ns, repos, n, array_fill(0::bigint, ARRAY[cardinality(ns)]), true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- accounting_remote_blob_refs: container_remote_blobs and
-- container_remote_manifests AFTER INSERT / AFTER DELETE; the repository's
-- size_bytes, deduplicated within the remote repository, with 00041's
-- locking rule (blob row FOR NO KEY UPDATE in (namespace, digest) order,
-- then the count in a new READ COMMITTED statement).
-- +goose StatementBegin
CREATE FUNCTION accounting_remote_blob_refs() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ins boolean := TG_OP = 'INSERT';
    ns uuid[];
    repos uuid[];
    frepos uuid[];
    shas bytea[];
    ks bigint[];
    sz bigint;
    refs bigint;
    d_ns uuid[] := '{}';
    d_repos uuid[] := '{}';
    d_sizes bigint[] := '{}';
BEGIN
    SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
           array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
           array_agg(x.k ORDER BY x.namespace_id, x.sha)
    INTO ns, repos, frepos, shas, ks
    FROM (SELECT r.namespace_id, r.repository_id, r.id AS frepo, c.blob_sha256 AS sha, count(*) AS k
          FROM changed c
          JOIN container_remote_images i ON i.namespace_id = c.namespace_id AND i.id = c.container_remote_image_id
          JOIN container_remote_repositories r ON r.namespace_id = i.namespace_id AND r.id = i.container_remote_repository_id
          GROUP BY 1, 2, 3, 4) x;
    IF ns IS NULL THEN
        RETURN NULL;
    END IF;

    FOR i IN 1 .. cardinality(ns) LOOP
        SELECT b.size INTO sz FROM blob_storage_blobs b
        WHERE b.namespace_id = ns[i] AND b.sha256 = shas[i]
        FOR NO KEY UPDATE;
        IF sz IS NULL THEN
            CONTINUE;
        END IF;
        refs := accounting_remote_repository_refs(ns[i], frepos[i], shas[i]);
        IF (ins AND refs = ks[i]) OR (NOT ins AND refs = 0) THEN
            d_ns := d_ns || ns[i];
            d_repos := d_repos || repos[i];
            d_sizes := d_sizes || CASE WHEN ins THEN sz ELSE -sz END;
        END IF;
    END LOOP;
    IF cardinality(d_ns) > 0 THEN
        PERFORM accounting_repository_deltas(d_ns, d_repos,
            array_fill(0::bigint, ARRAY[cardinality(d_ns)]), d_sizes, false);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- accounting_remote_repository_refs counts the references to a digest in
-- one remote repository (by its container_remote_repositories row), over
-- both cached tables, through their (namespace_id, blob_sha256) indexes.
-- VOLATILE: it reads with the caller's new snapshot, after the blob lock.
-- +goose StatementBegin
CREATE FUNCTION accounting_remote_repository_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE sql VOLATILE
AS $$
SELECT (SELECT count(*) FROM container_remote_blobs b
        JOIN container_remote_images i ON i.namespace_id = b.namespace_id AND i.id = b.container_remote_image_id
        WHERE b.namespace_id = ns AND b.blob_sha256 = sha AND i.container_remote_repository_id = frepo)
     + (SELECT count(*) FROM container_remote_manifests m
        JOIN container_remote_images i ON i.namespace_id = m.namespace_id AND i.id = m.container_remote_image_id
        WHERE m.namespace_id = ns AND m.blob_sha256 = sha AND i.container_remote_repository_id = frepo)
$$;
-- +goose StatementEnd

-- The triggers, on the parents and on every partition (a statement fires
-- the statement triggers of the table it names only; see 00041).
-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES
        ('container_remote_manifests', 'accounting_remote_artifacts', 'trg_accounting_remote_artifacts'),
        ('container_remote_blobs', 'accounting_remote_blob_refs', 'trg_accounting_remote_blob_refs'),
        ('container_remote_manifests', 'accounting_remote_blob_refs', 'trg_accounting_remote_blob_refs')
    ) AS v(tbl, fn, name) LOOP
        FOR rel IN SELECT t.tbl::regclass UNION ALL
                   SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = t.tbl::regclass LOOP
            EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS changed '
                           'FOR EACH STATEMENT EXECUTE FUNCTION %I()', t.name || '_insert', rel, t.fn);
            EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS changed '
                           'FOR EACH STATEMENT EXECUTE FUNCTION %I()', t.name || '_delete', rel, t.fn);
        END LOOP;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- Cached rows written before these triggers (none through the API, which
-- refused remote repositories until now) were not counted: their
-- namespaces go to the front of the reconciliation queue.
UPDATE namespace_statistics SET last_reconciled_at = 'epoch'
WHERE namespace_id IN (SELECT DISTINCT namespace_id FROM container_remote_repositories);

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES
        ('container_remote_manifests', 'trg_accounting_remote_artifacts'),
        ('container_remote_blobs', 'trg_accounting_remote_blob_refs'),
        ('container_remote_manifests', 'trg_accounting_remote_blob_refs')
    ) AS v(tbl, name) LOOP
        FOR rel IN SELECT t.tbl::regclass UNION ALL
                   SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = t.tbl::regclass LOOP
            EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', t.name || '_insert', rel);
            EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s', t.name || '_delete', rel);
        END LOOP;
    END LOOP;
END;
$$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS accounting_remote_repository_refs(uuid, uuid, bytea);
DROP FUNCTION IF EXISTS accounting_remote_blob_refs();
DROP FUNCTION IF EXISTS accounting_remote_artifacts();
