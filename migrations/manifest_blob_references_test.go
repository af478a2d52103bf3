package migrations_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const manifestBlobReferencesVersion = 48

// TestManifestBlobReferencesUpgrade: a database of the release before
// 00048, holding an image with a blob link and a manifest, upgrades with
// migrations.Up; the manifest is marked unrecorded (the backfill reads
// it), the link gets the migration time as its age, the image is not
// pending, and the reference table takes rows whose keys are checked.
func TestManifestBlobReferencesUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, manifestBlobReferencesVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	repo := f.repository(ns, 3, 0)
	cr := f.child("container_repositories", ns, repo)
	image := v7(t)
	f.must("container_images", row{"id", image, "namespace_id", ns, "container_repository_id", cr, "name", "app"})
	layer, payload := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	link := v7(t)
	f.must("container_blobs", row{"id", link, "namespace_id", ns, "container_image_id", image, "digest", layer,
		"media_type", "application/octet-stream", "blob_storage_attachment_id", f.blob(ns, layer, 10), "blob_sha256", layer})
	manifest := v7(t)
	f.must("container_manifests", row{"id", manifest, "namespace_id", ns, "container_image_id", image, "digest", payload,
		"media_type", "application/vnd.oci.image.manifest.v1+json", "blob_storage_attachment_id", f.blob(ns, payload, 10),
		"blob_sha256", payload, "size", int64(20)})
	before := time.Now()

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if n := f.count("container_manifests", "namespace_id = $1 AND NOT blob_references_recorded", ns); n != 1 {
		t.Fatalf("unrecorded manifests after the upgrade: %d", n)
	}
	var created time.Time
	if err := pool.QueryRow(ctx, `SELECT created_at FROM container_blobs WHERE namespace_id = $1 AND id = $2`, ns, link).Scan(&created); err != nil {
		t.Fatal(err)
	}
	if created.Before(before.Add(-time.Minute)) {
		t.Fatalf("link created_at %v: want the migration time", created)
	}
	if n := f.count("container_images", "namespace_id = $1 AND unreferenced_links_pending", ns); n != 0 {
		t.Fatalf("pending images after the upgrade: %d", n)
	}
	f.must("container_manifest_blob_references", row{"namespace_id", ns, "container_image_id", image,
		"container_manifest_id", manifest, "digest", layer})
	bad := insert(ctx, pool, "container_manifest_blob_references", row{"namespace_id", ns, "container_image_id", image,
		"container_manifest_id", v7(t), "digest", layer})
	if c := sqlState(bad); c != codeForeignKey {
		t.Fatalf("reference to a missing manifest: %v", bad)
	}
}
