-- +goose Up
-- The accounting triggers' lookups by namespace (the repository of an
-- owner row, the references to a digest in one repository) named the
-- partitioned parents, so PostgreSQL planned each again at every call to
-- prune 64 partitions of two to five tables: 0.2 to 0.5 ms of planning
-- per lookup, three to five lookups per manifest push and two per npm
-- publish. A generic plan is no cheaper: it holds every partition and
-- locks them all at each execution.
--
-- The lookups of hosted content now run on single partitions. Each is a
-- function holding one copy of its statement per partition, generated
-- below, and namespace_partition picks the copy: a plain PL/pgSQL CASE,
-- each branch a statement on plain tables that PostgreSQL plans a few
-- times and then runs on a cached plan. accounting_owner,
-- accounting_repository_refs and accounting_touch keep their signatures
-- and results; their hosted branches call the new functions. Only
-- function bodies change: no table is locked.

-- namespace_partition is the remainder (0 to 63) of a namespace id in the
-- tables partitioned by HASH (namespace_id): PostgreSQL's own hash of a
-- single uuid key, uuid_hash_extended with the hash-partition seed,
-- combined as compute_partition_hash_value does (plus 0x49a0f4dd15e5a8e3),
-- modulo 64 (only the low six bits matter, so the sum cannot overflow).
-- TestNamespacePartition compares it with satisfies_hash_partition.
CREATE FUNCTION namespace_partition(ns uuid) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (((uuid_hash_extended(ns, 8816678312871386365) & 63) + 35) & 63)::int $$;

-- +goose StatementBegin
DO $do$
DECLARE
    f record;
    branches text;
BEGIN
    FOR f IN SELECT * FROM (VALUES
        ('accounting_owner_container_image', 'ns uuid, owner uuid, OUT repository_id uuid, OUT frepo uuid', 'STABLE', $q$
            SELECT r.repository_id, r.id INTO repository_id, frepo FROM partitions.container_images_{p} i
            JOIN partitions.container_repositories_{p} r ON r.namespace_id = ns AND r.id = i.container_repository_id
            WHERE i.namespace_id = ns AND i.id = owner;$q$),
        ('accounting_owner_npm_version', 'ns uuid, owner uuid, OUT repository_id uuid, OUT frepo uuid', 'STABLE', $q$
            SELECT r.repository_id, r.id INTO repository_id, frepo FROM partitions.npm_versions_{p} v
            JOIN partitions.npm_packages_{p} p ON p.namespace_id = ns AND p.id = v.npm_package_id
            JOIN partitions.npm_repositories_{p} r ON r.namespace_id = ns AND r.id = p.npm_repository_id
            WHERE v.namespace_id = ns AND v.id = owner;$q$),
        ('accounting_owner_npm_package', 'ns uuid, owner uuid, OUT repository_id uuid, OUT frepo uuid', 'STABLE', $q$
            SELECT r.repository_id, r.id INTO repository_id, frepo FROM partitions.npm_packages_{p} p
            JOIN partitions.npm_repositories_{p} r ON r.namespace_id = ns AND r.id = p.npm_repository_id
            WHERE p.namespace_id = ns AND p.id = owner;$q$),
        ('accounting_owner_maven_package', 'ns uuid, owner uuid, OUT repository_id uuid, OUT frepo uuid', 'STABLE', $q$
            SELECT r.repository_id, r.id INTO repository_id, frepo FROM partitions.maven_packages_{p} p
            JOIN partitions.maven_repositories_{p} r ON r.namespace_id = ns AND r.id = p.maven_repository_id
            WHERE p.namespace_id = ns AND p.id = owner;$q$),
        -- VOLATILE, as accounting_repository_refs: they read with the
        -- caller's new snapshot, after the blob lock.
        ('accounting_refs_container', 'ns uuid, frepo uuid, sha bytea, OUT n bigint', 'VOLATILE', $q$
            SELECT (SELECT count(*) FROM partitions.container_blobs_{p} b
                    JOIN partitions.container_images_{p} i ON i.namespace_id = b.namespace_id AND i.id = b.container_image_id
                    WHERE b.namespace_id = ns AND b.digest = sha AND b.blob_sha256 = sha AND i.container_repository_id = frepo)
                 + (SELECT count(*) FROM partitions.container_manifests_{p} m
                    JOIN partitions.container_images_{p} i ON i.namespace_id = m.namespace_id AND i.id = m.container_image_id
                    WHERE m.namespace_id = ns AND m.blob_sha256 = sha AND i.container_repository_id = frepo)
            INTO n;$q$),
        ('accounting_refs_npm', 'ns uuid, frepo uuid, sha bytea, OUT n bigint', 'VOLATILE', $q$
            SELECT (SELECT count(*) FROM partitions.npm_files_{p} f
                    JOIN partitions.npm_versions_{p} v ON v.namespace_id = f.namespace_id AND v.id = f.npm_version_id
                    JOIN partitions.npm_packages_{p} p ON p.namespace_id = v.namespace_id AND p.id = v.npm_package_id
                    WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.npm_repository_id = frepo)
                 + (SELECT count(*) FROM partitions.npm_metadata_files_{p} f
                    JOIN partitions.npm_packages_{p} p ON p.namespace_id = f.namespace_id AND p.id = f.npm_package_id
                    WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.npm_repository_id = frepo)
            INTO n;$q$),
        ('accounting_refs_maven', 'ns uuid, frepo uuid, sha bytea, OUT n bigint', 'VOLATILE', $q$
            SELECT count(*) FROM partitions.maven_files_{p} f
            JOIN partitions.maven_packages_{p} p ON p.namespace_id = f.namespace_id AND p.id = f.maven_package_id
            WHERE f.namespace_id = ns AND f.blob_sha256 = sha AND p.maven_repository_id = frepo
            INTO n;$q$)
    ) AS v(name, params, volatility, stmt)
    LOOP
        SELECT string_agg(format(E'\n    WHEN %s THEN%s', p, replace(f.stmt, '{p}', 'p' || lpad(p::text, 2, '0'))), '' ORDER BY p)
        INTO branches FROM generate_series(0, 63) p;
        EXECUTE format(E'CREATE FUNCTION %I(%s) LANGUAGE plpgsql %s AS $body$\nBEGIN\n    CASE namespace_partition(ns)%s\n    END CASE;\nEND;\n$body$',
            f.name, f.params, f.volatility, branches);
    END LOOP;
