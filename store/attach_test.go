package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func (f *blobFixture) attach(t testing.TB, digests ...[32]byte) []Attachment {
	t.Helper()
	var out []Attachment
	err := f.store.WithTx(context.Background(), func(tx pgx.Tx) error {
		var err error
		out, err = f.store.Attach(context.Background(), tx, f.ns, digests)
		return err
	})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	return out
}

func (f *blobFixture) detach(t testing.TB, atts ...Attachment) [][32]byte {
	t.Helper()
	var zero [][32]byte
	err := f.store.WithTx(context.Background(), func(tx pgx.Tx) error {
		var err error
		zero, err = f.store.Detach(context.Background(), tx, f.ns, atts)
		return err
	})
	if err != nil {
		t.Fatalf("detach: %v", err)
	}
	return zero
}

func (f *blobFixture) candidates(t testing.TB) map[[32]byte]time.Time {
	t.Helper()
	rows, err := f.pool.Query(context.Background(),
		`SELECT sha256, review_after FROM gc_blob_review_queue WHERE namespace_id = $1`, f.ns)
	if err != nil {
		t.Fatal(err)
	}
	out := map[[32]byte]time.Time{}
	for rows.Next() {
		var sha []byte
		var at time.Time
		if err := rows.Scan(&sha, &at); err != nil {
			t.Fatal(err)
		}
		out[[32]byte(sha)] = at
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *blobFixture) attachmentCount(t testing.TB, sha [32]byte) int {
	return f.count(t, `SELECT count(*) FROM blob_storage_attachments WHERE namespace_id = $1 AND sha256 = $2`, f.ns, sha[:])
}

func TestAttachDetach(t *testing.T) {
	f := newBlobFixture(t, "mem", Options{ReviewDelay: 3 * time.Hour})
	a := f.put(t, content(1)).Blob.SHA256
	b := f.put(t, content(2)).Blob.SHA256

	// b twice and a once: three attachments, in input order.
	atts := f.attach(t, b, a, b)
	if len(atts) != 3 || atts[0].SHA256 != b || atts[1].SHA256 != a || atts[2].SHA256 != b || atts[0].ID == atts[2].ID {
		t.Fatalf("attachments: %+v", atts)
	}
	if f.attachmentCount(t, a) != 1 || f.attachmentCount(t, b) != 2 {
		t.Fatal("counts after attach")
	}
	// Detaching one of b's two uses leaves b referenced: no candidate.
	if zero := f.detach(t, atts[0]); len(zero) != 0 {
		t.Fatalf("zero after a partial detach: %x", zero)
	}
	if c := f.candidates(t); len(c) != 0 {
		t.Fatalf("candidates: %v", c)
	}
	// Last uses of a and b: two candidates due after the review delay.
	zero := f.detach(t, atts[1], atts[2])
	if len(zero) != 2 {
		t.Fatalf("zero: %x", zero)
	}
	c := f.candidates(t)
	due := f.clock.Now().Add(3 * time.Hour)
	if len(c) != 2 || !c[a].Equal(due) || !c[b].Equal(due) {
		t.Fatalf("candidates %v, want both due at %v", c, due)
	}
	// Re-attaching clears the candidate (the object exists: checked).
	f.clock.Advance(time.Hour)
	again := f.attach(t, a)
	if c := f.candidates(t); len(c) != 1 || c[a] != (time.Time{}) {
		t.Fatalf("candidates after re-attach: %v", c)
	}
	// Detach again: a fresh candidate with the full delay.
	f.detach(t, again...)
	if c := f.candidates(t); !c[a].Equal(f.clock.Now().Add(3 * time.Hour)) {
		t.Fatalf("re-recorded candidate: %v", c)
	}
	// Errors: unknown blob, unknown attachment (and a repeat), rollback.
	ctx := context.Background()
	err := f.store.WithTx(ctx, func(tx pgx.Tx) error {
		_, err := f.store.Attach(ctx, tx, f.ns, [][32]byte{a, {7}})
		return err
	})
	if e, ok := AsError(err); !ok || e.Code != CodeBlobUnknown || e.Digest == nil || *e.Digest != [32]byte{7} {
		t.Fatalf("attach of an unknown blob: %v", err)
	}
	err = f.store.WithTx(ctx, func(tx pgx.Tx) error {
		_, err := f.store.Detach(ctx, tx, f.ns, []Attachment{atts[1]})
		return err
	})
	if !HasCode(err, CodeAttachmentUnknown) {
		t.Fatalf("detach of a deleted attachment: %v", err)
	}
	fresh := f.attach(t, b)
	err = f.store.WithTx(ctx, func(tx pgx.Tx) error {
		_, err := f.store.Detach(ctx, tx, f.ns, []Attachment{fresh[0], fresh[0]})
		return err
	})
	if !HasCode(err, CodeAttachmentUnknown) || f.attachmentCount(t, b) != 1 {
		t.Fatalf("detach given twice: %v (count %d)", err, f.attachmentCount(t, b))
	}
	if zero := f.detach(t); zero != nil {
		t.Fatal("empty detach")
	}
}

// TestAttachDetachRandomized: goroutines attach and detach random sets of
// blobs (several uses of a blob, attach and detach in one transaction,
// rolled-back transactions). Afterwards every blob's attachment count is
// exactly the model's, and a candidate exists exactly for the blobs that
// were attached at some point and are now at zero.
func TestAttachDetachRandomized(t *testing.T) {
	f := newBlobFixture(t, "mem", Options{LockTimeout: 10 * time.Second})
	ctx := context.Background()
	f.fastDeadlockDetection(t)
	const (
		blobs      = 12
		goroutines = 8
		rounds     = 40
	)
	digests := make([][32]byte, blobs)
	for i := range digests {
		digests[i] = f.put(t, content(i)).Blob.SHA256
	}
	var (
		mu      sync.Mutex
		count   = map[[32]byte]int{}
		touched = map[[32]byte]bool{}
		retries int
	)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			var held []Attachment
			localRetries := 0
			for range rounds {
				var add [][32]byte
				for range rng.IntN(4) {
					add = append(add, digests[rng.IntN(blobs)])
				}
				var drop []Attachment
				keep := held[:0:0]
				for _, a := range held {
					if rng.IntN(3) == 0 {
						drop = append(drop, a)
					} else {
						keep = append(keep, a)
					}
				}
				rollback := rng.IntN(8) == 0
				var got []Attachment
				err := f.store.WithTx(ctx, func(tx pgx.Tx) error {
					// Half the time detach first (a delete path), else attach
					// first (a push that also replaces something).
					var err error
					if rng.IntN(2) == 0 {
						if _, err = f.store.Detach(ctx, tx, f.ns, drop); err == nil {
							got, err = f.store.Attach(ctx, tx, f.ns, add)
						}
					} else {
						if got, err = f.store.Attach(ctx, tx, f.ns, add); err == nil {
							_, err = f.store.Detach(ctx, tx, f.ns, drop)
						}
					}
					if err == nil && rollback {
						return errRollback
					}
					return err
				})
				switch {
				case errors.Is(err, errRollback):
					continue
				case HasCode(err, CodeRetryable):
					localRetries++
					continue // deadlock between the two orders: the client retries
				case err != nil:
					t.Errorf("goroutine %d: %v", g, err)
					return
				}
				mu.Lock()
				for _, a := range drop {
					count[a.SHA256]--
				}
				for _, a := range got {
					count[a.SHA256]++
					touched[a.SHA256] = true
				}
				mu.Unlock()
				held = append(keep, got...)
			}
			// Drain: drop every use of the first half of the blobs, so that
			// some blobs end at zero.
			var drop []Attachment
			for _, a := range held {
				if slices.Index(digests, a.SHA256) < blobs/2 {
					drop = append(drop, a)
				}
			}
			for {
				err := f.store.WithTx(ctx, func(tx pgx.Tx) error {
					_, err := f.store.Detach(ctx, tx, f.ns, drop)
					return err
				})
				if HasCode(err, CodeRetryable) {
					continue
				}
				if err != nil {
					t.Errorf("goroutine %d: drain: %v", g, err)
					return
				}
				break
			}
			mu.Lock()
			for _, a := range drop {
				count[a.SHA256]--
			}
			retries += localRetries
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	cands := f.candidates(t)
	zeroed := 0
	for _, d := range digests {
		if got := f.attachmentCount(t, d); got != count[d] {
			t.Errorf("blob %x: %d attachments, model %d", d[:4], got, count[d])
		}
		_, isCand := cands[d]
		if wantCand := touched[d] && count[d] == 0; isCand != wantCand {
			t.Errorf("blob %x: candidate %v, want %v (count %d, touched %v)", d[:4], isCand, wantCand, count[d], touched[d])
		}
		if touched[d] && count[d] == 0 {
			zeroed++
		}
	}
	t.Logf("%d blobs, %d at zero with a candidate, %d retryable aborts (deadlocks)", blobs, zeroed, retries)
	if zeroed == 0 {
		t.Error("no blob went to zero: the test proves nothing")
	}
}

var errRollback = errors.New("test: roll back")

// fastDeadlockDetection lowers deadlock_timeout for the fixture's database
// (PostgreSQL waits 1 s by default before it looks for a cycle).
func (f *blobFixture) fastDeadlockDetection(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var db string
	if err := f.pool.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET deadlock_timeout = '50ms'`); err != nil {
		t.Fatal(err)
	}
	f.pool.Reset() // new connections pick the setting up
}

// TestCrashRecoveryReupload: GC deleted the object and crashed before its
// commit, so the blob row and its candidate are still there. The next
// dedup commit of the same bytes sees the live candidate, checks storage
// under the lock, finds the object gone and puts the bytes back; an attach
// without new bytes reports "must re-upload".
func TestCrashRecoveryReupload(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			data := randomBytes(1<<20+9, 11)
			blob := f.put(t, data).Blob
			atts := f.attach(t, blob.SHA256)
			f.detach(t, atts...)
			if len(f.candidates(t)) != 1 {
				t.Fatal("no candidate")
			}
			// Candidate and object present: the dedup checks and keeps it.
			res, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), want(data))
			if err != nil || !res.Deduplicated || !res.ObjectChecked || res.Reuploaded {
				t.Fatalf("dedup with a live candidate: %+v %v", res, err)
			}
			// The crash: object deleted, row and candidate kept.
			if err := f.objects.Delete(ctx, blob.ObjectStorageKey); err != nil {
				t.Fatal(err)
			}
			// Attaching without bytes: must re-upload, nothing changes.
			err = f.store.WithTx(ctx, func(tx pgx.Tx) error {
				_, err := f.store.Attach(ctx, tx, f.ns, [][32]byte{blob.SHA256})
				return err
			})
			if !HasCode(err, CodeBlobMustReupload) {
				t.Fatalf("attach of a blob without object: %v", err)
			}
			if len(f.candidates(t)) != 1 || f.attachmentCount(t, blob.SHA256) != 0 {
				t.Fatal("failed attach changed state")
			}
			// Resumable re-push: detected and re-uploaded from its bytes.
			u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(data[:1000])); err != nil {
				t.Fatal(err)
			}
			res, err = f.store.CommitUpload(ctx, u.Ref(), bytes.NewReader(data[1000:]), want(data))
			if err != nil || !res.Reuploaded || res.Blob.ID != blob.ID {
				t.Fatalf("re-push: %+v %v", res, err)
			}
			r, _, err := f.store.OpenBlob(ctx, f.ns, blob.SHA256, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, data) {
				t.Fatal("re-uploaded bytes differ")
			}
			// Now the attach goes through and clears the candidate.
			f.attach(t, blob.SHA256)
			if len(f.candidates(t)) != 0 {
				t.Fatal("candidate not cleared")
			}
			if keys := f.uploadKeys(t); len(keys) != 0 {
				t.Fatalf("upload data left: %v", keys)
			}
		})
	}
}

// holdBlobLock locks a blob row from another connection until release.
func (f *blobFixture) holdBlobLock(t *testing.T, sha [32]byte) (release func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2 FOR UPDATE`, f.ns, sha[:]); err != nil {
		t.Fatal(err)
	}
	return func() { _ = tx.Rollback(ctx) }
}

func pgErrCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestLockTimeoutRetryable: a blob row held FOR UPDATE by another
// connection makes attach, detach and the dedup commit wait; past the lock
// timeout they fail with CodeRetryable (55P03 underneath) and change nothing.
func TestLockTimeoutRetryable(t *testing.T) {
	f := newBlobFixture(t, "file", Options{LockTimeout: 150 * time.Millisecond})
	ctx := context.Background()
	data := content(1)
	sha := f.put(t, data).Blob.SHA256
	atts := f.attach(t, sha)

	release := f.holdBlobLock(t, sha)
	err := f.store.WithTx(ctx, func(tx pgx.Tx) error {
		_, err := f.store.Attach(ctx, tx, f.ns, [][32]byte{sha})
		return err
	})
	if !HasCode(err, CodeRetryable) || pgErrCode(err) != "55P03" {
		t.Fatalf("attach: %v", err)
	}
	err = f.store.WithTx(ctx, func(tx pgx.Tx) error {
		_, err := f.store.Detach(ctx, tx, f.ns, atts)
		return err
	})
	if !HasCode(err, CodeRetryable) {
		t.Fatalf("detach: %v", err)
	}
	u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadMonolithic)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CommitUpload(ctx, u.Ref(), bytes.NewReader(data), want(data)); !HasCode(err, CodeRetryable) {
		t.Fatalf("dedup commit: %v", err)
	}
	release()
	// Nothing changed; the session survived, so the client's retry (the
	// same request again) works.
	if f.attachmentCount(t, sha) != 1 {
		t.Fatal("attachment count changed")
	}
	if res, err := f.store.CommitUpload(ctx, u.Ref(), bytes.NewReader(data), want(data)); err != nil || !res.Deduplicated {
		t.Fatalf("retried commit: %+v %v", res, err)
	}
}

