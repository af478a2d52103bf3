-- +goose Up
-- An image holds at most 25,000 manifests, and a push of a new manifest
-- counted the image's manifests once its repository's buffered
-- artifacts_count came within the fold's margin (10,000) of the limit.
-- In a repository of more than 15,000 manifests every push then read all
-- of its image's manifest rows: 1.6 to 2.3 ms a push into an image of a
-- few thousand, growing with the image. container_images gets its own
-- buffered artifacts_count (its manifest rows, trashed ones included, as
-- the repository's counts them), and a push counts exactly only when the
-- image's count is within the margin of the limit.
--
-- The ALTER locks every partition of container_images: a transaction
-- that inserted or deleted manifests holds a lock of the image's
-- partition from its accounting trigger's lookup of the image, so the
-- ALTER waits for it to end and the backfill below counts its rows; any
-- later one runs the new trigger.
ALTER TABLE container_images ADD COLUMN artifacts_count bigint NOT NULL DEFAULT 0; -- buffered counter

-- Field 0 (artifacts_count) is buffered for target 2 (container_images):
-- its mask goes from 128 (field 7) to 129.
ALTER TABLE counter_deltas
    DROP CONSTRAINT counter_deltas_target_field_valid,
    ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
        target BETWEEN 0 AND 15 AND field BETWEEN 0 AND 11
        AND ((('{519,96,129,128,128,132,128,132,152,132,128,132,256,3072,3072,3072}'::integer[])[target + 1] >> field) & 1) = 1);

-- accounting_rewrite redefines a function with from_text replaced by
-- to_text, and stops unless its definition holds from_text exactly once.
-- +goose StatementBegin
CREATE FUNCTION accounting_rewrite(fn regprocedure, from_text text, to_text text) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    def text := pg_get_functiondef(fn);
BEGIN
    IF (length(def) - length(replace(def, from_text, ''))) / length(from_text) <> 1 THEN
        RAISE EXCEPTION '%: % is not there exactly once', fn, from_text;
    END IF;
    EXECUTE replace(def, from_text, to_text);
END;
$$;
-- +goose StatementEnd

-- The manifests' trigger records each image's manifests in the statement
-- that records the namespace's and the repositories' (a namespace being
-- deleted takes its deltas with it, as for the namespace's branch).
SELECT accounting_rewrite('accounting_container_refs()',
    E'          GROUP BY c.namespace_id\n          UNION ALL\n',
    E'          GROUP BY c.namespace_id\n          UNION ALL\n'
    || E'          SELECT c.namespace_id, 2::smallint, c.container_image_id, 0::smallint, sign * count(*), NULL::timestamptz\n'
    || E'          FROM changed c\n'
    || E'          WHERE manifests AND EXISTS (SELECT 1 FROM namespaces n WHERE n.id = c.namespace_id)\n'
    || E'          GROUP BY c.namespace_id, c.container_image_id\n          UNION ALL\n');

UPDATE container_images i SET artifacts_count = m.n
FROM (SELECT namespace_id, container_image_id, count(*) AS n FROM container_manifests GROUP BY 1, 2) m
WHERE i.namespace_id = m.namespace_id AND i.id = m.container_image_id;

-- +goose Down
SELECT accounting_rewrite('accounting_container_refs()',
    E'          GROUP BY c.namespace_id\n          UNION ALL\n'
    || E'          SELECT c.namespace_id, 2::smallint, c.container_image_id, 0::smallint, sign * count(*), NULL::timestamptz\n'
    || E'          FROM changed c\n'
    || E'          WHERE manifests AND EXISTS (SELECT 1 FROM namespaces n WHERE n.id = c.namespace_id)\n'
    || E'          GROUP BY c.namespace_id, c.container_image_id\n          UNION ALL\n',
    E'          GROUP BY c.namespace_id\n          UNION ALL\n');
DROP FUNCTION accounting_rewrite(regprocedure, text, text);
DELETE FROM counter_deltas WHERE target = 2 AND field = 0;
ALTER TABLE counter_deltas
    DROP CONSTRAINT counter_deltas_target_field_valid,
    ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
        target BETWEEN 0 AND 15 AND field BETWEEN 0 AND 11
        AND ((('{519,96,128,128,128,132,128,132,152,132,128,132,256,3072,3072,3072}'::integer[])[target + 1] >> field) & 1) = 1);
ALTER TABLE container_images DROP COLUMN artifacts_count;
