package migrations_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

const accountingContainerRefsVersion = 66

// TestAccountingContainerRefsUpgrade: the inserts and deletes of
// TestAccountingOwnerLookupUpgrade, manifests across images and
// repositories among them, record the same counter_deltas after every
// statement at 00065 (two triggers per manifest statement), after the
// upgrade to 00066 (one) and after its Down; the medians of the timed
// statements are logged with -v.
func TestAccountingContainerRefsUpgrade(t *testing.T) {
	accountingRoundTrip(t, accountingContainerRefsVersion, "accounting_container_refs")
}

// TestAccountingTouchOncePerTransaction: a manifest pushed with its tag
// stamps its repository's last_updated_at once; a tag in a later
// transaction, on another image, or after the manifest's savepoint was
// rolled back still stamps it.
func TestAccountingTouchOncePerTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	f := newFixture(t, pool)
	ns := f.namespace()
	repo := f.repository(ns, 3, 0)
	cr := f.child("container_repositories", ns, repo)
	img, img2 := v7(t), v7(t)
	f.must("container_images", row{"id", img, "namespace_id", ns, "container_repository_id", cr, "name", "app"})
	f.must("container_images", row{"id", img2, "namespace_id", ns, "container_repository_id", cr, "name", "other"})
	stamps := func() int {
		return f.count("counter_deltas", "namespace_id = $1 AND target = 0 AND target_id = $2 AND field = 9", ns, repo)
	}
	// inTx runs fn in one transaction and returns the stamps it added.
	inTx := func(name string, fn func(tx *fixture)) int {
		t.Helper()
		before := stamps()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		fn(newFixture(t, tx))
		if err := tx.Commit(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return stamps() - before
	}
	manifest := func(tx *fixture, image uuid.UUID, label string) uuid.UUID {
		id, sha := v7(t), digest(label)
		tx.must("container_manifests", row{"id", id, "namespace_id", ns, "container_image_id", image, "digest", sha,
			"media_type", "x", "blob_storage_attachment_id", tx.blob(ns, sha, 10), "blob_sha256", sha, "size", int64(10)})
		return id
	}
	tag := func(tx *fixture, image, m uuid.UUID, name string) {
		tx.must("container_tags", row{"id", v7(t), "namespace_id", ns, "container_image_id", image, "container_manifest_id", m, "name", name})
	}

	var m1 uuid.UUID
	if n := inTx("manifest and tag", func(tx *fixture) { m1 = manifest(tx, img, "m1"); tag(tx, img, m1, "v1") }); n != 1 {
		t.Fatalf("a manifest pushed with its tag stamped %d times, want 1", n)
	}
	if n := inTx("tag alone", func(tx *fixture) { tag(tx, img, m1, "v2") }); n != 1 {
		t.Fatalf("a tag of an existing manifest stamped %d times, want 1", n)
	}
	if n := inTx("two images", func(tx *fixture) {
		m := manifest(tx, img, "m2")
		tag(tx, img, m, "v3")
		m3 := manifest(tx, img2, "m3")
		tag(tx, img2, m3, "v1")
		tag(tx, img2, m3, "x") // the other image's second tag: already stamped
	}); n != 2 {
		t.Fatalf("two images in one transaction stamped %d times, want 2", n)
	}
	if n := inTx("rolled back savepoint", func(tx *fixture) {
		if _, err := tx.q.Exec(ctx, "SAVEPOINT s"); err != nil {
			t.Fatal(err)
		}
		manifest(tx, img, "m4")
		if _, err := tx.q.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
			t.Fatal(err)
		}
		tag(tx, img, m1, "v4")
	}); n != 1 {
		t.Fatalf("a tag after a rolled-back manifest stamped %d times, want 1", n)
	}
}
