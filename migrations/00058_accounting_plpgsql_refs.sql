-- +goose Up
-- The reference counts the remote caches' statement triggers call once per
-- changed digest become PL/pgSQL, with the same signatures, queries and
-- results. As SQL-language functions PostgreSQL 15 plans their query anew
-- at every call, and without the argument values: a generic plan over
-- every hash partition of two or three tables (64 each), about 56 ms of
-- planning for 0.2 ms of execution, paid by every cached tarball,
-- packument, manifest or Maven file insert and delete. PL/pgSQL keeps the
-- statement's plan source for the connection and plans it with the
-- values known, so partition pruning leaves one partition per table (well
-- under a millisecond). Only the function bodies change: no table is
-- locked.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_remote_repository_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    n bigint;
BEGIN
    SELECT (SELECT count(*) FROM container_remote_blobs b
            JOIN container_remote_images i ON i.namespace_id = b.namespace_id AND i.id = b.container_remote_image_id
            WHERE b.namespace_id = ns AND b.blob_sha256 = sha AND i.container_remote_repository_id = frepo)
         + (SELECT count(*) FROM container_remote_manifests m
            JOIN container_remote_images i ON i.namespace_id = m.namespace_id AND i.id = m.container_remote_image_id
            WHERE m.namespace_id = ns AND m.blob_sha256 = sha AND i.container_remote_repository_id = frepo)
    INTO n;
    RETURN n;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_npm_remote_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    n bigint;
BEGIN
    SELECT (SELECT count(*) FROM npm_remote_files f
            JOIN npm_remote_versions v ON v.namespace_id = f.namespace_id AND v.id = f.npm_remote_version_id
            JOIN npm_remote_packages p ON p.namespace_id = v.namespace_id AND p.id = v.npm_remote_package_id
            WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.npm_remote_repository_id = frepo)
         + (SELECT count(*) FROM npm_remote_metadata_files m
            JOIN npm_remote_packages p ON p.namespace_id = m.namespace_id AND p.id = m.npm_remote_package_id
            WHERE m.namespace_id = ns AND m.blob_sha256 = sha AND p.npm_remote_repository_id = frepo)
    INTO n;
    RETURN n;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_maven_remote_repository_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    n bigint;
BEGIN
    SELECT count(*) FROM maven_remote_files f
    JOIN maven_remote_packages p ON p.namespace_id = f.namespace_id AND p.id = f.maven_remote_package_id
    WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.maven_remote_repository_id = frepo
    INTO n;
    RETURN n;
END;
$$;
-- +goose StatementEnd

-- accounting_repository_deltas, which every accounting trigger (hosted and
-- remote) calls once per statement that changes a count, is SQL-language
-- too: its INSERT into counter_deltas was planned anew at every call (a few
-- milliseconds under load). The same INSERT in PL/pgSQL; the unnest column
-- names differ from the parameters' so no reference is ambiguous.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_repository_deltas(ns uuid[], repos uuid[], artifacts bigint[], sizes bigint[], touch boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta, observed_at)
    SELECT gen_uuidv7(), u.u_ns, 0, u.u_repo, x.field, x.delta, x.observed_at
    FROM unnest(ns, repos, artifacts, sizes) AS u(u_ns, u_repo, u_artifacts, u_sizes)
    CROSS JOIN LATERAL (VALUES
        (0::smallint, u.u_artifacts, NULL::timestamptz),
        (2::smallint, u.u_sizes, NULL::timestamptz),
        (9::smallint, NULL::bigint, CASE WHEN touch THEN now() END)
    ) AS x(field, delta, observed_at)
    WHERE x.delta <> 0 OR x.observed_at IS NOT NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- The SQL-language definitions of 00041, 00054, 00055 and 00056, verbatim.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_repository_deltas(ns uuid[], repos uuid[], artifacts bigint[], sizes bigint[], touch boolean)
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_remote_repository_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_npm_remote_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_maven_remote_repository_refs(ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE sql VOLATILE
AS $$
SELECT count(*) FROM maven_remote_files f
JOIN maven_remote_packages p ON p.namespace_id = f.namespace_id AND p.id = f.maven_remote_package_id
WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.maven_remote_repository_id = frepo
$$;
-- +goose StatementEnd