END;
$do$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_owner(owner_column text, ns uuid, owner uuid, OUT repository_id uuid, OUT frepo uuid)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF owner_column = 'container_image_id' THEN
        SELECT o.repository_id, o.frepo INTO repository_id, frepo FROM accounting_owner_container_image(ns, owner) o;
    ELSIF owner_column = 'npm_version_id' THEN
        SELECT o.repository_id, o.frepo INTO repository_id, frepo FROM accounting_owner_npm_version(ns, owner) o;
    ELSIF owner_column = 'npm_package_id' THEN
        SELECT o.repository_id, o.frepo INTO repository_id, frepo FROM accounting_owner_npm_package(ns, owner) o;
    ELSIF owner_column = 'maven_package_id' THEN
        SELECT o.repository_id, o.frepo INTO repository_id, frepo FROM accounting_owner_maven_package(ns, owner) o;
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
CREATE OR REPLACE FUNCTION accounting_repository_refs(family text, ns uuid, frepo uuid, sha bytea) RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF family = 'container' THEN
        RETURN accounting_refs_container(ns, frepo, sha);
    ELSIF family = 'npm' THEN
        RETURN accounting_refs_npm(ns, frepo, sha);
    END IF;
    RETURN accounting_refs_maven(ns, frepo, sha);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_touch() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    r record;
    repo uuid;
