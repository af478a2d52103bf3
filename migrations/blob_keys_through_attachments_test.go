package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const blobKeysThroughAttachmentsVersion = 62

// TestBlobKeysThroughAttachmentsUpgrade: a database of the release before
// 00062, holding a container blob link, upgrades with migrations.Up. Only
// the attachments' keys reference blob rows afterwards (none declared on a
// partitioned format table, whose check PostgreSQL plans for every row),
// and the integrity those keys gave is still enforced through the
// attachment: a used blob cannot be deleted, a format row cannot name a
// digest its attachment does not have, and a blob freed of its last user
// can be.
func TestBlobKeysThroughAttachmentsUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, blobKeysThroughAttachmentsVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	cr := f.child("container_repositories", ns, f.repository(ns, 3, 0))
	img, img2 := v7(t), v7(t)
	f.must("container_images", row{"id", img, "namespace_id", ns, "container_repository_id", cr, "name", "app"})
	f.must("container_images", row{"id", img2, "namespace_id", ns, "container_repository_id", cr, "name", "other"})
	layer, other := digest("layer"), digest("other layer")
	link := v7(t)
	f.must("container_blobs", row{"id", link, "namespace_id", ns, "container_image_id", img, "digest", layer,
		"media_type", "x", "blob_storage_attachment_id", f.blob(ns, layer, 100), "blob_sha256", layer})
	otherAttachment := f.blob(ns, other, 200)

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if n := f.count("container_blobs", "namespace_id = $1 AND id = $2", ns, link); n != 1 {
		t.Fatalf("blob links after the upgrade: %d, want 1", n)
	}
	if keys := queryStrings(ctx, t, pool, `
SELECT format('%s: %s', k.conrelid::regclass, k.conname) FROM pg_constraint k
WHERE k.contype = 'f' AND k.conparentid = 0
  AND k.confrelid IN (SELECT 'blob_storage_blobs'::regclass UNION ALL
                      SELECT inhrelid FROM pg_inherits WHERE inhparent = 'blob_storage_blobs'::regclass)
  AND k.conrelid NOT IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'blob_storage_attachments'::regclass)`); len(keys) > 0 {
		t.Errorf("foreign keys to blob rows other than the attachments' own: %v", keys)
	}

	refused := func(what, sql string, args ...any) {
		t.Helper()
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, sql, args...)
			return err
		})
		if got := sqlState(err); got != "23503" {
			t.Errorf("%s: %v (SQLSTATE %q), want a foreign key violation", what, err, got)
		}
	}
	refused("deleting a blob a link uses",
		`DELETE FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`, ns, layer)
	refused("a link naming a digest its attachment does not have",
		`INSERT INTO container_blobs (id, namespace_id, container_image_id, digest, media_type, blob_storage_attachment_id, blob_sha256)
		 VALUES ($1, $2, $3, $4, 'x', $5, $4)`, v7(t), ns, img2, layer, otherAttachment)
	refused("a link to a digest with no blob row",
		`INSERT INTO container_blobs (id, namespace_id, container_image_id, digest, media_type, blob_storage_attachment_id, blob_sha256)
		 VALUES ($1, $2, $3, $4, 'x', $5, $4)`, v7(t), ns, img2, digest("never stored"), otherAttachment)

	if _, err := pool.Exec(ctx, `
WITH link AS (DELETE FROM container_blobs WHERE namespace_id = $1 AND id = $2 RETURNING blob_storage_attachment_id)
DELETE FROM blob_storage_attachments WHERE namespace_id = $1 AND sha256 = $3 AND id IN (SELECT * FROM link)`,
		ns, link, layer); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`, ns, layer); err != nil {
		t.Errorf("deleting a blob with no attachment left: %v", err)
	}
}
