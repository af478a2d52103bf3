-- +goose Up
-- What the npm pull-through cache needs besides the remote tables of
-- 00023-00025 (docs/remote-repositories.md):
--
--   * npm_remote_repositories: the last upstream error (shown with the
--     health; never a URL or a credential), settings_changed_at (bumped by
--     every change of the URL, the credentials or a validity: each instance
--     keys its upstream client by it), the buffered cache_hits /
--     cache_misses behind the hit ratio (counter_deltas target 14, fields
--     10 and 11), ranges for both validities, and a metadata validity
--     default of one hour (packuments change with every upstream publish).
--   * npm_remote_metadata_files: the upstream's Last-Modified, sent back as
--     If-Modified-Since when the upstream gave no ETag.
--   * npm_remote_versions: the keep-last-downloaded index gc:cache-evict
--     walks.
--   * Storage accounting of cached content by 00041's and 00054's rules:
--     npm_remote_versions count as artifacts (repositories.artifacts_count,
--     namespace_statistics.components_count, last_updated_at);
--     npm_remote_files and npm_remote_metadata_files add a blob's size to
--     the remote repository's size_bytes when the digest is first
--     referenced there and take it off when its last reference goes. The
--     namespace's deduplicated_size_bytes already counts the blob rows.

ALTER TABLE npm_remote_repositories
    ADD COLUMN last_health_error text NULL,
    ADD COLUMN settings_changed_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN cache_hits bigint NOT NULL DEFAULT 0,
    ADD COLUMN cache_misses bigint NOT NULL DEFAULT 0,
    ALTER COLUMN metadata_cache_validity_hours SET DEFAULT 1,
    ADD CONSTRAINT npm_remote_repositories_last_health_error_length CHECK (char_length(last_health_error) <= 1024),
    ADD CONSTRAINT npm_remote_repositories_cache_validity_hours_range CHECK (cache_validity_hours BETWEEN 0 AND 8760),
    ADD CONSTRAINT npm_remote_repositories_metadata_cache_validity_hours_range
        CHECK (metadata_cache_validity_hours BETWEEN 0 AND 8760);

ALTER TABLE npm_remote_metadata_files
    ADD COLUMN upstream_last_modified text NULL,
    ADD CONSTRAINT npm_remote_metadata_files_upstream_last_modified_length CHECK (char_length(upstream_last_modified) <= 255);

CREATE INDEX npm_remote_versions_last_downloaded_at_idx
    ON npm_remote_versions (namespace_id, last_downloaded_at NULLS FIRST)
    WHERE soft_deleted_at IS NULL;

-- counter_deltas: target 14 is npm_remote_repositories, with the counters
-- cache_hits (field 10) and cache_misses (field 11).
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_range CHECK (target BETWEEN 0 AND 14);
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
        WHEN 13 THEN field IN (10, 11)     -- container_remote_repository: cache_hits, cache_misses
        WHEN 14 THEN field IN (10, 11)     -- npm_remote_repository: cache_hits, cache_misses
        ELSE false
    END);

-- accounting_npm_remote_artifacts: npm_remote_versions AFTER INSERT /
-- AFTER DELETE.
-- +goose StatementBegin
CREATE FUNCTION accounting_npm_remote_artifacts() RETURNS trigger
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
          JOIN npm_remote_packages p ON p.namespace_id = c.namespace_id AND p.id = c.npm_remote_package_id
          JOIN npm_remote_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_remote_repository_id
          GROUP BY 1, 2) x;
    IF ns IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ns, repos, n, array_fill(0::bigint, ARRAY[cardinality(ns)]), true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- accounting_npm_remote_refs counts the references to a digest in one npm
-- remote repository, over its cached tarballs and packuments, through
-- their (namespace_id, blob_sha256) indexes. VOLATILE: it reads with the
-- caller's new snapshot, after the blob lock.
-- +goose StatementBegin
CREATE FUNCTION accounting_npm_remote_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE sql VOLATILE
AS $$
SELECT (SELECT count(*) FROM npm_remote_files f
        JOIN npm_remote_versions v ON v.namespace_id = f.namespace_id AND v.id = f.npm_remote_version_id
        JOIN npm_remote_packages p ON p.namespace_id = v.namespace_id AND p.id = v.npm_remote_package_id
        WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.npm_remote_repository_id = frepo)
     + (SELECT count(*) FROM npm_remote_metadata_files m
        JOIN npm_remote_packages p ON p.namespace_id = m.namespace_id AND p.id = m.npm_remote_package_id
        WHERE m.namespace_id = ns AND m.blob_sha256 = sha AND p.npm_remote_repository_id = frepo)
$$;
-- +goose StatementEnd

-- accounting_npm_remote_sizes applies the size rule to the (namespace,
-- repository, npm remote, digest, references changed) tuples of one
-- statement, with 00041's locking rule (blob row FOR NO KEY UPDATE in
-- (namespace, digest) order, then the count).
-- +goose StatementBegin
CREATE FUNCTION accounting_npm_remote_sizes(ins boolean, ns uuid[], repos uuid[], frepos uuid[], shas bytea[], ks bigint[])
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    sz bigint;
    refs bigint;
    d_ns uuid[] := '{}';
    d_repos uuid[] := '{}';
    d_sizes bigint[] := '{}';
