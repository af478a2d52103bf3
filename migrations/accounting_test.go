package migrations_test

import (
	"context"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/migrations"
	"github.com/artifact-registry/artifact-registry/store"
)

const accountingVersion = 41

// TestStorageAccountingUpgrade: a database of the release before 00041
// holds container, npm and Maven rows whose counters were never recorded
// (and a wrong one); after the upgrade every namespace waits for the
// reconciliation, which sets the exact values, and new rows are counted
// by the triggers.
func TestStorageAccountingUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, accountingVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	// A container repository: one image, two manifests sharing a layer
	// (one soft-deleted), and an npm repository with one version and one
	// metadata file, and a Maven repository whose file repeats the layer's
	// bytes (deduplicated in the namespace, counted in each repository).
	crepo := f.repository(ns, 3, 0)
	cr := f.child("container_repositories", ns, crepo)
	img := v7(t)
	f.must("container_images", row{"id", img, "namespace_id", ns, "container_repository_id", cr, "name", "app"})
	layer, m1, m2 := digest("layer"), digest("m1"), digest("m2")
	f.must("container_blobs", row{"id", v7(t), "namespace_id", ns, "container_image_id", img, "digest", layer,
		"media_type", "x", "blob_storage_attachment_id", f.blob(ns, layer, 1000), "blob_sha256", layer})
	f.must("container_manifests", row{"id", v7(t), "namespace_id", ns, "container_image_id", img, "digest", m1,
		"media_type", "x", "blob_storage_attachment_id", f.blob(ns, m1, 10), "blob_sha256", m1, "size", 1010})
	f.must("container_manifests", row{"id", v7(t), "namespace_id", ns, "container_image_id", img, "digest", m2,
		"media_type", "x", "blob_storage_attachment_id", f.blob(ns, m2, 20), "blob_sha256", m2, "size", 1020,
		"soft_deleted_at", "2026-01-01T00:00:00Z"})
	nrepo := f.repository(ns, 2, 0)
	nr := f.child("npm_repositories", ns, nrepo)
	pkg := v7(t)
	f.must("npm_packages", row{"id", pkg, "namespace_id", ns, "npm_repository_id", nr, "name", "lib"})
	ver := v7(t)
	f.must("npm_versions", row{"id", ver, "namespace_id", ns, "npm_package_id", pkg, "version", "1.0.0", "package_json", `{}`})
	tgz, meta := digest("tgz"), digest("meta")
	f.must("npm_files", row{"id", v7(t), "namespace_id", ns, "npm_version_id", ver, "file_name", "lib-1.0.0.tgz",
		"blob_storage_attachment_id", f.blob(ns, tgz, 300), "blob_sha256", tgz})
	f.must("npm_metadata_files", row{"id", v7(t), "namespace_id", ns, "npm_package_id", pkg, "kind", int16(0),
		"blob_storage_attachment_id", f.blob(ns, meta, 40), "blob_sha256", meta, "expires_at", "2030-01-01T00:00:00Z"})
	mrepo := f.repository(ns, 1, 0)
	mr := f.child("maven_repositories", ns, mrepo)
	mpkg := v7(t)
	f.must("maven_packages", row{"id", mpkg, "namespace_id", ns, "maven_repository_id", mr, "group_id", "g", "artifact_id", "a"})
	mver := v7(t)
	f.must("maven_versions", row{"id", mver, "namespace_id", ns, "maven_package_id", mpkg, "version", "1.0"})
	f.must("maven_files", row{"id", v7(t), "namespace_id", ns, "maven_package_id", mpkg, "maven_version_id", mver,
		"file_name", "a-1.0.jar", "blob_storage_attachment_id", f.attach(ns, layer), "blob_sha256", layer,
		"sha1", make([]byte, 20), "md5", make([]byte, 16), "sha512", make([]byte, 64)})
	// What the old release recorded: wrong.
	if _, err := pool.Exec(ctx, `UPDATE namespace_statistics SET components_count = 5, last_reconciled_at = now() WHERE namespace_id = $1`, ns); err != nil {
		t.Fatal(err)
	}

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	st := store.New(pool, testsupport.MemObjects(t), store.Options{})
	due, err := st.NamespacesToReconcile(ctx, store.EpochPlus(), 10)
	if err != nil || len(due) != 1 || due[0] != ns {
		t.Fatalf("namespaces due after the upgrade: %v %v", due, err)
	}
	res, err := st.ReconcileNamespaceCounters(ctx, ns, 1)
	if err != nil || len(res.Drifts) == 0 {
		t.Fatalf("reconcile: %+v %v", res, err)
	}
	if _, err := st.FoldCounterDeltas(ctx, ns, 0, 0); err != nil {
		t.Fatal(err)
	}
	check := func(dedup, components int64, repos map[any][2]int64) {
		t.Helper()
		var d, c int64
		if err := pool.QueryRow(ctx, `SELECT deduplicated_size_bytes, components_count FROM namespace_statistics WHERE namespace_id = $1`, ns).Scan(&d, &c); err != nil {
			t.Fatal(err)
		}
		if d != dedup || c != components {
			t.Fatalf("namespace: deduplicated_size_bytes %d components_count %d, want %d %d", d, c, dedup, components)
		}
		for id, want := range repos {
			var a, s int64
			if err := pool.QueryRow(ctx, `SELECT artifacts_count, size_bytes FROM repositories WHERE id = $1`, id).Scan(&a, &s); err != nil {
				t.Fatal(err)
			}
			if [2]int64{a, s} != want {
				t.Fatalf("repository %v: artifacts_count, size_bytes = %d %d, want %v", id, a, s, want)
			}
		}
	}
	check(1000+10+20+300+40, 4, map[any][2]int64{crepo: {2, 1030}, nrepo: {1, 340}, mrepo: {1, 1000}})
	var at any
	if err := pool.QueryRow(ctx, `SELECT last_reconciled_at > 'epoch' FROM namespace_statistics WHERE namespace_id = $1`, ns).Scan(&at); err != nil || at != true {
		t.Fatalf("last_reconciled_at not recorded: %v %v", at, err)
	}

	// From now on the triggers count: a second npm version with a new file.
	ver2, tgz2 := v7(t), digest("tgz2")
	f.must("npm_versions", row{"id", ver2, "namespace_id", ns, "npm_package_id", pkg, "version", "2.0.0", "package_json", `{}`})
	f.must("npm_files", row{"id", v7(t), "namespace_id", ns, "npm_version_id", ver2, "file_name", "lib-2.0.0.tgz",
		"blob_storage_attachment_id", f.blob(ns, tgz2, 7), "blob_sha256", tgz2})
	if _, err := st.FoldCounterDeltas(ctx, ns, 0, 0); err != nil {
		t.Fatal(err)
	}
	check(1000+10+20+300+40+7, 5, map[any][2]int64{nrepo: {2, 347}})
	res, err = st.ReconcileNamespaceCounters(ctx, ns, 0)
	if err != nil || len(res.Drifts) != 0 {
		t.Fatalf("second reconcile found drift: %+v %v", res, err)
	}
}
