-- +goose Up
-- Every version row of a package, soft-deleted ones included, by package.
-- A publish checks the version it adds against every version the name
-- ever had (409 for one that exists or existed) and counts them for the
-- per-package limit (docs/schema.md, "Lengths, names and limits") (npmPublishLockSQL); deleting or purging a package reads
-- them all too. The other indexes of npm_versions are partial (active or
-- trashed rows only), so those reads scanned every version row of the
-- namespace's partition: 7 ms per publish beside one package of 20,000
-- versions (TestNpmPublishCheckReadsOnePackage). soft_deleted_at is
-- included so the check reads the index only.
CREATE INDEX npm_versions_package_idx
    ON npm_versions (namespace_id, npm_package_id, version) INCLUDE (soft_deleted_at);

-- +goose Down
DROP INDEX IF EXISTS npm_versions_package_idx;