BEGIN
    IF TG_OP = 'DELETE' THEN
        r := OLD;
    ELSE
        r := NEW;
    END IF;
    IF TG_ARGV[0] IN ('container_manifests', 'container_tags') THEN
        SELECT o.repository_id INTO repo FROM accounting_owner_container_image(r.namespace_id, r.container_image_id) o;
    ELSIF TG_ARGV[0] = 'container_images' THEN
        SELECT cr.repository_id INTO repo FROM container_repositories cr
        WHERE cr.namespace_id = r.namespace_id AND cr.id = r.container_repository_id;
    ELSIF TG_ARGV[0] = 'npm_versions' THEN
        SELECT o.repository_id INTO repo FROM accounting_owner_npm_package(r.namespace_id, r.npm_package_id) o;
    ELSIF TG_ARGV[0] = 'npm_packages' THEN
        SELECT nr.repository_id INTO repo FROM npm_repositories nr
        WHERE nr.namespace_id = r.namespace_id AND nr.id = r.npm_repository_id;
    ELSIF TG_ARGV[0] = 'maven_versions' THEN
        SELECT o.repository_id INTO repo FROM accounting_owner_maven_package(r.namespace_id, r.maven_package_id) o;
    ELSIF TG_ARGV[0] = 'maven_packages' THEN
        SELECT mr.repository_id INTO repo FROM maven_repositories mr
        WHERE mr.namespace_id = r.namespace_id AND mr.id = r.maven_repository_id;
    ELSE
        RAISE EXCEPTION 'accounting_touch: unexpected table %', TG_ARGV[0];
    END IF;
    IF repo IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ARRAY[r.namespace_id], ARRAY[repo], '{0}', '{0}', true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- The bodies of 00060 (accounting_owner), 00041 (accounting_repository_refs)
-- and 00042 (accounting_touch), then the new functions go.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_owner(owner_column text, ns uuid, owner uuid, OUT repository_id uuid, OUT frepo uuid)
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
CREATE OR REPLACE FUNCTION accounting_repository_refs(family text, ns uuid, frepo uuid, sha bytea) RETURNS bigint
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

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION accounting_touch() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    r record;
    repo uuid;
BEGIN
    IF TG_OP = 'DELETE' THEN
        r := OLD;
    ELSE
        r := NEW;
    END IF;
    IF TG_ARGV[0] IN ('container_manifests', 'container_tags') THEN
        SELECT cr.repository_id INTO repo FROM container_images i
        JOIN container_repositories cr ON cr.namespace_id = i.namespace_id AND cr.id = i.container_repository_id
        WHERE i.namespace_id = r.namespace_id AND i.id = r.container_image_id;
    ELSIF TG_ARGV[0] = 'container_images' THEN
        SELECT cr.repository_id INTO repo FROM container_repositories cr
        WHERE cr.namespace_id = r.namespace_id AND cr.id = r.container_repository_id;
    ELSIF TG_ARGV[0] = 'npm_versions' THEN
        SELECT nr.repository_id INTO repo FROM npm_packages p
        JOIN npm_repositories nr ON nr.namespace_id = p.namespace_id AND nr.id = p.npm_repository_id
        WHERE p.namespace_id = r.namespace_id AND p.id = r.npm_package_id;
    ELSIF TG_ARGV[0] = 'npm_packages' THEN
        SELECT nr.repository_id INTO repo FROM npm_repositories nr
        WHERE nr.namespace_id = r.namespace_id AND nr.id = r.npm_repository_id;
    ELSIF TG_ARGV[0] = 'maven_versions' THEN
        SELECT mr.repository_id INTO repo FROM maven_packages p
        JOIN maven_repositories mr ON mr.namespace_id = p.namespace_id AND mr.id = p.maven_repository_id
        WHERE p.namespace_id = r.namespace_id AND p.id = r.maven_package_id;
    ELSIF TG_ARGV[0] = 'maven_packages' THEN
        SELECT mr.repository_id INTO repo FROM maven_repositories mr
        WHERE mr.namespace_id = r.namespace_id AND mr.id = r.maven_repository_id;
    ELSE
        RAISE EXCEPTION 'accounting_touch: unexpected table %', TG_ARGV[0];
    END IF;
    IF repo IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ARRAY[r.namespace_id], ARRAY[repo], '{0}', '{0}', true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

DROP FUNCTION accounting_refs_maven(uuid, uuid, bytea);
DROP FUNCTION accounting_refs_npm(uuid, uuid, bytea);
DROP FUNCTION accounting_refs_container(uuid, uuid, bytea);
DROP FUNCTION accounting_owner_maven_package(uuid, uuid);
DROP FUNCTION accounting_owner_npm_package(uuid, uuid);
DROP FUNCTION accounting_owner_npm_version(uuid, uuid);
DROP FUNCTION accounting_owner_container_image(uuid, uuid);
DROP FUNCTION namespace_partition(uuid);
