-- +goose Up
-- Storage accounting by triggers (docs/schema.md, "Storage accounting").
-- Every insert and hard delete of a counted row records its counter_deltas
-- in the writing transaction, whatever path writes it (a protocol, a purge,
-- an import), so no path can forget a counter or count one twice; the
-- counters:fold job merges the deltas and counters:reconcile corrects drift.
--
--   blob_storage_blobs       namespace_statistics.deduplicated_size_bytes
--                            +/- size (each blob once per namespace).
--   container_manifests,     namespace_statistics.components_count +/- 1,
--   npm_versions,            repositories.artifacts_count +/- 1 and
--   maven_versions           repositories.last_updated_at (soft-deleted
--                            rows count until hard-deleted).
--   container_blobs,         repositories.size_bytes + size when a digest is
--   container_manifests,     first referenced in the repository, - size when
--   npm_files,               its last reference there goes (deduplicated in
--   npm_metadata_files,      the repository, soft-deleted rows included).
--   maven_files
--
-- The triggers are statement-level with transition tables: one delta row
-- per namespace or repository and statement, however many rows it writes.
-- The repository of a row is found through its parent rows (image or
-- package, then the format's repository row); a row whose parent is
-- already gone (a repository being purged) records no repository delta,
-- which the fold would drop anyway.

-- gen_uuidv7 --------------------------------------------------------------------
-- counter_deltas ids are UUIDv7 (CHECK counter_deltas_id_uuidv7) and
-- PostgreSQL 15 has no uuidv7(): the RFC 9562 layout built from a random
-- UUIDv4 (whose variant bits it keeps) with the first 48 bits replaced by
-- the Unix time in milliseconds and the version nibble set from 4 to 7.
-- +goose StatementBegin
CREATE FUNCTION gen_uuidv7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
SELECT encode(
    set_bit(set_bit(
        overlay(uuid_send(gen_random_uuid())
                PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
                FROM 1 FOR 6),
        52, 1), 53, 1),
    'hex')::uuid
$$;
-- +goose StatementEnd

-- counter_deltas: repositories.last_updated_at becomes a buffered
-- timestamp (field 9, enum.CounterFieldLastUpdatedAt), the time of the
-- last content change (push, publish, deploy, delete, restore, purge;
-- downloads are not changes).
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_field_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_field_range CHECK (field BETWEEN 0 AND 9);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_field_valid;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
    CASE target
        WHEN 0  THEN field IN (0, 1, 2, 9) -- repository: artifacts_count, downloads_count, size_bytes, last_updated_at
        WHEN 1  THEN field IN (5, 6)       -- namespace_statistics: deduplicated_size_bytes, components_count
        WHEN 2  THEN field = 7             -- container_image: last_downloaded_at
        WHEN 3  THEN field = 7             -- container_remote_image: last_downloaded_at
        WHEN 4  THEN field = 7             -- maven_package: last_downloaded_at
        WHEN 5  THEN field IN (2, 7)       -- maven_version: size_bytes, last_downloaded_at
        WHEN 6  THEN field = 7             -- maven_remote_package: last_downloaded_at
        WHEN 7  THEN field IN (2, 7)       -- maven_remote_version: size_bytes, last_downloaded_at
        WHEN 8  THEN field IN (3, 4, 7)    -- npm_package: versions_count, tags_count, last_downloaded_at
        WHEN 9  THEN field IN (2, 7)       -- npm_version: size_bytes, last_downloaded_at
        WHEN 10 THEN field = 7             -- npm_remote_package: last_downloaded_at
        WHEN 11 THEN field IN (2, 7)       -- npm_remote_version: size_bytes, last_downloaded_at
        WHEN 12 THEN field = 8             -- access_token: last_used_at
        ELSE false
    END);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_value_kind;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_value_kind CHECK (
    CASE WHEN field IN (7, 8, 9)
         THEN delta IS NULL AND observed_at IS NOT NULL
         ELSE delta IS NOT NULL AND observed_at IS NULL
    END);

