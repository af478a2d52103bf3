package store

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// stagedWant is want(data) with the data's SHA-1.
func stagedWant(data []byte) Expected {
	w := want(data)
	s := sha1.Sum(data)
	w.SHA1 = &s
	return w
}

// uploadLeftovers lists what is left under the namespace's uploads/ on the
// file backend (the upload file and its staged metadata sidecar).
func (f *blobFixture) uploadLeftovers(t *testing.T) []string {
	t.Helper()
	if f.backend != "file" {
		var left []string
		for _, k := range f.objectKeys(t) {
			if strings.Contains(k, "/uploads/") {
				left = append(left, k)
			}
		}
		return left
	}
	dir := filepath.Join(strings.TrimPrefix(f.bucketURL, "file://"), f.ns.String(), "uploads")
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	return left
}

// TestStagedBlob: a staged blob committed inside a transaction lands with
// its SHA-1 metadata and leaves no session and no temporary data; one
// whose transaction fails, or whose bytes do not match, leaves nothing at
// all. Staged concurrently (StageBlobAsync) or not, on every backend.
func TestStagedBlob(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			stage := func(t *testing.T, async bool, data []byte, w Expected) (*StagedBlob, error) {
				t.Helper()
				if async {
					return f.store.StageBlobAsync(ctx, f.ref(uuid.Nil), data, w).Wait()
				}
				return f.store.StageBlob(ctx, f.ref(uuid.Nil), strings.NewReader(string(data)), w)
			}
			for _, async := range []bool{false, true} {
				name := map[bool]string{false: "sync", true: "async"}[async]
				t.Run(name+"/committed", func(t *testing.T) {
					data := randomBytes(30_000, 71)
					if async {
						data = randomBytes(30_000, 72)
					}
					b, err := stage(t, async, data, stagedWant(data))
					if err != nil {
						t.Fatal(err)
					}
					var res *CommitResult
					err = f.store.WithTx(ctx, func(tx pgx.Tx) error {
						res, err = f.store.CommitStaged(ctx, tx, b, func(StagedUse) error { return nil })
						return err
					})
					b.Close(ctx, err == nil)
					if err != nil {
						t.Fatal(err)
					}
					attrs, err := f.objects.Attributes(ctx, res.Blob.ObjectStorageKey)
					if err != nil {
						t.Fatal(err)
					}
					s := sha1.Sum(data)
					if attrs.Metadata[SHA1MetadataKey] != hex.EncodeToString(s[:]) || attrs.Size != int64(len(data)) {
						t.Fatalf("object: metadata %v, size %d", attrs.Metadata, attrs.Size)
					}
					if n := f.count(t, `SELECT count(*) FROM upload_sessions WHERE namespace_id = $1`, f.ns); n != 0 {
						t.Fatalf("%d upload sessions left", n)
					}
					if left := f.uploadLeftovers(t); len(left) != 0 {
						t.Fatalf("temporary data left: %v", left)
					}
				})
				t.Run(name+"/rolled back", func(t *testing.T) {
					data := randomBytes(20_000, 73)
					if async {
						data = randomBytes(20_000, 74)
					}
					b, err := stage(t, async, data, stagedWant(data))
					if err != nil {
						t.Fatal(err)
					}
					refused := errors.New("the format row is refused")
					err = f.store.WithTx(ctx, func(tx pgx.Tx) error {
						_, err := f.store.CommitStaged(ctx, tx, b, func(StagedUse) error { return refused })
						return err
					})
					b.Close(ctx, err == nil)
					if !errors.Is(err, refused) {
						t.Fatalf("commit: %v", err)
					}
					f.assertNothing(t, data)
				})
				t.Run(name+"/mismatch", func(t *testing.T) {
					data := randomBytes(10_000, 75)
					w := stagedWant(data)
					w.Size++
					b, err := stage(t, async, data, w)
					if !HasCode(err, CodeSizeMismatch) {
						t.Fatalf("stage: %v", err)
					}
					if b != nil {
						b.Close(ctx, false)
					}
					f.assertNothing(t, data)
				})
			}
		})
	}
}

// assertNothing: no blob row, object, session or temporary data of data.
func (f *blobFixture) assertNothing(t *testing.T, data []byte) {
	t.Helper()
	w := want(data)
	if n := f.count(t, `SELECT count(*) FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`, f.ns, w.SHA256[:]); n != 0 {
		t.Fatal("a blob row was left")
	}
	if n := f.count(t, `SELECT count(*) FROM upload_sessions WHERE namespace_id = $1`, f.ns); n != 0 {
		t.Fatalf("%d upload sessions left", n)
	}
	for _, k := range f.objectKeys(t) {
		if strings.HasSuffix(k, hex.EncodeToString(w.SHA256[:])) {
			t.Fatalf("object %s was left", k)
		}
	}
	if left := f.uploadLeftovers(t); len(left) != 0 {
		t.Fatalf("temporary data left: %v", left)
	}
}

// TestStageBlobAsyncOnePool: the transaction that uses a concurrently
// staged blob takes its connection only once the staging holds one, so a
// pool of a single connection serves both in turn instead of each waiting
// for the other.
func TestStageBlobAsyncOnePool(t *testing.T) {
	t.Parallel()
	f := newBlobFixture(t, "file", Options{})
	cfg := testdb.NewConfig(t)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// The fixture's rows in the one-connection pool's database.
	f.pool = pool
	f.ns = f.newNamespace(t)
	f.repo = f.newRepository(t, f.ns)
	st := New(pool, f.objects, Options{Clock: f.clock})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		data := randomBytes(5_000, uint64(100+i))
		p := st.StageBlobAsync(ctx, f.ref(uuid.Nil), data, stagedWant(data))
		err := st.WithTx(ctx, func(tx pgx.Tx) error {
			b, err := p.Wait()
			if err != nil {
				return err
			}
			_, err = st.CommitStaged(ctx, tx, b, func(StagedUse) error { return nil })
			return err
		})
		if b, _ := p.Wait(); b != nil {
			b.Close(ctx, err == nil)
		}
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM blob_storage_blobs WHERE namespace_id = $1`, f.ns); n != 20 {
		t.Fatalf("%d blob rows, want 20", n)
	}
}
