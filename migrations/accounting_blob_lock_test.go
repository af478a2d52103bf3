package migrations_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/migrations"
)

const accountingBlobLockVersion = 65

// blobLockingTriggers are the trigger functions that lock the blobs whose
// references they count.
var blobLockingTriggers = []string{"accounting_blob_refs", "accounting_remote_blob_refs",
	"accounting_maven_remote_files", "accounting_npm_remote_sizes"}

// The text 00065 replaces in each of them, and what replaces it.
const (
	blobLockStatement = "SELECT b.size INTO sz FROM blob_storage_blobs b\n        WHERE b.namespace_id = ns[i] AND b.sha256 = shas[i]\n        FOR NO KEY UPDATE;"
	blobLockCall      = "sz := accounting_lock_blob(ns[i], shas[i]);"
)

// TestDigestPartition: digest_partition names the partition PostgreSQL
// routes a sha256 to, for 5,000 random digests and the empty one.
func TestDigestPartition(t *testing.T) {
	wrong, total := partitionMisses(t, `
		SELECT count(*) FILTER (WHERE NOT satisfies_hash_partition('public.blob_storage_blobs'::regclass, 64, digest_partition(sha), sha)),
		       count(*)
		FROM (SELECT sha256(gen_random_uuid()::text::bytea) AS sha FROM generate_series(1, 5000)
		      UNION ALL SELECT sha256(''::bytea)) x`)
	if wrong != 0 || total != 5001 {
		t.Fatalf("digest_partition is wrong for %d of %d digests", wrong, total)
	}
}

// TestAccountingBlobLockUpgrade: the accounting workload records the same
// counter_deltas at 00064 (the blob lock on the partitioned parent), after
// the upgrade (the lock on the digest's partition) and after its Down.
func TestAccountingBlobLockUpgrade(t *testing.T) {
	accountingRoundTrip(t, accountingBlobLockVersion, "digest_partition", "accounting_lock_blob")
}

// TestAccountingBlobLockRewrite: the upgrade replaces the lock statement of
// each blob-locking trigger by the call and changes nothing else of it;
// the Down gives back the definitions it found.
func TestAccountingBlobLockRewrite(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, accountingBlobLockVersion)
	defs := func() []string {
		t.Helper()
		return queryLines(ctx, t, pool, `SELECT pg_get_functiondef(f::regproc) FROM unnest($1::text[]) AS f ORDER BY f`, blobLockingTriggers)
	}
	before := defs()
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	after := defs()
	for i, def := range after {
		if strings.Contains(def, "FROM blob_storage_blobs b") || strings.Count(def, "accounting_lock_blob(ns[i], shas[i])") != 1 {
			t.Errorf("after the upgrade:\n%s", def)
		}
		if restored := strings.Replace(def, blobLockCall, blobLockStatement, 1); restored != before[i] {
			t.Errorf("the upgrade changed more than the lock statement:\nbefore:\n%s\nafter:\n%s", before[i], def)
		}
	}
	downTo(t, pool, previousVersion(t, accountingBlobLockVersion))
	for i, def := range defs() {
		if def != before[i] {
			t.Errorf("after the Down:\n%s\nwant:\n%s", def, before[i])
		}
	}
}

// TestAccountingLockBlob: accounting_lock_blob returns a blob's size and
// NULL for a digest the namespace does not hold, whatever its partition.
func TestAccountingLockBlob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	f := newFixture(t, pool)
	ns := f.namespace()
	for i := range 20 {
		held, missing := digest(fmt.Sprintf("held %d", i)), digest(fmt.Sprintf("missing %d", i))
		f.blob(ns, held, int64(100+i))
		var size, none *int64
		if err := pool.QueryRow(ctx, `SELECT accounting_lock_blob($1, $2), accounting_lock_blob($1, $3)`, ns, held, missing).Scan(&size, &none); err != nil {
			t.Fatal(err)
		}
		if size == nil || *size != int64(100+i) || none != nil {
			t.Fatalf("blob %d: size %v, missing digest %v", i, size, none)
		}
	}
}