BEGIN
    IF ns IS NULL THEN
        RETURN;
    END IF;
    FOR i IN 1 .. cardinality(ns) LOOP
        SELECT b.size INTO sz FROM blob_storage_blobs b
        WHERE b.namespace_id = ns[i] AND b.sha256 = shas[i]
        FOR NO KEY UPDATE;
        IF sz IS NULL THEN
            CONTINUE;
        END IF;
        refs := accounting_npm_remote_refs(ns[i], frepos[i], shas[i]);
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
END;
$$;
-- +goose StatementEnd

-- accounting_npm_remote_file_refs: npm_remote_files AFTER INSERT / DELETE.
-- +goose StatementBegin
CREATE FUNCTION accounting_npm_remote_file_refs() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ns uuid[];
    repos uuid[];
    frepos uuid[];
    shas bytea[];
    ks bigint[];
BEGIN
    SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
           array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
           array_agg(x.k ORDER BY x.namespace_id, x.sha)
    INTO ns, repos, frepos, shas, ks
    FROM (SELECT r.namespace_id, r.repository_id, r.id AS frepo, c.blob_sha256 AS sha, count(*) AS k
          FROM changed c
          JOIN npm_remote_versions v ON v.namespace_id = c.namespace_id AND v.id = c.npm_remote_version_id
          JOIN npm_remote_packages p ON p.namespace_id = v.namespace_id AND p.id = v.npm_remote_package_id
          JOIN npm_remote_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_remote_repository_id
          GROUP BY 1, 2, 3, 4) x;
    PERFORM accounting_npm_remote_sizes(TG_OP = 'INSERT', ns, repos, frepos, shas, ks);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- accounting_npm_remote_metadata_refs: npm_remote_metadata_files AFTER
-- INSERT / DELETE (a changed packument is a new row, never an UPDATE of
-- its digest).
-- +goose StatementBegin
CREATE FUNCTION accounting_npm_remote_metadata_refs() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ns uuid[];
    repos uuid[];
    frepos uuid[];
    shas bytea[];
    ks bigint[];
BEGIN
    SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
           array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
           array_agg(x.k ORDER BY x.namespace_id, x.sha)
    INTO ns, repos, frepos, shas, ks
    FROM (SELECT r.namespace_id, r.repository_id, r.id AS frepo, c.blob_sha256 AS sha, count(*) AS k
          FROM changed c
          JOIN npm_remote_packages p ON p.namespace_id = c.namespace_id AND p.id = c.npm_remote_package_id
          JOIN npm_remote_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_remote_repository_id
          GROUP BY 1, 2, 3, 4) x;
    PERFORM accounting_npm_remote_sizes(TG_OP = 'INSERT', ns, repos, frepos, shas, ks);
    RETURN NULL;
END;
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
        ('npm_remote_versions', 'accounting_npm_remote_artifacts', 'trg_accounting_npm_remote_artifacts'),
        ('npm_remote_files', 'accounting_npm_remote_file_refs', 'trg_accounting_npm_remote_file_refs'),
        ('npm_remote_metadata_files', 'accounting_npm_remote_metadata_refs', 'trg_accounting_npm_remote_metadata_refs')
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
-- refused npm remote repositories until now) were not counted: their
-- namespaces go to the front of the reconciliation queue.
UPDATE namespace_statistics SET last_reconciled_at = 'epoch'
WHERE namespace_id IN (SELECT DISTINCT namespace_id FROM npm_remote_repositories);

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES
        ('npm_remote_versions', 'trg_accounting_npm_remote_artifacts'),
        ('npm_remote_files', 'trg_accounting_npm_remote_file_refs'),
        ('npm_remote_metadata_files', 'trg_accounting_npm_remote_metadata_refs')
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
DROP FUNCTION IF EXISTS accounting_npm_remote_metadata_refs();
DROP FUNCTION IF EXISTS accounting_npm_remote_file_refs();
DROP FUNCTION IF EXISTS accounting_npm_remote_sizes(boolean, uuid[], uuid[], uuid[], bytea[], bigint[]);
DROP FUNCTION IF EXISTS accounting_npm_remote_refs(uuid, uuid, bytea);
DROP FUNCTION IF EXISTS accounting_npm_remote_artifacts();
DELETE FROM counter_deltas WHERE target = 14;
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_field_valid;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
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
        ELSE false
    END);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_range CHECK (target BETWEEN 0 AND 13);
DROP INDEX IF EXISTS npm_remote_versions_last_downloaded_at_idx;
ALTER TABLE npm_remote_metadata_files
    DROP CONSTRAINT IF EXISTS npm_remote_metadata_files_upstream_last_modified_length,
    DROP COLUMN IF EXISTS upstream_last_modified;
ALTER TABLE npm_remote_repositories
    ALTER COLUMN metadata_cache_validity_hours SET DEFAULT 24,
    DROP CONSTRAINT IF EXISTS npm_remote_repositories_metadata_cache_validity_hours_range,
    DROP CONSTRAINT IF EXISTS npm_remote_repositories_cache_validity_hours_range,
    DROP CONSTRAINT IF EXISTS npm_remote_repositories_last_health_error_length,
    DROP COLUMN IF EXISTS cache_misses,
    DROP COLUMN IF EXISTS cache_hits,
    DROP COLUMN IF EXISTS settings_changed_at,
    DROP COLUMN IF EXISTS last_health_error;
