-- +goose Up
-- npm_semver_key (00034) computed the same key ten to twenty times slower
-- than needed: its regexp_match with capture groups and {0,98} bounds ran
-- PostgreSQL's backtracking regex engine, about 150 µs per call, paid by
-- every npm publish (the key is an index expression of npm_versions).
-- This version validates with a match without captures (DFA only) and
-- takes the parts apart with split_part and string_to_array: about 8 µs
-- for a release, 22 µs for a prerelease. The keys are byte-for-byte the
-- same (store's TestNpmSemverKeyUnchanged compares both functions), so
-- npm_versions_semver_idx stays valid without a rebuild.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION npm_semver_key(v text) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    core text;
    pre  text;
    p    text[];
    k    text;
    id   text;
    n    int := 0;
    i    int;
BEGIN
    IF v !~ '^(?:0|[1-9][0-9]{0,98})\.(?:0|[1-9][0-9]{0,98})\.(?:0|[1-9][0-9]{0,98})(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z.-]*)?$' THEN
        RETURN convert_to(chr(1) || v, 'UTF8');
    END IF;
    core := split_part(v, '+', 1);
    i := strpos(core, '-');
    IF i > 0 THEN
        pre := substr(core, i + 1);
        core := left(core, i - 1);
    END IF;
    p := string_to_array(core, '.');
    k := lpad(length(p[1])::text, 2, '0') || p[1]
      || lpad(length(p[2])::text, 2, '0') || p[2]
      || lpad(length(p[3])::text, 2, '0') || p[3];
    IF pre IS NULL THEN
        RETURN convert_to(k || chr(3), 'UTF8');
    END IF;
    k := k || chr(2);
    FOREACH id IN ARRAY string_to_array(pre, '.') LOOP
        IF n > 0 THEN
            k := k || chr(1);
        END IF;
        IF translate(id, '0123456789', '') = '' AND length(ltrim(id, '0')) <= 99 THEN
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION npm_semver_key(v text) RETURNS bytea
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