-- accounting_repository_deltas ---------------------------------------------------
-- Records, for each repository of the arrays, its artifacts_count and
-- size_bytes deltas (zeros skipped) and, when touch, now() as its
-- last_updated_at.
-- +goose StatementBegin
CREATE FUNCTION accounting_repository_deltas(ns uuid[], repos uuid[], artifacts bigint[], sizes bigint[], touch boolean)
RETURNS void
LANGUAGE sql VOLATILE
AS $$
INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta, observed_at)
SELECT gen_uuidv7(), u.ns, 0, u.repo, x.field, x.delta, x.observed_at
FROM unnest(ns, repos, artifacts, sizes) AS u(ns, repo, artifacts, sizes)
CROSS JOIN LATERAL (VALUES
    (0::smallint, u.artifacts, NULL::timestamptz),
    (2::smallint, u.sizes, NULL::timestamptz),
    (9::smallint, NULL::bigint, CASE WHEN touch THEN now() END)
) AS x(field, delta, observed_at)
WHERE x.delta <> 0 OR x.observed_at IS NOT NULL
$$;
-- +goose StatementEnd

-- accounting_blobs ----------------------------------------------------------------
-- blob_storage_blobs AFTER INSERT / AFTER DELETE: the namespace's
-- deduplicated_size_bytes follows the blob rows (a blob row is unique per
-- namespace and digest, and immutable).
-- +goose StatementBegin
CREATE FUNCTION accounting_blobs() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    sign bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta)
    SELECT gen_uuidv7(), c.namespace_id, 1, c.namespace_id, 5, sign * sum(c.size)
    FROM changed c
    WHERE EXISTS (SELECT 1 FROM namespaces n WHERE n.id = c.namespace_id)
    GROUP BY c.namespace_id
    HAVING sum(c.size) <> 0;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd


-- accounting_artifacts --------------------------------------------------------------
-- container_manifests, npm_versions, maven_versions AFTER INSERT / AFTER
-- DELETE: components_count of the namespace, artifacts_count and
-- last_updated_at of the repository. Soft delete and restore (UPDATEs)
-- leave the counts alone: a soft-deleted row counts until hard-deleted.
-- +goose StatementBegin
CREATE FUNCTION accounting_artifacts() RETURNS trigger
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

    IF TG_ARGV[0] = 'container_manifests' THEN
        SELECT array_agg(x.namespace_id), array_agg(x.repository_id), array_agg(sign * x.n)
        INTO ns, repos, n
        FROM (SELECT r.namespace_id, r.repository_id, count(*) AS n
              FROM changed c
              JOIN container_images i ON i.namespace_id = c.namespace_id AND i.id = c.container_image_id
              JOIN container_repositories r ON r.namespace_id = i.namespace_id AND r.id = i.container_repository_id
              GROUP BY 1, 2) x;
    ELSIF TG_ARGV[0] = 'npm_versions' THEN
        SELECT array_agg(x.namespace_id), array_agg(x.repository_id), array_agg(sign * x.n)
        INTO ns, repos, n
        FROM (SELECT r.namespace_id, r.repository_id, count(*) AS n
              FROM changed c
              JOIN npm_packages p ON p.namespace_id = c.namespace_id AND p.id = c.npm_package_id
              JOIN npm_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_repository_id
              GROUP BY 1, 2) x;
    ELSIF TG_ARGV[0] = 'maven_versions' THEN
        SELECT array_agg(x.namespace_id), array_agg(x.repository_id), array_agg(sign * x.n)
        INTO ns, repos, n
        FROM (SELECT r.namespace_id, r.repository_id, count(*) AS n
              FROM changed c
              JOIN maven_packages p ON p.namespace_id = c.namespace_id AND p.id = c.maven_package_id
              JOIN maven_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.maven_repository_id
              GROUP BY 1, 2) x;
    ELSE
        RAISE EXCEPTION 'accounting_artifacts: unexpected table %', TG_ARGV[0];
    END IF;
    IF ns IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ns, repos, n, array_fill(0::bigint, ARRAY[cardinality(ns)]), true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd


