package partition_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// Digest must name the partition PostgreSQL routes a digest to, in every
// table partitioned by HASH (sha256): a statement on the wrong partition
// finds nothing. 5,000 digests cover every partition many times.
func TestDigestMatchesPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testsupport.Pool(t, nil)
	const n = 5000
	digests := make([][]byte, n)
	for i := range digests {
		var seed [8]byte
		binary.BigEndian.PutUint64(seed[:], uint64(i))
		d := sha256.Sum256(seed[:])
		digests[i] = d[:]
	}
	for _, table := range []string{"blob_storage_blobs", "blob_storage_attachments", "gc_blob_review_queue"} {
		type placed struct {
			D []byte
			R int
		}
		rows, _ := pool.Query(ctx, `
			SELECT d, r FROM unnest($1::bytea[]) d, generate_series(0, 63) r
			WHERE satisfies_hash_partition($2::regclass, 64, r, d)`, digests, table)
		all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[placed])
		if err != nil {
			t.Fatal(err)
		}
		seen, used := len(all), map[int]bool{}
		for _, p := range all {
			used[p.R] = true
			if got := partition.Digest([32]byte(p.D)); got != p.R {
				t.Fatalf("%s: digest %x is in partition %d, Digest says %d", table, p.D, p.R, got)
			}
		}
		if seen != n || len(used) != partition.Count {
			t.Fatalf("%s: %d digests placed in %d partitions, want %d in %d", table, seen, len(used), n, partition.Count)
		}
	}
}
