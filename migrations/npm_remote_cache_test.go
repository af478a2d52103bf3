package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/migrations"
)

const npmRemoteCacheVersion = 55

// npmRemoteFixture is an npm remote repository with one cached package:
// a version with its tarball and the package's packument.
type npmRemoteFixture struct {
	ns, repo, remote, pkg, version, tarball, packument uuid.UUID
}

func populateNpmRemote(t *testing.T, f *fixture) npmRemoteFixture {
	t.Helper()
	var x npmRemoteFixture
	x.ns = f.namespace()
	x.repo = f.repository(x.ns, 2, 2)
	x.remote = v7(t)
	f.must("npm_remote_repositories", row{"id", x.remote, "namespace_id", x.ns, "repository_id", x.repo, "url", "https://upstream.example.test"})
	x.pkg = v7(t)
	f.must("npm_remote_packages", row{"id", x.pkg, "namespace_id", x.ns, "npm_remote_repository_id", x.remote, "name", "left-pad"})
	x.version = v7(t)
	f.must("npm_remote_versions", row{"id", x.version, "namespace_id", x.ns, "npm_remote_package_id", x.pkg,
		"version", "1.3.0", "package_json", `{"name": "left-pad", "version": "1.3.0"}`})
	tgz, doc := digest("left-pad-1.3.0.tgz"), digest("left-pad packument")
	x.tarball = v7(t)
	f.must("npm_remote_files", row{"id", x.tarball, "namespace_id", x.ns, "npm_remote_version_id", x.version,
		"file_name", "left-pad-1.3.0.tgz", "blob_storage_attachment_id", f.blob(x.ns, tgz, 700), "blob_sha256", tgz})
	x.packument = v7(t)
	f.must("npm_remote_metadata_files", row{"id", x.packument, "namespace_id", x.ns, "npm_remote_package_id", x.pkg,
		"kind", int16(0), "blob_storage_attachment_id", f.blob(x.ns, doc, 90), "blob_sha256", doc, "upstream_etag", `"abc"`})
	return x
}

