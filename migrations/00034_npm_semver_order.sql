-- +goose Up
-- SemVer precedence as an index order, for the management API's listing of
-- npm versions (newest release first, keyset-paginated). npm_semver_key maps
-- a strict SemVer version to a bytea whose byte order is SemVer precedence:
--   major, minor, patch: each as a 2-digit length then its digits (a longer
--     number is larger; numbers of equal length compare digit by digit);
--   then \x03 for a release or \x02 for a prerelease (a prerelease ranks
--     below its release), followed by the prerelease identifiers separated
--     by \x01 (lower than every identifier character, so a shorter set of
--     equal identifiers ranks first): numeric identifiers as '1', a 2-digit
--     length and the digits; alphanumeric ones as '2' and their ASCII text
--     (numeric identifiers rank below alphanumeric ones).
-- Build metadata is ignored, as SemVer says. A string that is not SemVer
-- (the registry never stores one) maps to \x01 and its text, below every
-- version. bytea compares bytewise whatever the database collation.
-- +goose StatementBegin
CREATE FUNCTION npm_semver_key(v text) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    m   text[];
    k   text;
    id  text;
    n   int := 0;
BEGIN
    m := regexp_match(v, '^(0|[1-9][0-9]{0,98})\.(0|[1-9][0-9]{0,98})\.(0|[1-9][0-9]{0,98})'
                         '(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]*)?$');
    IF m IS NULL THEN
        RETURN convert_to(chr(1) || v, 'UTF8');
    END IF;
    k := lpad(length(m[1])::text, 2, '0') || m[1]
      || lpad(length(m[2])::text, 2, '0') || m[2]
      || lpad(length(m[3])::text, 2, '0') || m[3];
    IF m[4] IS NULL THEN
        RETURN convert_to(k || chr(3), 'UTF8');
    END IF;
    k := k || chr(2);
    FOREACH id IN ARRAY string_to_array(m[4], '.') LOOP
        IF n > 0 THEN
            k := k || chr(1);
        END IF;
        IF id ~ '^[0-9]+$' AND length(ltrim(id, '0')) <= 99 THEN
            id := ltrim(id, '0');
            k := k || '1' || lpad(length(id)::text, 2, '0') || id;
        ELSE
            k := k || '2' || id;
        END IF;
        n := n + 1;
    END LOOP;
    RETURN convert_to(k, 'UTF8');
END
$$;
-- +goose StatementEnd
-- Active versions of a package by precedence (id breaks ties, so the
-- keyset is total); scanned backward for "newest first".
CREATE INDEX npm_versions_semver_idx
    ON npm_versions (namespace_id, npm_package_id, npm_semver_key(version), id) WHERE soft_deleted_at IS NULL;

-- +goose Down
DROP INDEX IF EXISTS npm_versions_semver_idx;
DROP FUNCTION IF EXISTS npm_semver_key(text);
