-- +goose Up
-- What the Maven proxy (format MAVEN, kind REMOTE) needs besides the
-- remote tables of 00016/00017 (docs/remote-repositories.md, "Maven"):
--
--   * maven_remote_repositories: the last upstream error, settings_changed_at
--     (every instance keys its upstream client by it), the buffered
--     cache_hits / cache_misses behind the hit ratio (counter_deltas target
--     14, fields 10 and 11), negative_cache_minutes (how long an upstream
--     404 is remembered), ranges for the validities, and a metadata
--     validity default of one hour (metadata is what brings new versions).
--   * maven_remote_files: upstream_last_modified for If-Modified-Since
--     revalidation (the ETag column exists), and size (the cached bytes of
--     the file, so that a version's size and eviction need no blob join).
--   * maven_remote_packages: created_at (when it was first cached).
--   * the last-downloaded index gc:cache-evict walks.
--   * storage accounting triggers, by 00041's rules: a cached version is
--     an artifact of the remote repository and a component of the
--     namespace; the remote repository's size_bytes counts each distinct
--     digest its cached files reference once.

ALTER TABLE maven_remote_repositories
    ADD COLUMN last_health_error text NULL,
    ADD COLUMN settings_changed_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN cache_hits bigint NOT NULL DEFAULT 0,
    ADD COLUMN cache_misses bigint NOT NULL DEFAULT 0,
    ADD COLUMN negative_cache_minutes smallint NOT NULL DEFAULT 15,
    ALTER COLUMN metadata_cache_validity_hours SET DEFAULT 1,
    ADD CONSTRAINT maven_remote_repositories_last_health_error_length CHECK (char_length(last_health_error) <= 1024),
    ADD CONSTRAINT maven_remote_repositories_cache_validity_hours_range CHECK (cache_validity_hours BETWEEN 0 AND 8760),
    ADD CONSTRAINT maven_remote_repositories_metadata_cache_validity_hours_range
        CHECK (metadata_cache_validity_hours BETWEEN 0 AND 8760),
    ADD CONSTRAINT maven_remote_repositories_negative_cache_minutes_range CHECK (negative_cache_minutes BETWEEN 0 AND 1440);

ALTER TABLE maven_remote_files
    ADD COLUMN upstream_last_modified timestamptz NULL,
    ADD COLUMN size bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT maven_remote_files_size_range CHECK (size >= 0);

ALTER TABLE maven_remote_packages ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

CREATE INDEX maven_remote_versions_last_downloaded_at_idx
    ON maven_remote_versions (namespace_id, last_downloaded_at NULLS FIRST)
    WHERE soft_deleted_at IS NULL;

-- counter_deltas: target 15 is maven_remote_repositories, with the
-- counters cache_hits (field 10) and cache_misses (field 11).
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_range CHECK (target BETWEEN 0 AND 15);
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
        WHEN 15 THEN field IN (10, 11)     -- maven_remote_repository: cache_hits, cache_misses
        ELSE false
    END);

-- accounting_maven_remote_versions: maven_remote_versions AFTER INSERT /
-- AFTER DELETE: components_count of the namespace, artifacts_count and
-- last_updated_at of the remote repository.
-- +goose StatementBegin
CREATE FUNCTION accounting_maven_remote_versions() RETURNS trigger
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
          JOIN maven_remote_packages p ON p.namespace_id = c.namespace_id AND p.id = c.maven_remote_package_id
          JOIN maven_remote_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.maven_remote_repository_id
          GROUP BY 1, 2) x;
    IF ns IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ns, repos, n, array_fill(0::bigint, ARRAY[cardinality(ns)]), true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- accounting_maven_remote_files: maven_remote_files AFTER INSERT / AFTER
-- DELETE: the remote repository's size_bytes, deduplicated within it,
-- with 00041's locking rule (blob row FOR NO KEY UPDATE in (namespace,
-- digest) order, then the count in a new READ COMMITTED statement).
-- +goose StatementBegin
CREATE FUNCTION accounting_maven_remote_files() RETURNS trigger
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
          JOIN maven_remote_packages p ON p.namespace_id = c.namespace_id AND p.id = c.maven_remote_package_id
          JOIN maven_remote_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.maven_remote_repository_id
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
        refs := accounting_maven_remote_repository_refs(ns[i], frepos[i], shas[i]);
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

-- accounting_maven_remote_repository_refs counts the cached files of one
-- Maven remote (by its maven_remote_repositories row) that reference a
-- digest, through maven_remote_files_blob_sha256_idx. VOLATILE: it reads
-- with the caller's new snapshot, after the blob lock.
-- +goose StatementBegin
CREATE FUNCTION accounting_maven_remote_repository_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE sql VOLATILE
AS $$
SELECT count(*) FROM maven_remote_files f
JOIN maven_remote_packages p ON p.namespace_id = f.namespace_id AND p.id = f.maven_remote_package_id
WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.maven_remote_repository_id = frepo
$$;
-- +goose StatementEnd

-- The triggers, on the parents and on every partition (see 00041).
-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES
        ('maven_remote_versions', 'accounting_maven_remote_versions', 'trg_accounting_maven_remote_versions'),
        ('maven_remote_files', 'accounting_maven_remote_files', 'trg_accounting_maven_remote_files')
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
-- refused Maven remotes until now) were not counted.
UPDATE namespace_statistics SET last_reconciled_at = 'epoch'
WHERE namespace_id IN (SELECT DISTINCT namespace_id FROM maven_remote_repositories);

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES
        ('maven_remote_versions', 'trg_accounting_maven_remote_versions'),
        ('maven_remote_files', 'trg_accounting_maven_remote_files')
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
DROP FUNCTION IF EXISTS accounting_maven_remote_repository_refs(uuid, uuid, bytea);
DROP FUNCTION IF EXISTS accounting_maven_remote_files();
DROP FUNCTION IF EXISTS accounting_maven_remote_versions();
DELETE FROM counter_deltas WHERE target = 15;
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
        WHEN 14 THEN field IN (10, 11)
        ELSE false
    END);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_range CHECK (target BETWEEN 0 AND 14);
DROP INDEX IF EXISTS maven_remote_versions_last_downloaded_at_idx;
ALTER TABLE maven_remote_packages DROP COLUMN IF EXISTS created_at;
ALTER TABLE maven_remote_files
    DROP CONSTRAINT IF EXISTS maven_remote_files_size_range,
    DROP COLUMN IF EXISTS size,
    DROP COLUMN IF EXISTS upstream_last_modified;
ALTER TABLE maven_remote_repositories
    DROP CONSTRAINT IF EXISTS maven_remote_repositories_negative_cache_minutes_range,
    DROP CONSTRAINT IF EXISTS maven_remote_repositories_metadata_cache_validity_hours_range,
    DROP CONSTRAINT IF EXISTS maven_remote_repositories_cache_validity_hours_range,
    DROP CONSTRAINT IF EXISTS maven_remote_repositories_last_health_error_length,
    ALTER COLUMN metadata_cache_validity_hours SET DEFAULT 24,
    DROP COLUMN IF EXISTS negative_cache_minutes,
    DROP COLUMN IF EXISTS cache_misses,
    DROP COLUMN IF EXISTS cache_hits,
    DROP COLUMN IF EXISTS settings_changed_at,
    DROP COLUMN IF EXISTS last_health_error;
