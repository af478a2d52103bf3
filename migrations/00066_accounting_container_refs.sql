-- +goose Up
-- A manifest's insert or delete fired two accounting triggers, each a
-- statement-level function of its own: accounting_artifacts (the
-- namespace's and the repository's artifact counts, and the repository's
-- last_updated_at) and accounting_blob_refs (the repository's size, when
-- the manifest's payload is the first or last reference to its blob there).
-- Each looked the manifests' images up again, each went through the
-- generic dispatchers (accounting_owner, accounting_repository_refs), and
-- each inserted its deltas with statements of its own: twelve statements
-- per manifest pushed. In a fresh transaction each costs its executor's
-- start on partitioned tables, so on a tag push (a config blob, a manifest
-- and its tag) these two triggers were about a fifth of PostgreSQL's time.
--
-- accounting_container_refs does both: one lookup of the images, the same
-- blob lock and reference count per digest, then one insert of every delta
-- (the namespace's artifacts, and per repository its artifacts, its size
-- and one last_updated_at). The deltas summed per target and field are the
-- ones the two triggers recorded, with as many last_updated_at rows. The
-- image's blob rows (container_blobs) take it too, for their size alone,
-- calling the container lookups directly instead of the dispatchers.
--
-- A tag pushed with its manifest touched the repository's last_updated_at
-- a second time in the same transaction, with the same now(): the tag's row
-- trigger looked the image up again and inserted a delta of its own. The
-- images a transaction has touched are kept in a transaction-local setting
-- (artifact_registry.touched_images; reverted with a rolled-back savepoint,
-- bounded in length), and accounting_touch skips a container row whose
-- image is there. last_updated_at merges by max, so one stamp per
-- transaction records the same value.
-- +goose StatementBegin
CREATE FUNCTION accounting_touched_images(images text) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    seen text := coalesce(nullif(current_setting('artifact_registry.touched_images', true), ''), ',');
BEGIN
    -- Past a few thousand characters a transaction touches so many images
    -- that searching the list would cost more than the stamps it saves.
    IF images IS NOT NULL AND length(seen) + length(images) < 4000 THEN
        PERFORM set_config('artifact_registry.touched_images', seen || images || ',', true);
    END IF;
END;
$$;
-- +goose StatementEnd

-- accounting_rewrite_touch redefines accounting_touch with from_text
-- replaced by to_text, and stops unless it holds from_text exactly once:
-- Up adds the check to the container tables' branch, Down takes it out,
-- then drops the function. Nothing else of the trigger changes.
-- +goose StatementBegin
CREATE FUNCTION accounting_rewrite_touch(from_text text, to_text text) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    def text := pg_get_functiondef('accounting_touch'::regproc);
BEGIN
    IF (length(def) - length(replace(def, from_text, ''))) / length(from_text) <> 1 THEN
        RAISE EXCEPTION 'accounting_touch: % is not there exactly once', from_text;
    END IF;
    EXECUTE replace(def, from_text, to_text);
END;
$$;
-- +goose StatementEnd

SELECT accounting_rewrite_touch(
    E'(\'container_manifests\', \'container_tags\') THEN\n        SELECT o.repository_id INTO repo FROM accounting_owner_container_image(r.namespace_id, r.container_image_id) o;\n',
    E'(\'container_manifests\', \'container_tags\') THEN\n        IF strpos(current_setting(\'artifact_registry.touched_images\', true), \',\' || r.container_image_id || \',\') > 0 THEN\n            RETURN NULL;\n        END IF;\n        SELECT o.repository_id INTO repo FROM accounting_owner_container_image(r.namespace_id, r.container_image_id) o;\n        IF repo IS NOT NULL THEN\n            PERFORM accounting_touched_images(r.container_image_id::text);\n        END IF;\n');

-- +goose StatementBegin
CREATE FUNCTION accounting_container_refs() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ins boolean := TG_OP = 'INSERT';
    manifests boolean := TG_ARGV[0] = 'container_manifests';
    sign bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    ns uuid[];
    repos uuid[];
    frepos uuid[];
    shas bytea[];
    ks bigint[];
    sz bigint;
    refs bigint;
    sizes bigint[];
    images text;
BEGIN
    SELECT array_agg(x.namespace_id ORDER BY x.namespace_id, x.sha), array_agg(x.repository_id ORDER BY x.namespace_id, x.sha),
           array_agg(x.frepo ORDER BY x.namespace_id, x.sha), array_agg(x.sha ORDER BY x.namespace_id, x.sha),
           array_agg(x.k ORDER BY x.namespace_id, x.sha), string_agg(x.owners, ',')
    INTO ns, repos, frepos, shas, ks, images
    FROM (SELECT g.ns AS namespace_id, o.repository_id, o.frepo, g.sha, sum(g.k)::bigint AS k,
                 string_agg(g.owner::text, ',') AS owners
          FROM (SELECT c.namespace_id AS ns, c.container_image_id AS owner, c.blob_sha256 AS sha, count(*) AS k
                FROM changed c GROUP BY 1, 2, 3) g
          CROSS JOIN LATERAL accounting_owner_container_image(g.ns, g.owner) o
          WHERE o.frepo IS NOT NULL
          GROUP BY 1, 2, 3, 4) x;

    -- sizes[i]: the size delta of digest i in its repository; blobs are
    -- locked in (namespace, digest) order, as every accounting trigger does.
    sizes := array_fill(0::bigint, ARRAY[coalesce(cardinality(ns), 0)]);
    FOR i IN 1 .. coalesce(cardinality(ns), 0) LOOP
        sz := accounting_lock_blob(ns[i], shas[i]);
        CONTINUE WHEN sz IS NULL;
        refs := accounting_refs_container(ns[i], frepos[i], shas[i]);
        IF (ins AND refs = ks[i]) OR (NOT ins AND refs = 0) THEN
            sizes[i] := CASE WHEN ins THEN sz ELSE -sz END;
        END IF;
    END LOOP;

    IF NOT manifests AND 0 = ALL(sizes) THEN
        RETURN NULL;
    END IF;
    INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta, observed_at)
    SELECT gen_uuidv7(), d.ns, d.target, d.target_id, d.field, d.delta, d.observed_at
    FROM (SELECT c.namespace_id AS ns, 1::smallint AS target, c.namespace_id AS target_id, 6::smallint AS field,
                 sign * count(*) AS delta, NULL::timestamptz AS observed_at
          FROM changed c
          WHERE manifests AND EXISTS (SELECT 1 FROM namespaces n WHERE n.id = c.namespace_id)
          GROUP BY c.namespace_id
          UNION ALL
          SELECT r.ns, 0::smallint, r.repo, f.field, f.delta, f.observed_at
          FROM (SELECT u.ns, u.repo, sum(u.k)::bigint AS k, sum(u.size)::bigint AS size
                FROM unnest(ns, repos, ks, sizes) AS u(ns, repo, k, size)
                GROUP BY 1, 2) r
          CROSS JOIN LATERAL (VALUES
              (0::smallint, CASE WHEN manifests THEN sign * r.k ELSE 0 END, NULL::timestamptz),
              (2::smallint, r.size, NULL::timestamptz),
              (9::smallint, NULL::bigint, CASE WHEN manifests THEN now() END)
          ) AS f(field, delta, observed_at)
          WHERE f.delta <> 0 OR f.observed_at IS NOT NULL) d;
    IF manifests THEN
        PERFORM accounting_touched_images(images);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES ('container_blobs', ARRAY['trg_accounting_blob_refs']),
                                   ('container_manifests', ARRAY['trg_accounting_artifacts', 'trg_accounting_blob_refs'])) AS v(tbl, old) LOOP
        FOR rel IN SELECT t.tbl::regclass UNION ALL
                   SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = t.tbl::regclass LOOP
            FOR i IN 1 .. cardinality(t.old) LOOP
                EXECUTE format('DROP TRIGGER %I ON %s', t.old[i] || '_insert', rel);
                EXECUTE format('DROP TRIGGER %I ON %s', t.old[i] || '_delete', rel);
            END LOOP;
            EXECUTE format('CREATE TRIGGER trg_accounting_container_refs_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS changed '
                           'FOR EACH STATEMENT EXECUTE FUNCTION accounting_container_refs(%L)', rel, t.tbl);
            EXECUTE format('CREATE TRIGGER trg_accounting_container_refs_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS changed '
                           'FOR EACH STATEMENT EXECUTE FUNCTION accounting_container_refs(%L)', rel, t.tbl);
        END LOOP;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t record;
    rel regclass;