-- accounting_blob_refs ---------------------------------------------------------------
-- container_blobs, container_manifests, npm_files, npm_metadata_files,
-- maven_files AFTER INSERT / AFTER DELETE: the repository's size_bytes,
-- deduplicated within the repository. For each (repository, digest) the
-- statement changed, the trigger locks the blob row FOR NO KEY UPDATE (a
-- no-op when the transaction holds it already, as the protocol paths do
-- after blobsql.Lock; weaker than FOR UPDATE so that it never waits on the
-- KEY SHARE locks of foreign-key checks) and then, in a new statement and
-- so a new READ COMMITTED snapshot, counts the digest's references in the
-- repository: an insert adds the size when the only references are the
-- statement's own rows (first reference), a delete subtracts it when none
-- is left (last reference gone). Two transactions changing references to
-- one digest take the lock in turn, and the second one counts after the
-- first committed, so exactly one of them records the change. Every
-- writer of these tables runs at READ COMMITTED (a REPEATABLE READ
-- snapshot would not see the first one's rows). Locks are taken in
-- (namespace, digest) order, the blob protocol's order.
-- Maven file inserts also record last_updated_at (a deploy may add files
-- to an existing version); container and npm pushes record it through
-- their artifact rows, and npm metadata files are a cache, not content.
-- +goose StatementBegin
CREATE FUNCTION accounting_blob_refs() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ins boolean := TG_OP = 'INSERT';
    family text;
    ns uuid[];
    repos uuid[];
    frepos uuid[];
    shas bytea[];
    ks bigint[];
    sz bigint;
    refs bigint;
    touched boolean;
    d_ns uuid[] := '{}';
    d_repos uuid[] := '{}';
    d_sizes bigint[] := '{}';
BEGIN
    IF TG_ARGV[0] IN ('container_blobs', 'container_manifests') THEN
        family := 'container';
        SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
               array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
               array_agg(x.k ORDER BY x.namespace_id, x.sha)
        INTO ns, repos, frepos, shas, ks
        FROM (SELECT r.namespace_id, r.repository_id, r.id AS frepo, c.blob_sha256 AS sha, count(*) AS k
              FROM changed c
              JOIN container_images i ON i.namespace_id = c.namespace_id AND i.id = c.container_image_id
              JOIN container_repositories r ON r.namespace_id = i.namespace_id AND r.id = i.container_repository_id
              GROUP BY 1, 2, 3, 4) x;
    ELSIF TG_ARGV[0] = 'npm_files' THEN
        family := 'npm';
        SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
               array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
               array_agg(x.k ORDER BY x.namespace_id, x.sha)
        INTO ns, repos, frepos, shas, ks
        FROM (SELECT r.namespace_id, r.repository_id, r.id AS frepo, c.blob_sha256 AS sha, count(*) AS k
              FROM changed c
              JOIN npm_versions v ON v.namespace_id = c.namespace_id AND v.id = c.npm_version_id
              JOIN npm_packages p ON p.namespace_id = v.namespace_id AND p.id = v.npm_package_id
              JOIN npm_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_repository_id
              GROUP BY 1, 2, 3, 4) x;
    ELSIF TG_ARGV[0] = 'npm_metadata_files' THEN
        family := 'npm';
        SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
               array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
               array_agg(x.k ORDER BY x.namespace_id, x.sha)
        INTO ns, repos, frepos, shas, ks
        FROM (SELECT r.namespace_id, r.repository_id, r.id AS frepo, c.blob_sha256 AS sha, count(*) AS k
              FROM changed c
              JOIN npm_packages p ON p.namespace_id = c.namespace_id AND p.id = c.npm_package_id
              JOIN npm_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_repository_id
              GROUP BY 1, 2, 3, 4) x;
    ELSIF TG_ARGV[0] = 'maven_files' THEN
        family := 'maven';
        SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
               array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
               array_agg(x.k ORDER BY x.namespace_id, x.sha)
        INTO ns, repos, frepos, shas, ks
        FROM (SELECT r.namespace_id, r.repository_id, r.id AS frepo, c.blob_sha256 AS sha, count(*) AS k
              FROM changed c
              JOIN maven_packages p ON p.namespace_id = c.namespace_id AND p.id = c.maven_package_id
              JOIN maven_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.maven_repository_id
              GROUP BY 1, 2, 3, 4) x;
    ELSE
        RAISE EXCEPTION 'accounting_blob_refs: unexpected table %', TG_ARGV[0];
    END IF;
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
        refs := accounting_repository_refs(family, ns[i], frepos[i], shas[i]);
        IF (ins AND refs = ks[i]) OR (NOT ins AND refs = 0) THEN
            d_ns := d_ns || ns[i];
            d_repos := d_repos || repos[i];
            d_sizes := d_sizes || CASE WHEN ins THEN sz ELSE -sz END;
        END IF;
    END LOOP;

    touched := ins AND TG_ARGV[0] = 'maven_files';
    IF touched THEN
        -- one last_updated_at per repository, sizes where a digest is new
        SELECT array_agg(r.ns), array_agg(r.repo), array_agg(coalesce(s.size, 0))
        INTO d_ns, d_repos, d_sizes
        FROM (SELECT DISTINCT u.ns, u.repo FROM unnest(ns, repos) AS u(ns, repo)) r
        LEFT JOIN (SELECT u.ns, u.repo, sum(u.size)::bigint AS size
                   FROM unnest(d_ns, d_repos, d_sizes) AS u(ns, repo, size) GROUP BY 1, 2) s
               ON s.ns = r.ns AND s.repo = r.repo;
    END IF;
    IF cardinality(d_ns) > 0 THEN
        PERFORM accounting_repository_deltas(d_ns, d_repos,
            array_fill(0::bigint, ARRAY[cardinality(d_ns)]), d_sizes, touched);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- accounting_repository_refs counts the references to a digest in one
-- repository (by its format repository row), over every table of the
-- format that references blobs, soft-deleted rows included. Container
-- blob rows are content addressed (digest = blob_sha256), so their
-- (namespace_id, digest) index finds them. VOLATILE: it
-- must read with the caller's new snapshot, after the blob lock.
-- +goose StatementBegin
CREATE FUNCTION accounting_repository_refs(family text, ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    n bigint;
BEGIN
    IF family = 'container' THEN
        SELECT (SELECT count(*) FROM container_blobs b
                JOIN container_images i ON i.namespace_id = b.namespace_id AND i.id = b.container_image_id
                WHERE b.namespace_id = ns AND b.digest = sha AND b.blob_sha256 = sha AND i.container_repository_id = frepo)
             + (SELECT count(*) FROM container_manifests m
                JOIN container_images i ON i.namespace_id = m.namespace_id AND i.id = m.container_image_id
                WHERE m.namespace_id = ns AND m.blob_sha256 = sha AND i.container_repository_id = frepo)
        INTO n;
    ELSIF family = 'npm' THEN
        SELECT (SELECT count(*) FROM npm_files f
                JOIN npm_versions v ON v.namespace_id = f.namespace_id AND v.id = f.npm_version_id
                JOIN npm_packages p ON p.namespace_id = v.namespace_id AND p.id = v.npm_package_id
                WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.npm_repository_id = frepo)
             + (SELECT count(*) FROM npm_metadata_files f
                JOIN npm_packages p ON p.namespace_id = f.namespace_id AND p.id = f.npm_package_id
                WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.npm_repository_id = frepo)
        INTO n;
    ELSE
        SELECT count(*) FROM maven_files f
        JOIN maven_packages p ON p.namespace_id = f.namespace_id AND p.id = f.maven_package_id
        WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.maven_repository_id = frepo
        INTO n;
    END IF;
    RETURN n;
END;
$$;
-- +goose StatementEnd


-- The triggers. A statement-level trigger of a partitioned table fires
-- only for statements that name the parent; the request paths often name
-- the namespace's partition directly (plan-time pruning), so every
-- partition gets the same triggers as its parent (a statement fires the
-- ones of the table it names: exactly one of them). The trigger argument
-- is the parent's name.
-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES
        ('blob_storage_blobs', 'accounting_blobs', 'trg_accounting_blobs'),
        ('container_manifests', 'accounting_artifacts', 'trg_accounting_artifacts'),
        ('npm_versions', 'accounting_artifacts', 'trg_accounting_artifacts'),
        ('maven_versions', 'accounting_artifacts', 'trg_accounting_artifacts'),
        ('container_blobs', 'accounting_blob_refs', 'trg_accounting_blob_refs'),
        ('container_manifests', 'accounting_blob_refs', 'trg_accounting_blob_refs'),
        ('npm_files', 'accounting_blob_refs', 'trg_accounting_blob_refs'),
        ('npm_metadata_files', 'accounting_blob_refs', 'trg_accounting_blob_refs'),
        ('maven_files', 'accounting_blob_refs', 'trg_accounting_blob_refs')
    ) AS v(tbl, fn, name) LOOP
        FOR rel IN SELECT t.tbl::regclass UNION ALL
                   SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = t.tbl::regclass LOOP
            EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS changed '
                           'FOR EACH STATEMENT EXECUTE FUNCTION %I(%L)', t.name || '_insert', rel, t.fn, t.tbl);
            EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS changed '
                           'FOR EACH STATEMENT EXECUTE FUNCTION %I(%L)', t.name || '_delete', rel, t.fn, t.tbl);
        END LOOP;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- The previous releases did not count these values right: every namespace
