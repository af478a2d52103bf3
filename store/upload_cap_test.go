package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// The upload session cap holds across instances: two Stores, each with
// its own pool and bucket handle on one database and bucket, start
// sessions of one repository concurrently, and exactly the cap succeed;
// the others get CodeTooManyUploads and leave no row and no temporary
// object. Monolithic uploads count too; other repositories are not
// affected; a cancelled or expired session frees its place.
func TestUploadSessionCapAcrossInstances(t *testing.T) {
	t.Parallel()
	const limit = 7
	ctx := context.Background()
	f := newBlobFixture(t, "file", Options{MaxUploadSessionsPerRepository: limit})
	pool2, err := pgxpool.New(ctx, f.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool2.Close)
	objs2, err := objstore.Open(ctx, f.bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs2.Close() })
	second := New(pool2, objs2, Options{MaxUploadSessionsPerRepository: limit, Clock: f.clock})

	var (
		mu       sync.Mutex
		started  []*Upload
		refused  int
		failures []error
		wg       sync.WaitGroup
	)
	for i := range 40 {
		st := f.store
		if i%2 == 1 {
			st = second
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := st.StartUpload(ctx, f.ns, f.repo, UploadResumable)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				started = append(started, u)
			case HasCode(err, CodeTooManyUploads):
				refused++
			default:
				failures = append(failures, err)
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("unexpected errors: %v", failures)
	}
	if len(started) != limit || refused != 40-limit {
		t.Fatalf("%d started, %d refused; want %d and %d", len(started), refused, limit, 40-limit)
	}
	if n := f.count(t, `SELECT count(*) FROM upload_sessions WHERE namespace_id = $1 AND repository_id = $2`, f.ns, f.repo); n != limit {
		t.Fatalf("%d session rows, want %d", n, limit)
	}
	// Refused starts left no temporary object behind.
	dir := filepath.Join(strings.TrimPrefix(f.bucketURL, "file://"), f.ns.String(), "uploads")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != limit {
		t.Fatalf("%d temporary uploads in %s, want %d", len(entries), dir, limit)
	}

	// A monolithic upload needs a session too: refused, with the error.
	data := []byte("monolithic")
	_, err = f.store.PutBlob(ctx, f.ref(started[0].UploadID), bytes.NewReader(data), Expected{SHA256: sha256.Sum256(data), Size: -1})
	if !HasCode(err, CodeTooManyUploads) {
		t.Fatalf("monolithic upload at the cap: %v, want CodeTooManyUploads", err)
	}
	// Another repository has its own count.
	other := f.newRepository(t, f.ns)
	if _, err := second.StartUpload(ctx, f.ns, other, UploadMonolithic); err != nil {
		t.Fatalf("other repository: %v", err)
	}
	// Cancelling one frees a place (once).
	if err := f.store.CancelUpload(ctx, started[0].Ref()); err != nil {
		t.Fatal(err)
	}
	if _, err := second.PutBlob(ctx, f.ref(started[0].UploadID), bytes.NewReader(data), Expected{SHA256: sha256.Sum256(data), Size: -1}); err != nil {
		t.Fatalf("upload after a cancel: %v", err)
	}
	if _, err := second.StartUpload(ctx, f.ns, f.repo, UploadResumable); err != nil {
		t.Fatalf("start after a cancel: %v", err)
	}
	if _, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable); !HasCode(err, CodeTooManyUploads) {
		t.Fatalf("start at the cap again: %v, want CodeTooManyUploads", err)
	}
	// Expired sessions no longer count, even before the purge removes them.
	f.clock.Advance(DefaultResumableUploadTTL + 1)
	if _, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable); err != nil {
		t.Fatalf("start once the others expired: %v", err)
	}
}

// Without a cap (0) any number of sessions start.
func TestUploadSessionCapZeroIsUnlimited(t *testing.T) {
	t.Parallel()
	f := newBlobFixture(t, "mem", Options{})
	for range 30 {
		if _, err := f.store.StartUpload(context.Background(), f.ns, f.repo, UploadMonolithic); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUploadSessionStartCommitSetting: a capped session start commits
// asynchronously, and that setting is its transaction's alone: the
// connection goes back to the pool with synchronous_commit on.
func TestUploadSessionStartCommitSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newBlobFixture(t, "mem", Options{MaxUploadSessionsPerRepository: 5})
	one, st := oneConnStore(t, f, Options{MaxUploadSessionsPerRepository: 5, Clock: f.clock})
	if _, err := st.StartUpload(ctx, f.ns, f.repo, UploadResumable); err != nil {
		t.Fatal(err)
	}
	requireSyncCommit(t, one, "a session start")
	if n := f.count(t, `SELECT count(*) FROM upload_sessions WHERE namespace_id = $1 AND repository_id = $2`, f.ns, f.repo); n != 1 {
		t.Fatalf("%d session rows, want 1", n)
	}
}

// A chunk's commit does not wait for the disk: AppendUpload's update runs
// with synchronous_commit off (a trigger of the test's database records
// the setting the statement saw), and the setting stays the
// transaction's. The commit of the blob waits for the disk.
func TestAppendUploadCommitSetting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newBlobFixture(t, "file", Options{})
	for _, sql := range []string{
		`CREATE TABLE seen_commit_settings (op text, setting text)`,
		`CREATE FUNCTION record_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO seen_commit_settings VALUES (regexp_replace(TG_TABLE_NAME, '_p[0-9]+$', '') || ' ' || TG_OP, current_setting('synchronous_commit'));
			RETURN NULL;
		END $$`,
		`CREATE TRIGGER record_commit_setting AFTER UPDATE ON upload_sessions FOR EACH ROW EXECUTE FUNCTION record_commit_setting()`,
		`CREATE TRIGGER record_commit_setting AFTER INSERT ON blob_storage_blobs FOR EACH ROW EXECUTE FUNCTION record_commit_setting()`,
	} {
		if _, err := f.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	one, st := oneConnStore(t, f, Options{Clock: f.clock})
	u, err := st.StartUpload(ctx, f.ns, f.repo, UploadResumable)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("a chunk that is not flushed")
	if _, err := st.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	requireSyncCommit(t, one, "a chunk")
	if _, err := st.CommitUpload(ctx, u.Ref(), nil, Expected{SHA256: sha256.Sum256(data), Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	rows, err := f.pool.Query(ctx, `SELECT op || ': ' || setting FROM seen_commit_settings ORDER BY op`)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"blob_storage_blobs INSERT: on", "upload_sessions UPDATE: off"}
	if !slices.Equal(seen, want) {
		t.Fatalf("settings seen %q, want %q", seen, want)
	}
}

// oneConnStore returns a Store on f's database and bucket whose pool has
// one connection, with synchronous_commit on (the test cluster itself
// runs with it off), so that a setting a transaction leaks shows on it.
func oneConnStore(t *testing.T, f *blobFixture, opts Options) (*pgxpool.Pool, *Store) {
	t.Helper()
	cfg := f.pool.Config().Copy()
	cfg.MaxConns = 1
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	one, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	return one, New(one, f.store.objects, opts)
}

// requireSyncCommit fails unless the pool's connection is back to
// synchronous_commit on after what.
func requireSyncCommit(t *testing.T, one *pgxpool.Pool, what string) {
	t.Helper()
	var setting string
	if err := one.QueryRow(context.Background(), `SHOW synchronous_commit`).Scan(&setting); err != nil {
		t.Fatal(err)
	}
	if setting != "on" {
		t.Fatalf("synchronous_commit = %q on the connection after %s, want on", setting, what)
	}
}
