package migrations_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/migrations"
)

// mavenRemoteCacheVersion is the last migration before 00056.
const mavenRemoteCacheVersion = 55

// TestMavenRemoteCacheUpgrade: a database of the release before 00056,
// holding a Maven remote repository with a cached package, version and
// file, upgrades with migrations.Up: the remote gets its settings time,
// zero hit counters and the default negative cache, keeps its metadata
// validity (only the default changes); the file gets size 0 and no
// Last-Modified; the validities and the negative cache are range-checked;
// counter_deltas accepts the Maven hit counters (target 15) and nothing
// else for them; the namespace goes to the front of the reconciliation
// queue; and the accounting triggers now count cached rows.
func TestMavenRemoteCacheUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, mavenRemoteCacheVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	repo := f.repository(ns, 1, 2)
	remote := v7(t)
	f.must("maven_remote_repositories", row{"id", remote, "namespace_id", ns, "repository_id", repo, "url", "https://repo.example.test",
		"metadata_cache_validity_hours", int16(6)})
	pkg := v7(t)
	f.must("maven_remote_packages", row{"id", pkg, "namespace_id", ns, "maven_remote_repository_id", remote,
		"group_id", "com.example", "artifact_id", "lib"})
	version := v7(t)
	f.must("maven_remote_versions", row{"id", version, "namespace_id", ns, "maven_remote_package_id", pkg, "version", "1.0"})
	sha := bytes.Repeat([]byte{5}, 32)
	f.must("maven_remote_files", row{"id", v7(t), "namespace_id", ns, "maven_remote_package_id", pkg, "maven_remote_version_id", version,
		"file_name", "lib-1.0.jar", "blob_storage_attachment_id", f.blob(ns, sha, 30), "blob_sha256", sha,
		"sha1", bytes.Repeat([]byte{1}, 20), "sha512", bytes.Repeat([]byte{2}, 64)})
	if _, err := pool.Exec(ctx, `UPDATE namespace_statistics SET last_reconciled_at = now() WHERE namespace_id = $1`, ns); err != nil {
		t.Fatal(err)
	}
	before := time.Now()

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var (
		changed      time.Time
		hits, misses int64
		neg, meta    int16
		lastError    *string
	)
	if err := pool.QueryRow(ctx, `SELECT settings_changed_at, cache_hits, cache_misses, negative_cache_minutes,
		metadata_cache_validity_hours, last_health_error
		FROM maven_remote_repositories WHERE namespace_id = $1 AND id = $2`, ns, remote).Scan(&changed, &hits, &misses, &neg, &meta, &lastError); err != nil {
		t.Fatal(err)
	}
	if changed.Before(before.Add(-time.Minute)) || hits != 0 || misses != 0 || neg != 15 || meta != 6 || lastError != nil {
		t.Fatalf("remote after the upgrade: %v %d %d %d %d %v", changed, hits, misses, neg, meta, lastError)
	}
	var (
		size int64
		lm   *time.Time
	)
	if err := pool.QueryRow(ctx, `SELECT size, upstream_last_modified FROM maven_remote_files WHERE namespace_id = $1`, ns).Scan(&size, &lm); err != nil ||
		size != 0 || lm != nil {
		t.Fatalf("file after the upgrade: %d %v %v", size, lm, err)
	}
	var reconciled time.Time
	if err := pool.QueryRow(ctx, `SELECT last_reconciled_at FROM namespace_statistics WHERE namespace_id = $1`, ns).Scan(&reconciled); err != nil ||
		reconciled.After(time.Unix(1, 0)) {
		t.Fatalf("the namespace is not queued for reconciliation: %v %v", reconciled, err)
	}
	for _, bad := range []string{
		`UPDATE maven_remote_repositories SET metadata_cache_validity_hours = 9000 WHERE namespace_id = $1`,
		`UPDATE maven_remote_repositories SET cache_validity_hours = -1 WHERE namespace_id = $1`,
		`UPDATE maven_remote_repositories SET negative_cache_minutes = 1441 WHERE namespace_id = $1`,
		`UPDATE maven_remote_files SET size = -1 WHERE namespace_id = $1`,
	} {
		if _, err := pool.Exec(ctx, bad, ns); sqlState(err) != codeCheck {
			t.Fatalf("%s: %v", bad, err)
		}
	}
	var def int16
	remote2, repo2 := v7(t), f.repository(ns, 1, 2)
	f.must("maven_remote_repositories", row{"id", remote2, "namespace_id", ns, "repository_id", repo2, "url", "https://other.example.test"})
	if err := pool.QueryRow(ctx, `SELECT metadata_cache_validity_hours FROM maven_remote_repositories WHERE namespace_id = $1 AND id = $2`,
		ns, remote2).Scan(&def); err != nil || def != 1 {
		t.Fatalf("metadata validity default %d %v", def, err)
	}
	f.must("counter_deltas", row{"id", v7(t), "namespace_id", ns, "target", int16(15), "target_id", remote, "field", int16(11), "delta", int64(2)})
	if err := insert(ctx, pool, "counter_deltas", row{"id", v7(t), "namespace_id", ns, "target", int16(15), "target_id", remote,
		"field", int16(2), "delta", int64(1)}); sqlState(err) != codeCheck {
		t.Fatalf("a size delta for the remote: %v", err)
	}

	deltas := func(target int16, id any, field int16) int64 {
		t.Helper()
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(delta), 0) FROM counter_deltas
			WHERE namespace_id = $1 AND target = $2 AND target_id = $3 AND field = $4`, ns, target, id, field).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	v2 := v7(t)
	f.must("maven_remote_versions", row{"id", v2, "namespace_id", ns, "maven_remote_package_id", pkg, "version", "2.0"})
	other := bytes.Repeat([]byte{6}, 32)
	file2 := v7(t)
	f.must("maven_remote_files", row{"id", file2, "namespace_id", ns, "maven_remote_package_id", pkg, "maven_remote_version_id", v2,
		"file_name", "lib-2.0.jar", "blob_storage_attachment_id", f.blob(ns, other, 50), "blob_sha256", other,
		"sha1", bytes.Repeat([]byte{1}, 20), "sha512", bytes.Repeat([]byte{2}, 64), "size", int64(50)})
	if a, s, c := deltas(0, repo, 0), deltas(0, repo, 2), deltas(1, ns, 6); a != 1 || s != 50 || c != 1 {
		t.Fatalf("after a cached version and file: artifacts %+d size %+d components %+d, want +1, +50, +1", a, s, c)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM maven_remote_files WHERE namespace_id = $1 AND id = $2`, ns, file2); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM maven_remote_versions WHERE namespace_id = $1 AND id = $2`, ns, v2); err != nil {
		t.Fatal(err)
	}
	if a, s, c := deltas(0, repo, 0), deltas(0, repo, 2), deltas(1, ns, 6); a != 0 || s != 0 || c != 0 {
		t.Fatalf("after their delete: artifacts %+d size %+d components %+d, want 0", a, s, c)
	}
}
