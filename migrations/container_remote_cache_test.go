package migrations_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const containerRemoteCacheVersion = 53

// TestContainerRemoteCacheUpgrade: a database of the release before
// 00053, holding a container remote repository with a cached image, a
// manifest and a tag, upgrades with migrations.Up (00053 and 00054): the
// remote gets its settings time and zero hit counters, the image its
// caching time; cache_validity_hours is range-checked; the children table
// takes rows whose keys are checked; counter_deltas accepts the hit
// counters; and the accounting triggers now count cached rows: a new
// cached manifest adds to the remote repository's artifacts and size,
// deleting it takes them off.
func TestContainerRemoteCacheUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, containerRemoteCacheVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	repo := f.repository(ns, 3, 2)
	remote := v7(t)
	f.must("container_remote_repositories", row{"id", remote, "namespace_id", ns, "repository_id", repo, "url", "https://upstream.example.test"})
	image := v7(t)
	f.must("container_remote_images", row{"id", image, "namespace_id", ns, "container_remote_repository_id", remote, "name", "library/app"})
	payload := bytes.Repeat([]byte{7}, 32)
	manifest := v7(t)
	f.must("container_remote_manifests", row{"id", manifest, "namespace_id", ns, "container_remote_image_id", image, "digest", payload,
		"media_type", "application/vnd.oci.image.manifest.v1+json", "blob_storage_attachment_id", f.blob(ns, payload, 40),
		"blob_sha256", payload, "size", int64(40)})
	f.must("container_remote_tags", row{"id", v7(t), "namespace_id", ns, "container_remote_image_id", image,
		"container_remote_manifest_id", manifest, "name", "latest"})
	before := time.Now()

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var (
		changed      time.Time
		hits, misses int64
		lastError    *string
	)
	if err := pool.QueryRow(ctx, `SELECT settings_changed_at, cache_hits, cache_misses, last_health_error
		FROM container_remote_repositories WHERE namespace_id = $1 AND id = $2`, ns, remote).Scan(&changed, &hits, &misses, &lastError); err != nil {
		t.Fatal(err)
	}
	if changed.Before(before.Add(-time.Minute)) || hits != 0 || misses != 0 || lastError != nil {
		t.Fatalf("remote after the upgrade: %v %d %d %v", changed, hits, misses, lastError)
	}
	var cachedAt time.Time
	if err := pool.QueryRow(ctx, `SELECT created_at FROM container_remote_images WHERE namespace_id = $1 AND id = $2`, ns, image).Scan(&cachedAt); err != nil {
		t.Fatal(err)
	}
	if cachedAt.Before(before.Add(-time.Minute)) {
		t.Fatalf("image created_at %v", cachedAt)
	}
	if _, err := pool.Exec(ctx, `UPDATE container_remote_repositories SET cache_validity_hours = 9000 WHERE namespace_id = $1`, ns); sqlState(err) != codeCheck {
		t.Fatalf("validity out of range: %v", err)
	}
	f.must("container_remote_manifest_children", row{"namespace_id", ns, "container_remote_image_id", image,
		"container_remote_manifest_id", manifest, "digest", bytes.Repeat([]byte{8}, 32)})
	if err := insert(ctx, pool, "container_remote_manifest_children", row{"namespace_id", ns, "container_remote_image_id", image,
		"container_remote_manifest_id", v7(t), "digest", bytes.Repeat([]byte{8}, 32)}); sqlState(err) != codeForeignKey {
		t.Fatalf("child of a missing manifest: %v", err)
	}
	f.must("counter_deltas", row{"id", v7(t), "namespace_id", ns, "target", int16(13), "target_id", remote, "field", int16(10), "delta", int64(3)})
	if err := insert(ctx, pool, "counter_deltas", row{"id", v7(t), "namespace_id", ns, "target", int16(13), "target_id", remote,
		"field", int16(7), "observed_at", time.Now()}); sqlState(err) != codeCheck {
		t.Fatalf("a timestamp delta for the remote: %v", err)
	}

	deltas := func(field int16) int64 {
		t.Helper()
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(delta), 0) FROM counter_deltas
			WHERE namespace_id = $1 AND target = 0 AND target_id = $2 AND field = $3`, ns, repo, field).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	second := bytes.Repeat([]byte{9}, 32)
	m2 := v7(t)
	f.must("container_remote_manifests", row{"id", m2, "namespace_id", ns, "container_remote_image_id", image, "digest", second,
		"media_type", "application/vnd.oci.image.manifest.v1+json", "blob_storage_attachment_id", f.blob(ns, second, 50),
		"blob_sha256", second, "size", int64(50)})
	if a, s := deltas(0), deltas(2); a != 1 || s != 50 {
		t.Fatalf("after a cached manifest: artifacts %+d size %+d, want +1 and +50", a, s)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM container_remote_manifests WHERE namespace_id = $1 AND id = $2`, ns, m2); err != nil {
		t.Fatal(err)
	}
	if a, s := deltas(0), deltas(2); a != 0 || s != 0 {
		t.Fatalf("after its delete: artifacts %+d size %+d, want 0 and 0", a, s)
	}
}
