package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// newFakeClock is the tests' clock: time moves only when told to.
func newFakeClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

// blobFixture is a fresh database with one namespace and one repository,
// an object store and a Store over both. All fixture rows are created here.
type blobFixture struct {
	pool    *pgxpool.Pool
	objects *objstore.Store
	clock   *fakeclock.Clock
	store   *Store
	ns      uuid.UUID
	repo    uuid.UUID
	backend string
	// bucketURL reopens the file bucket (a second instance).
	bucketURL string
}

// objectBackends are the object-storage backends the blob tests run on
// ("s3": an S3 server of its own, "gcs": a GCS API server of its own;
// s3compose_test.go).
var objectBackends = []string{"file", "mem", "s3", "gcs"}

func newBlobFixture(t testing.TB, backend string, opts Options) *blobFixture {
	t.Helper()
	ctx := context.Background()
	f := &blobFixture{pool: testdb.New(t), clock: newFakeClock(), backend: backend}
	switch backend {
	case "file":
		var err error
		f.bucketURL = "file://" + t.TempDir()
		if f.objects, err = objstore.Open(ctx, f.bucketURL); err != nil {
			t.Fatal(err)
		}
	case "mem":
		f.objects = objstore.NewMem()
	case "s3":
		f.objects = newS3Bucket(t)
	case "gcs":
		f.objects = newGCSBucket(t)
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	t.Cleanup(func() { f.objects.Close() })
	if opts.Clock == nil {
		opts.Clock = f.clock
	}
	f.store = New(f.pool, f.objects, opts)
	f.ns = f.newNamespace(t)
	f.repo = f.newRepository(t, f.ns)
	return f
}

// newNamespace inserts a namespaces row with its NOT NULL columns.
func (f *blobFixture) newNamespace(t testing.TB) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	slug := "ns-" + id.String()[24:]
	_, err := f.pool.Exec(context.Background(), `
		INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
		VALUES ($1, $2, 'test', 'organization', $2, 'organization', $2)`, id, slug)
	if err != nil {
		t.Fatalf("insert namespace: %v", err)
	}
	return id
}

// newRepository inserts a hosted OCI repositories row.
func (f *blobFixture) newRepository(t testing.TB, ns uuid.UUID) uuid.UUID {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	_, err := f.pool.Exec(context.Background(), `
		INSERT INTO repositories (id, namespace_id, name, format, kind, visibility)
		VALUES ($1, $2, $3, 3, 0, 1)`, id, ns, "repo-"+id.String()[24:])
	if err != nil {
		t.Fatalf("insert repository: %v", err)
	}
	return id
}

// ref is an UploadRef in the fixture's repository.
func (f *blobFixture) ref(uploadID uuid.UUID) UploadRef {
	return UploadRef{NamespaceID: f.ns, RepositoryID: f.repo, UploadID: uploadID}
}

// count runs a count(*) query.
func (f *blobFixture) count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// objectKeys lists every object in the bucket.
func (f *blobFixture) objectKeys(t testing.TB) []string {
	t.Helper()
	ctx := context.Background()
	var keys []string
	it := f.objects.Bucket().List(nil)
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			break
		}
		if !strings.HasSuffix(obj.Key, "/uploads/") { // the S3 uploads marker (objstore) stays
			keys = append(keys, obj.Key)
		}
	}
	return keys
}

// put uploads data monolithically and fails the test on error.
func (f *blobFixture) put(t testing.TB, data []byte) *CommitResult {
	t.Helper()
	res, err := f.store.PutBlob(context.Background(), f.ref(uuid.Nil), bytes.NewReader(data), Expected{SHA256: sha256.Sum256(data), Size: int64(len(data))})
	if err != nil {
		t.Fatalf("put %d bytes: %v", len(data), err)
	}
	return res
}

func content(i int) []byte { return fmt.Appendf(nil, "blob content number %d\n", i) }