// TestDeadlockRetryable: a push (blob rows, then the artifact row) and a
// delete (artifact row, then blob rows) lock in opposite orders by
// necessity (docs/garbage-collection.md "Lock protocol"). PostgreSQL
// aborts one of them with a deadlock, which
// surfaces as CodeRetryable; the other commits.
func TestDeadlockRetryable(t *testing.T) {
	f := newBlobFixture(t, "mem", Options{LockTimeout: 20 * time.Second})
	ctx := context.Background()
	f.fastDeadlockDetection(t)
	sha := f.put(t, content(1)).Blob.SHA256
	atts := f.attach(t, sha)
	lockArtifact := func(tx pgx.Tx) error {
		// The repositories row stands in for an artifact metadata row.
		_, err := tx.Exec(ctx, `SELECT 1 FROM repositories WHERE namespace_id = $1 AND id = $2 FOR UPDATE`, f.ns, f.repo)
		return err
	}
	pushHasBlob, deleteHasArtifact := make(chan struct{}), make(chan struct{})
	var pushErr, deleteErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		pushErr = f.store.WithTx(ctx, func(tx pgx.Tx) error {
			if _, err := f.store.Attach(ctx, tx, f.ns, [][32]byte{sha}); err != nil {
				return err
			}
			close(pushHasBlob)
			<-deleteHasArtifact
			return lockArtifact(tx)
		})
	})
	wg.Go(func() {
		deleteErr = f.store.WithTx(ctx, func(tx pgx.Tx) error {
			<-pushHasBlob
			if err := lockArtifact(tx); err != nil {
				return err
			}
			close(deleteHasArtifact)
			_, err := f.store.Detach(ctx, tx, f.ns, atts)
			return err
		})
	})
	wg.Wait()
	var lost error
	switch {
	case pushErr != nil && deleteErr == nil:
		lost = pushErr
	case deleteErr != nil && pushErr == nil:
		lost = deleteErr
	default:
		t.Fatalf("want exactly one loser: push %v, delete %v", pushErr, deleteErr)
	}
	if !HasCode(lost, CodeRetryable) || pgErrCode(lost) != "40P01" {
		t.Fatalf("loser: %v", lost)
	}
	want := 0 // push lost: the delete removed the one attachment
	if deleteErr != nil {
		want = 2 // delete lost: the push added a second one
	}
	if got := f.attachmentCount(t, sha); got != want {
		t.Fatalf("%d attachments, want %d", got, want)
	}
}

