package migrations_test

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const attachmentLookupIndexVersion = 61

// TestAttachmentLookupIndexUpgrade: a database of the release before
// 00061, holding one digest with thousands of attachments, upgrades with
// migrations.Up; the attachments are kept, and the lookup of one of them
// a foreign key check makes reads that row only, where the old index
// filtered every attachment of the digest.
func TestAttachmentLookupIndexUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, attachmentLookupIndexVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	sha := sha256.Sum256([]byte("a popular layer"))
	f.blob(ns, sha[:], 10)
	const more = 5000
	if _, err := pool.Exec(ctx, `INSERT INTO blob_storage_attachments (namespace_id, sha256)
		SELECT $1, $2 FROM generate_series(1, $3::int)`, ns, sha[:], more); err != nil {
		t.Fatal(err)
	}
	last := f.attach(ns, sha[:])

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if n := f.count("blob_storage_attachments", "namespace_id = $1 AND sha256 = $2", ns, sha[:]); n != more+2 {
		t.Fatalf("attachments after the upgrade: %d, want %d", n, more+2)
	}
	var def string
	if err := pool.QueryRow(ctx, `SELECT string_agg(indexdef, '; ' ORDER BY indexname) FROM pg_indexes
		WHERE schemaname = 'public' AND tablename = 'blob_storage_attachments'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if want := "(namespace_id, sha256, id)"; !strings.Contains(def, want) || strings.Contains(def, "(namespace_id, sha256)") {
		t.Fatalf("indexes of blob_storage_attachments: %s; want one on %s and none on (namespace_id, sha256)", def, want)
	}
	// The query a foreign key check runs, with its parameters.
	plan := planOf(ctx, t, pool, `EXPLAIN (ANALYZE, COSTS OFF) SELECT 1 FROM blob_storage_attachments x
		WHERE id = $1 AND namespace_id = $2 AND sha256 = $3 FOR KEY SHARE OF x`, last, ns, sha[:])
	if !strings.Contains(plan, "rows=1 ") || strings.Contains(plan, "Rows Removed by Filter") {
		t.Errorf("a foreign key check of one attachment reads others:\n%s", plan)
	}
}
