package migrations_test

import (
	"context"
	"testing"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const trashRetentionVersion = 43

// TestTrashRetentionUpgrade: a database of the release before 00043,
// holding a namespace with a soft-deleted repository, upgrades with
// migrations.Up; the namespace gets the default retention of 7 days, the
// bounds are enforced, and the trash index of container blobs exists.
func TestTrashRetentionUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, trashRetentionVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	repo := f.repository(ns, 0, 0)
	if _, err := pool.Exec(ctx, `UPDATE repositories SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`, ns, repo); err != nil {
		t.Fatal(err)
	}

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var days int
	if err := pool.QueryRow(ctx, `SELECT trash_retention_days FROM namespaces WHERE id = $1`, ns).Scan(&days); err != nil || days != 7 {
		t.Fatalf("retention of an existing namespace after the upgrade: %d %v", days, err)
	}
	if n := f.count("repositories", "namespace_id = $1 AND soft_deleted_at IS NOT NULL", ns); n != 1 {
		t.Fatalf("trashed repository after the upgrade: %d rows", n)
	}
	for _, ok := range []int{0, 3650} {
		if _, err := pool.Exec(ctx, `UPDATE namespaces SET trash_retention_days = $2 WHERE id = $1`, ns, ok); err != nil {
			t.Errorf("retention %d: %v", ok, err)
		}
	}
	for _, bad := range []int{-1, 3651} {
		_, err := pool.Exec(ctx, `UPDATE namespaces SET trash_retention_days = $2 WHERE id = $1`, ns, bad)
		if c := sqlState(err); c != codeCheck {
			t.Errorf("retention %d: %v", bad, err)
		}
	}
	var idx bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = 'public' AND indexname = 'container_blobs_trash_idx')`).Scan(&idx); err != nil || !idx {
		t.Fatalf("container_blobs_trash_idx: %v %v", idx, err)
	}
}