// TestCommitAfterGCDeletedRow: the blob row vanished (GC cleanup committed)
// between two pushes: the next commit inserts a fresh row and object.
func TestCommitAfterGCDeletedRow(t *testing.T) {
	f := newBlobFixture(t, "file", Options{})
	ctx := context.Background()
	data := content(5)
	blob := f.put(t, data).Blob
	if err := f.objects.Delete(ctx, blob.ObjectStorageKey); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `DELETE FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`, f.ns, blob.SHA256[:]); err != nil {
		t.Fatal(err)
	}
	res := f.put(t, data)
	if !res.Created || res.Blob.ID == blob.ID {
		t.Fatalf("%+v", res)
	}
	if ok, err := f.objects.Exists(ctx, res.Blob.ObjectStorageKey); err != nil || !ok {
		t.Fatalf("object: %v %v", ok, err)
	}
}

// waitForLockWait polls until some backend of the database waits on a lock.
func (f *blobFixture) waitForLockWait(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for range 2000 {
		var n int
		err := f.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("nobody waits on a lock")
}

// TestCommitWhileGCDeletesRow: a dedup commit waits on the blob-row lock
// held by gc:cleanup, which deletes the object and the row and commits. The
// commit must not trust the vanished row: it inserts a new row and puts its
// own bytes in place.
func TestCommitWhileGCDeletesRow(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{})
			ctx := context.Background()
			data := randomBytes(100000, 12)
			old := f.put(t, data).Blob
			gc, err := f.pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer gc.Rollback(ctx)
			if _, err := gc.Exec(ctx, `SELECT 1 FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2 FOR UPDATE NOWAIT`, f.ns, old.SHA256[:]); err != nil {
				t.Fatal(err)
			}
			type result struct {
				res *CommitResult
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), want(data))
				done <- result{res, err}
			}()
			f.waitForLockWait(t)
			if err := f.objects.Delete(ctx, old.ObjectStorageKey); err != nil {
				t.Fatal(err)
			}
			if _, err := gc.Exec(ctx, `DELETE FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`, f.ns, old.SHA256[:]); err != nil {
				t.Fatal(err)
			}
			if err := gc.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil || !r.res.Created || r.res.Blob.ID == old.ID {
				t.Fatalf("commit racing the GC delete: %+v %v", r.res, r.err)
			}
			rd, _, err := f.store.OpenBlob(ctx, f.ns, old.SHA256, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rd)
			rd.Close()
			if !bytes.Equal(got, data) {
				t.Fatal("object differs")
			}
		})
	}
}
