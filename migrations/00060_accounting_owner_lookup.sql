-- +goose Up
-- The storage accounting triggers (00041, 00054 to 00056) find the
-- repository of each changed row by joining the statement's transition
-- table with the partitioned owner tables (images, packages, versions)
-- and format repository tables. Nothing in that join tells the planner
-- the namespace, so its plan covers every hash partition of two or three
-- tables (64 each) and every execution starts an index scan node for each:
-- about 0.75 ms per statement, paid by every blob link, manifest, npm
-- version and file, and Maven file written or deleted.
--
-- The triggers now group the transition table by (namespace, owner row)
-- first and look each owner up in accounting_owner, a PL/pgSQL function
-- whose queries get the namespace as a value, so partition pruning leaves
-- one partition per table. An owner row that is not found is skipped, as
-- the inner join skipped it. The counts, the blob locks and their order,
-- and the deltas recorded are the same: only how the repository is found
-- changes, and no table is locked.

-- +goose StatementBegin
CREATE FUNCTION accounting_owner(owner_column text, ns uuid, owner uuid, OUT repository_id uuid, OUT frepo uuid)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF owner_column = 'container_image_id' THEN
        SELECT r.repository_id, r.id INTO repository_id, frepo FROM container_images i
        JOIN container_repositories r ON r.namespace_id = ns AND r.id = i.container_repository_id
        WHERE i.namespace_id = ns AND i.id = owner;
    ELSIF owner_column = 'npm_version_id' THEN
        SELECT r.repository_id, r.id INTO repository_id, frepo FROM npm_versions v
        JOIN npm_packages p ON p.namespace_id = ns AND p.id = v.npm_package_id
        JOIN npm_repositories r ON r.namespace_id = ns AND r.id = p.npm_repository_id
        WHERE v.namespace_id = ns AND v.id = owner;
    ELSIF owner_column = 'npm_package_id' THEN
        SELECT r.repository_id, r.id INTO repository_id, frepo FROM npm_packages p
        JOIN npm_repositories r ON r.namespace_id = ns AND r.id = p.npm_repository_id
        WHERE p.namespace_id = ns AND p.id = owner;
    ELSIF owner_column = 'maven_package_id' THEN
        SELECT r.repository_id, r.id INTO repository_id, frepo FROM maven_packages p
        JOIN maven_repositories r ON r.namespace_id = ns AND r.id = p.maven_repository_id
        WHERE p.namespace_id = ns AND p.id = owner;
    ELSIF owner_column = 'container_remote_image_id' THEN
        SELECT r.repository_id, r.id INTO repository_id, frepo FROM container_remote_images i
        JOIN container_remote_repositories r ON r.namespace_id = ns AND r.id = i.container_remote_repository_id
        WHERE i.namespace_id = ns AND i.id = owner;
    ELSIF owner_column = 'npm_remote_version_id' THEN
        SELECT r.repository_id, r.id INTO repository_id, frepo FROM npm_remote_versions v
        JOIN npm_remote_packages p ON p.namespace_id = ns AND p.id = v.npm_remote_package_id
        JOIN npm_remote_repositories r ON r.namespace_id = ns AND r.id = p.npm_remote_repository_id
        WHERE v.namespace_id = ns AND v.id = owner;
    ELSIF owner_column = 'npm_remote_package_id' THEN
        SELECT r.repository_id, r.id INTO repository_id, frepo FROM npm_remote_packages p
        JOIN npm_remote_repositories r ON r.namespace_id = ns AND r.id = p.npm_remote_repository_id
        WHERE p.namespace_id = ns AND p.id = owner;
    ELSIF owner_column = 'maven_remote_package_id' THEN
        SELECT r.repository_id, r.id INTO repository_id, frepo FROM maven_remote_packages p
        JOIN maven_remote_repositories r ON r.namespace_id = ns AND r.id = p.maven_remote_repository_id
        WHERE p.namespace_id = ns AND p.id = owner;
    ELSE
        RAISE EXCEPTION 'accounting_owner: unexpected owner column %', owner_column;
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_artifacts() RETURNS trigger
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
        FROM (SELECT g.ns AS namespace_id, o.repository_id, sum(g.k)::bigint AS n
              FROM (SELECT c.namespace_id AS ns, c.container_image_id AS owner, count(*) AS k
                    FROM changed c GROUP BY 1, 2) g
              CROSS JOIN LATERAL accounting_owner('container_image_id', g.ns, g.owner) o
              WHERE o.frepo IS NOT NULL
              GROUP BY 1, 2) x;
    ELSIF TG_ARGV[0] = 'npm_versions' THEN
        SELECT array_agg(x.namespace_id), array_agg(x.repository_id), array_agg(sign * x.n)
        INTO ns, repos, n
        FROM (SELECT g.ns AS namespace_id, o.repository_id, sum(g.k)::bigint AS n
              FROM (SELECT c.namespace_id AS ns, c.npm_package_id AS owner, count(*) AS k
                    FROM changed c GROUP BY 1, 2) g
              CROSS JOIN LATERAL accounting_owner('npm_package_id', g.ns, g.owner) o
              WHERE o.frepo IS NOT NULL
              GROUP BY 1, 2) x;
    ELSIF TG_ARGV[0] = 'maven_versions' THEN
        SELECT array_agg(x.namespace_id), array_agg(x.repository_id), array_agg(sign * x.n)
        INTO ns, repos, n
        FROM (SELECT g.ns AS namespace_id, o.repository_id, sum(g.k)::bigint AS n
              FROM (SELECT c.namespace_id AS ns, c.maven_package_id AS owner, count(*) AS k
                    FROM changed c GROUP BY 1, 2) g
              CROSS JOIN LATERAL accounting_owner('maven_package_id', g.ns, g.owner) o
              WHERE o.frepo IS NOT NULL
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_blob_refs() RETURNS trigger
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
        FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k
              FROM (SELECT c.namespace_id AS ns, c.container_image_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                    FROM changed c GROUP BY 1, 2, 3) g
              CROSS JOIN LATERAL accounting_owner('container_image_id', g.ns, g.owner) o
              WHERE o.frepo IS NOT NULL
              GROUP BY 1, 2, 3, 4) x;
    ELSIF TG_ARGV[0] = 'npm_files' THEN
        family := 'npm';
        SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
               array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
               array_agg(x.k ORDER BY x.namespace_id, x.sha)
        INTO ns, repos, frepos, shas, ks
        FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k
              FROM (SELECT c.namespace_id AS ns, c.npm_version_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                    FROM changed c GROUP BY 1, 2, 3) g
              CROSS JOIN LATERAL accounting_owner('npm_version_id', g.ns, g.owner) o
              WHERE o.frepo IS NOT NULL
              GROUP BY 1, 2, 3, 4) x;
    ELSIF TG_ARGV[0] = 'npm_metadata_files' THEN
        family := 'npm';
        SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
               array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
               array_agg(x.k ORDER BY x.namespace_id, x.sha)
        INTO ns, repos, frepos, shas, ks
        FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k
              FROM (SELECT c.namespace_id AS ns, c.npm_package_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                    FROM changed c GROUP BY 1, 2, 3) g
              CROSS JOIN LATERAL accounting_owner('npm_package_id', g.ns, g.owner) o
              WHERE o.frepo IS NOT NULL
              GROUP BY 1, 2, 3, 4) x;
    ELSIF TG_ARGV[0] = 'maven_files' THEN
        family := 'maven';
        SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
               array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
               array_agg(x.k ORDER BY x.namespace_id, x.sha)
        INTO ns, repos, frepos, shas, ks
        FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k
              FROM (SELECT c.namespace_id AS ns, c.maven_package_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                    FROM changed c GROUP BY 1, 2, 3) g
              CROSS JOIN LATERAL accounting_owner('maven_package_id', g.ns, g.owner) o
              WHERE o.frepo IS NOT NULL
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_remote_artifacts() RETURNS trigger
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
    FROM (SELECT g.ns AS namespace_id, o.repository_id, sum(g.k)::bigint AS n
          FROM (SELECT c.namespace_id AS ns, c.container_remote_image_id AS owner, count(*) AS k
                FROM changed c GROUP BY 1, 2) g
          CROSS JOIN LATERAL accounting_owner('container_remote_image_id', g.ns, g.owner) o
          WHERE o.frepo IS NOT NULL
          GROUP BY 1, 2) x;
    IF ns IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ns, repos, n, array_fill(0::bigint, ARRAY[cardinality(ns)]), true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_remote_blob_refs() RETURNS trigger
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
    FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k
          FROM (SELECT c.namespace_id AS ns, c.container_remote_image_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                FROM changed c GROUP BY 1, 2, 3) g
          CROSS JOIN LATERAL accounting_owner('container_remote_image_id', g.ns, g.owner) o
          WHERE o.frepo IS NOT NULL
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_npm_remote_artifacts() RETURNS trigger
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
    FROM (SELECT g.ns AS namespace_id, o.repository_id, sum(g.k)::bigint AS n
          FROM (SELECT c.namespace_id AS ns, c.npm_remote_package_id AS owner, count(*) AS k
                FROM changed c GROUP BY 1, 2) g
          CROSS JOIN LATERAL accounting_owner('npm_remote_package_id', g.ns, g.owner) o
          WHERE o.frepo IS NOT NULL
          GROUP BY 1, 2) x;
    IF ns IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ns, repos, n, array_fill(0::bigint, ARRAY[cardinality(ns)]), true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_npm_remote_file_refs() RETURNS trigger
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
    FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k
          FROM (SELECT c.namespace_id AS ns, c.npm_remote_version_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                FROM changed c GROUP BY 1, 2, 3) g
          CROSS JOIN LATERAL accounting_owner('npm_remote_version_id', g.ns, g.owner) o
          WHERE o.frepo IS NOT NULL
          GROUP BY 1, 2, 3, 4) x;
    PERFORM accounting_npm_remote_sizes(TG_OP = 'INSERT', ns, repos, frepos, shas, ks);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_npm_remote_metadata_refs() RETURNS trigger
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
    FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k
          FROM (SELECT c.namespace_id AS ns, c.npm_remote_package_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                FROM changed c GROUP BY 1, 2, 3) g
          CROSS JOIN LATERAL accounting_owner('npm_remote_package_id', g.ns, g.owner) o
          WHERE o.frepo IS NOT NULL
          GROUP BY 1, 2, 3, 4) x;
    PERFORM accounting_npm_remote_sizes(TG_OP = 'INSERT', ns, repos, frepos, shas, ks);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_maven_remote_versions() RETURNS trigger
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
    FROM (SELECT g.ns AS namespace_id, o.repository_id, sum(g.k)::bigint AS n
          FROM (SELECT c.namespace_id AS ns, c.maven_remote_package_id AS owner, count(*) AS k
                FROM changed c GROUP BY 1, 2) g
          CROSS JOIN LATERAL accounting_owner('maven_remote_package_id', g.ns, g.owner) o
          WHERE o.frepo IS NOT NULL
          GROUP BY 1, 2) x;
    IF ns IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ns, repos, n, array_fill(0::bigint, ARRAY[cardinality(ns)]), true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_maven_remote_files() RETURNS trigger
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
    FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k
          FROM (SELECT c.namespace_id AS ns, c.maven_remote_package_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                FROM changed c GROUP BY 1, 2, 3) g
          CROSS JOIN LATERAL accounting_owner('maven_remote_package_id', g.ns, g.owner) o
          WHERE o.frepo IS NOT NULL
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

-- +goose Down
-- The bodies of 00041, 00054, 00055 and 00056.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_artifacts() RETURNS trigger
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_blob_refs() RETURNS trigger
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_remote_artifacts() RETURNS trigger
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_remote_blob_refs() RETURNS trigger
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_npm_remote_artifacts() RETURNS trigger
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_npm_remote_file_refs() RETURNS trigger
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_npm_remote_metadata_refs() RETURNS trigger
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_maven_remote_versions() RETURNS trigger
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_maven_remote_files() RETURNS trigger
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

DROP FUNCTION accounting_owner(text, uuid, uuid);