-- goes back to the front of the reconciliation queue, so counters:reconcile
-- corrects them first (it computes the exact values from the rows).
UPDATE namespace_statistics SET last_reconciled_at = 'epoch';

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES
        ('blob_storage_blobs', 'trg_accounting_blobs'),
        ('container_manifests', 'trg_accounting_artifacts'),
        ('npm_versions', 'trg_accounting_artifacts'),
        ('maven_versions', 'trg_accounting_artifacts'),
        ('container_blobs', 'trg_accounting_blob_refs'),
        ('container_manifests', 'trg_accounting_blob_refs'),
        ('npm_files', 'trg_accounting_blob_refs'),
        ('npm_metadata_files', 'trg_accounting_blob_refs'),
        ('maven_files', 'trg_accounting_blob_refs')
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
DROP FUNCTION IF EXISTS accounting_repository_refs(text, uuid, uuid, bytea);
DROP FUNCTION IF EXISTS accounting_blob_refs();
DROP FUNCTION IF EXISTS accounting_artifacts();
DROP FUNCTION IF EXISTS accounting_blobs();
DROP FUNCTION IF EXISTS accounting_repository_deltas(uuid[], uuid[], bigint[], bigint[], boolean);
DELETE FROM counter_deltas WHERE field = 9;
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_value_kind;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_value_kind CHECK (
    CASE WHEN field IN (7, 8)
         THEN delta IS NULL AND observed_at IS NOT NULL
         ELSE delta IS NOT NULL AND observed_at IS NULL
    END);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_field_valid;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
    CASE target
        WHEN 0  THEN field IN (0, 1, 2)
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
        ELSE false
    END);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_field_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_field_range CHECK (field BETWEEN 0 AND 8);
DROP FUNCTION IF EXISTS gen_uuidv7();