BEGIN
    FOR t IN SELECT * FROM (VALUES ('container_blobs', ARRAY['accounting_blob_refs'], ARRAY['trg_accounting_blob_refs']),
                                   ('container_manifests', ARRAY['accounting_artifacts', 'accounting_blob_refs'],
                                    ARRAY['trg_accounting_artifacts', 'trg_accounting_blob_refs'])) AS v(tbl, fns, names) LOOP
        FOR rel IN SELECT t.tbl::regclass UNION ALL
                   SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = t.tbl::regclass LOOP
            EXECUTE format('DROP TRIGGER trg_accounting_container_refs_insert ON %s', rel);
            EXECUTE format('DROP TRIGGER trg_accounting_container_refs_delete ON %s', rel);
            FOR i IN 1 .. cardinality(t.fns) LOOP
                EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS changed '
                               'FOR EACH STATEMENT EXECUTE FUNCTION %I(%L)', t.names[i] || '_insert', rel, t.fns[i], t.tbl);
                EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS changed '
                               'FOR EACH STATEMENT EXECUTE FUNCTION %I(%L)', t.names[i] || '_delete', rel, t.fns[i], t.tbl);
            END LOOP;
        END LOOP;
    END LOOP;
END;
$$;
-- +goose StatementEnd
DROP FUNCTION accounting_container_refs();
SELECT accounting_rewrite_touch(
    E'(\'container_manifests\', \'container_tags\') THEN\n        IF strpos(current_setting(\'artifact_registry.touched_images\', true), \',\' || r.container_image_id || \',\') > 0 THEN\n            RETURN NULL;\n        END IF;\n        SELECT o.repository_id INTO repo FROM accounting_owner_container_image(r.namespace_id, r.container_image_id) o;\n        IF repo IS NOT NULL THEN\n            PERFORM accounting_touched_images(r.container_image_id::text);\n        END IF;\n',
    E'(\'container_manifests\', \'container_tags\') THEN\n        SELECT o.repository_id INTO repo FROM accounting_owner_container_image(r.namespace_id, r.container_image_id) o;\n');
DROP FUNCTION accounting_rewrite_touch(text, text);
DROP FUNCTION accounting_touched_images(text);
