package store

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// recordingObserver is a PushObserver that keeps what it was told.
type recordingObserver struct {
	mu      sync.Mutex
	waits   []time.Duration
	present int
	missing int
	errs    int
}

func (o *recordingObserver) ObserveBlobLockWait(d time.Duration) {
	o.mu.Lock()
	o.waits = append(o.waits, d)
	o.mu.Unlock()
}

func (o *recordingObserver) ObserveDedupObjectCheck(present bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err != nil:
		o.errs++
	case present:
		o.present++
	default:
		o.missing++
	}
}

func (o *recordingObserver) snapshot() (waits, present, missing, errs int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.waits), o.present, o.missing, o.errs
}

// The push path reports to the installed observer: one blob-row lock wait
// per dedup commit, attach and detach (a new blob's commit locks no
// existing row), one existence check per dedup or attach that met a live
// GC candidate (present, then missing after the simulated crash), and a
// lock wait that covers the time another transaction held the row.
func TestPushObserverHooks(t *testing.T) {
	for _, backend := range objectBackends {
		t.Run(backend, func(t *testing.T) {
			f := newBlobFixture(t, backend, Options{LockTimeout: 5 * time.Second})
			o := &recordingObserver{}
			f.store.SetPushObserver(o)
			t.Cleanup(func() { f.store.SetPushObserver(nil) })
			ctx := context.Background()
			data := randomBytes(70_000, 21)
			step := func(what string, wantWaits, wantPresent, wantMissing int) {
				t.Helper()
				w, p, m, e := o.snapshot()
				if w != wantWaits || p != wantPresent || m != wantMissing || e != 0 {
					t.Fatalf("after %s: %d lock waits, checks present %d missing %d errors %d; want %d, %d, %d, 0",
						what, w, p, m, e, wantWaits, wantPresent, wantMissing)
				}
			}
			blob := f.put(t, data).Blob
			step("new blob", 0, 0, 0)
			f.put(t, data)
			step("dedup commit", 1, 0, 0)
			atts := f.attach(t, blob.SHA256)
			step("attach", 2, 0, 0)
			f.detach(t, atts...)
			step("detach", 3, 0, 0)
			// A live candidate: the dedup checks storage under the lock.
			if res, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), want(data)); err != nil || !res.ObjectChecked {
				t.Fatalf("dedup with a candidate: %+v %v", res, err)
			}
			step("dedup with a candidate", 4, 1, 0)
			if err := f.objects.Delete(ctx, blob.ObjectStorageKey); err != nil {
				t.Fatal(err)
			}
			err := f.store.WithTx(ctx, func(tx pgx.Tx) error {
				_, err := f.store.Attach(ctx, tx, f.ns, [][32]byte{blob.SHA256})
				return err
			})
			if !HasCode(err, CodeBlobMustReupload) {
				t.Fatalf("attach without object: %v", err)
			}
			step("attach of a missing object", 5, 1, 1)

			// A held row: the observed wait covers the hold (released only
			// after the commit is seen waiting for it).
			release := f.holdBlobLock(t, blob.SHA256)
			done := make(chan error, 1)
			go func() {
				_, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), want(data))
				done <- err
			}()
			f.waitForLockWait(t)
			const hold = 200 * time.Millisecond
			time.Sleep(hold)
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			o.mu.Lock()
			last := o.waits[len(o.waits)-1]
			o.mu.Unlock()
			if last < hold {
				t.Fatalf("lock wait %v while the row was held for %v after the commit started waiting", last, hold)
			}
		})
	}
}