// TestNpmRemoteCacheUpgrade: a database of the release before 00055,
// holding an npm remote repository with a cached version, its tarball and
// the packument, upgrades with migrations.Up: the remote keeps its stored
// validities and gets a settings time, zero hit counters and no health
// error; a new remote gets the one-hour metadata validity; both validities
// and the error are range-checked; the packument takes a Last-Modified;
// counter_deltas accepts the hit counters of target 14 and nothing else
// for it; the namespace goes to the front of the reconciliation queue
// (the old cached rows were never counted); and the triggers now count
// cached content: a new cached version adds an artifact to the remote
// repository and a component to the namespace, a tarball and a packument
// add their blob's size once per digest, and deletes take it all off.
func TestNpmRemoteCacheUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, npmRemoteCacheVersion)
	f := newFixture(t, pool)
	x := populateNpmRemote(t, f)
	if _, err := pool.Exec(ctx, `UPDATE namespace_statistics SET last_reconciled_at = now() WHERE namespace_id = $1`, x.ns); err != nil {
		t.Fatal(err)
	}
	before := time.Now()

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var (
		changed              time.Time
		hits, misses         int64
		lastError            *string
		validity, metaHours  int16
		lastModified         *string
		reconciledAt         time.Time
		reconciliationQueued bool
	)
	if err := pool.QueryRow(ctx, `SELECT settings_changed_at, cache_hits, cache_misses, last_health_error,
			cache_validity_hours, metadata_cache_validity_hours
		FROM npm_remote_repositories WHERE namespace_id = $1 AND id = $2`, x.ns, x.remote).Scan(
		&changed, &hits, &misses, &lastError, &validity, &metaHours); err != nil {
		t.Fatal(err)
	}
	if changed.Before(before.Add(-time.Minute)) || hits != 0 || misses != 0 || lastError != nil {
		t.Fatalf("remote after the upgrade: %v %d %d %v", changed, hits, misses, lastError)
	}
	if validity != 24 || metaHours != 24 {
		t.Fatalf("stored validities changed by the upgrade: %d %d, want 24 24", validity, metaHours)
	}
	if err := pool.QueryRow(ctx, `SELECT upstream_last_modified FROM npm_remote_metadata_files WHERE namespace_id = $1 AND id = $2`,
		x.ns, x.packument).Scan(&lastModified); err != nil || lastModified != nil {
		t.Fatalf("packument Last-Modified after the upgrade: %v %v", lastModified, err)
	}
	if err := pool.QueryRow(ctx, `SELECT last_reconciled_at, last_reconciled_at = 'epoch' FROM namespace_statistics WHERE namespace_id = $1`,
		x.ns).Scan(&reconciledAt, &reconciliationQueued); err != nil || !reconciliationQueued {
		t.Fatalf("namespace not queued for reconciliation: %v %v", reconciledAt, err)
	}

	second := f.namespace()
	secondRemote := v7(t)
	f.must("npm_remote_repositories", row{"id", secondRemote, "namespace_id", second, "repository_id", f.repository(second, 2, 2),
		"url", "https://upstream.example.test"})
	if n := f.count("npm_remote_repositories", "namespace_id = $1 AND id = $2 AND metadata_cache_validity_hours = 1 AND cache_validity_hours = 24",
		second, secondRemote); n != 1 {
		t.Fatalf("a new remote's default validities: want metadata 1 h and content 24 h")
	}
	for _, set := range []string{"cache_validity_hours = 8761", "metadata_cache_validity_hours = -1", "last_health_error = repeat('x', 1025)"} {
		if _, err := pool.Exec(ctx, `UPDATE npm_remote_repositories SET `+set+` WHERE namespace_id = $1 AND id = $2`, x.ns, x.remote); sqlState(err) != codeCheck {
			t.Errorf("%s: %v, want a check violation", set, err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE npm_remote_repositories SET cache_validity_hours = 8760, metadata_cache_validity_hours = 0
		WHERE namespace_id = $1 AND id = $2`, x.ns, x.remote); err != nil {
		t.Fatalf("validities at the bounds: %v", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE npm_remote_metadata_files SET upstream_last_modified = repeat('x', 256) WHERE namespace_id = $1`, x.ns); sqlState(err) != codeCheck {
		t.Errorf("a 256-character Last-Modified: %v, want a check violation", err)
	}
	f.must("counter_deltas", row{"id", v7(t), "namespace_id", x.ns, "target", int16(14), "target_id", x.remote, "field", int16(10), "delta", int64(3)})
	f.must("counter_deltas", row{"id", v7(t), "namespace_id", x.ns, "target", int16(14), "target_id", x.remote, "field", int16(11), "delta", int64(1)})
	if err := insert(ctx, pool, "counter_deltas", row{"id", v7(t), "namespace_id", x.ns, "target", int16(14), "target_id", x.remote,
		"field", int16(7), "observed_at", time.Now()}); sqlState(err) != codeCheck {
		t.Fatalf("a timestamp delta for the npm remote: %v", err)
	}
	// One past the last target (Maven proxies', 15).
	if err := insert(ctx, pool, "counter_deltas", row{"id", v7(t), "namespace_id", x.ns, "target", int16(16), "target_id", x.remote,
		"field", int16(10), "delta", int64(1)}); sqlState(err) != codeCheck {
		t.Fatalf("target 16: %v", err)
	}
	var indexDef string
	if err := pool.QueryRow(ctx, `SELECT string_agg(indexdef, ';') FROM pg_indexes WHERE indexname = 'npm_remote_versions_last_downloaded_at_idx'`).Scan(&indexDef); err != nil || indexDef == "" {
		t.Fatalf("last-download index: %q %v", indexDef, err)
	}

	repoDelta := func(field int16) int64 {
		t.Helper()
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(delta), 0) FROM counter_deltas
			WHERE namespace_id = $1 AND target = 0 AND target_id = $2 AND field = $3`, x.ns, x.repo, field).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	components := func() int64 {
		t.Helper()
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(delta), 0) FROM counter_deltas
			WHERE namespace_id = $1 AND target = 1 AND field = 6`, x.ns).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	v2 := v7(t)
	f.must("npm_remote_versions", row{"id", v2, "namespace_id", x.ns, "npm_remote_package_id", x.pkg,
		"version", "1.3.1", "package_json", `{"name": "left-pad", "version": "1.3.1"}`})
	if a, c := repoDelta(0), components(); a != 1 || c != 1 {
		t.Fatalf("after a cached version: artifacts %+d components %+d, want +1 +1", a, c)
	}
	tgz2 := digest("left-pad-1.3.1.tgz")
	file2 := v7(t)
	f.must("npm_remote_files", row{"id", file2, "namespace_id", x.ns, "npm_remote_version_id", v2,
		"file_name", "left-pad-1.3.1.tgz", "blob_storage_attachment_id", f.blob(x.ns, tgz2, 800), "blob_sha256", tgz2})
	if s := repoDelta(2); s != 800 {
		t.Fatalf("after a cached tarball: size %+d, want +800", s)
	}
	// The same bytes as a packument of another package in the same remote:
	// a second reference to a digest already counted adds nothing.
	pkg2 := v7(t)
	f.must("npm_remote_packages", row{"id", pkg2, "namespace_id", x.ns, "npm_remote_repository_id", x.remote, "name", "right-pad"})
	f.must("npm_remote_metadata_files", row{"id", v7(t), "namespace_id", x.ns, "npm_remote_package_id", pkg2,
		"kind", int16(0), "blob_storage_attachment_id", f.attach(x.ns, tgz2), "blob_sha256", tgz2})
	if s := repoDelta(2); s != 800 {
		t.Fatalf("after a second reference to the same digest: size %+d, want +800", s)
	}
	doc2 := digest("right-pad packument 2")
	f.must("npm_remote_metadata_files", row{"id", v7(t), "namespace_id", x.ns, "npm_remote_package_id", pkg2,
		"kind", int16(1), "blob_storage_attachment_id", f.blob(x.ns, doc2, 60), "blob_sha256", doc2})
	if s := repoDelta(2); s != 860 {
		t.Fatalf("after a new packument: size %+d, want +860", s)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM npm_remote_files WHERE namespace_id = $1 AND id = $2`, x.ns, file2); err != nil {
		t.Fatal(err)
	}
	if s := repoDelta(2); s != 860 {
		t.Fatalf("after deleting one of two references: size %+d, want +860", s)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM npm_remote_metadata_files WHERE namespace_id = $1 AND npm_remote_package_id = $2`, x.ns, pkg2); err != nil {
		t.Fatal(err)
	}
	if s := repoDelta(2); s != 0 {
		t.Fatalf("after deleting the last references: size %+d, want 0", s)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM npm_remote_versions WHERE namespace_id = $1 AND id = $2`, x.ns, v2); err != nil {
		t.Fatal(err)
	}
	if a, c := repoDelta(0), components(); a != 0 || c != 0 {
		t.Fatalf("after deleting the version: artifacts %+d components %+d, want 0 0", a, c)
	}
}

// TestNpmRemoteCacheDown: 00055's Down on a database holding cached npm
// content and hit counters takes the schema back to 00054 (the counters of
// target 14 are dropped with the constraint that allowed them; cached
// rows stay), and the Up that follows applies again.
func TestNpmRemoteCacheDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t) // a clone of the migrated template: the current schema
	f := newFixture(t, pool)
	x := populateNpmRemote(t, f)
	f.must("counter_deltas", row{"id", v7(t), "namespace_id", x.ns, "target", int16(14), "target_id", x.remote, "field", int16(10), "delta", int64(2)})
	if _, err := pool.Exec(ctx, `UPDATE npm_remote_repositories SET last_health_error = 'upstream timed out' WHERE namespace_id = $1`, x.ns); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE npm_remote_metadata_files SET upstream_last_modified = 'Mon, 02 Jan 2006 15:04:05 GMT' WHERE namespace_id = $1`, x.ns); err != nil {
		t.Fatal(err)
	}

	downTo(t, pool, npmRemoteCacheVersion-1)
	if n := f.count("counter_deltas", "namespace_id = $1 AND target = 14", x.ns); n != 0 {
		t.Fatalf("%d deltas of target 14 left", n)
	}
	if err := insert(ctx, pool, "counter_deltas", row{"id", v7(t), "namespace_id", x.ns, "target", int16(14), "target_id", x.remote,
		"field", int16(10), "delta", int64(1)}); sqlState(err) != codeCheck {
		t.Fatalf("target 14 after the Down: %v, want a check violation", err)
	}
	left := queryStrings(ctx, t, pool, `
SELECT table_name || '.' || column_name FROM information_schema.columns
WHERE table_schema = 'public' AND (
  (table_name = 'npm_remote_repositories' AND column_name IN ('last_health_error', 'settings_changed_at', 'cache_hits', 'cache_misses'))
  OR (table_name = 'npm_remote_metadata_files' AND column_name = 'upstream_last_modified'))
UNION ALL
SELECT 'function ' || proname FROM pg_proc WHERE proname LIKE 'accounting_npm_remote%'
UNION ALL
SELECT 'trigger ' || tgname FROM pg_trigger WHERE tgname LIKE 'trg_accounting_npm_remote%'
UNION ALL
SELECT 'index ' || indexname FROM pg_indexes WHERE indexname = 'npm_remote_versions_last_downloaded_at_idx'`)
	if len(left) > 0 {
		t.Fatalf("left after the Down: %v", first(left, 20))
	}
	if n := f.count("npm_remote_files", "namespace_id = $1", x.ns); n != 1 {
		t.Fatalf("cached tarball rows after the Down: %d, want 1", n)
	}
	// Without the triggers a new cached version is not counted.
	counted := f.count("counter_deltas", "namespace_id = $1 AND target = 0", x.ns)
	f.must("npm_remote_versions", row{"id", v7(t), "namespace_id", x.ns, "npm_remote_package_id", x.pkg,
		"version", "2.0.0", "package_json", `{}`})
	if n := f.count("counter_deltas", "namespace_id = $1 AND target = 0", x.ns); n != counted {
		t.Fatalf("%d repository deltas recorded without the triggers", n-counted)
	}

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("Up after the Down: %v", err)
	}
	if n := f.count("npm_remote_repositories", "namespace_id = $1 AND cache_hits = 0 AND last_health_error IS NULL", x.ns); n != 1 {
		t.Fatalf("remote after Down and Up")
	}
}
