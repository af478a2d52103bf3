-- +goose Up
-- The admin's namespace list pages by slug, searched by slug prefix, or by
-- creation time. Slugs are compared byte by byte (COLLATE "C") so that
-- order, keyset and a prefix range are one index range whatever the
-- database's default collation (namespaces_slug_key follows it).
CREATE INDEX namespaces_slug_c_idx ON namespaces (slug COLLATE "C");
CREATE INDEX namespaces_created_at_idx ON namespaces (created_at, id);

-- +goose Down
DROP INDEX IF EXISTS namespaces_created_at_idx;
DROP INDEX IF EXISTS namespaces_slug_c_idx;
