package store

import (
	"context"
	"testing"
	"time"
)

// The reconcile scan's in-flight filter cannot be held open by a writer:
// only an unexpired session opened before a blob's commit shields the
// blob past the grace window (it may be the write that attaches it); a
// session opened after the commit, however long it is kept open, does
// not.
func TestReconcileIgnoresUploadsOpenedAfterTheBlob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newBlobFixture(t, "mem", Options{ReviewDelay: time.Hour, ResumableUploadTTL: 72 * time.Hour})
	eligible := func() int {
		t.Helper()
		p, err := f.store.ReconcileGCPage(ctx, f.clock.Now(), nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		return p.Eligible
	}
	older, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	f.put(t, randomBytes(4000, 41)) // committed, never attached
	f.clock.Advance(time.Minute)
	if _, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable); err != nil {
		t.Fatal(err)
	}

	f.clock.Advance(GCGracePeriod + time.Hour)
	if n := eligible(); n != 0 {
		t.Fatalf("%d eligible while a session opened before the commit is in flight", n)
	}
	// A writer keeps opening sessions: they are all newer than the blob.
	if _, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable); err != nil {
		t.Fatal(err)
	}
	if err := f.store.CancelUpload(ctx, older.Ref()); err != nil {
		t.Fatal(err)
	}
	if n := eligible(); n != 1 {
		t.Fatalf("%d eligible with only newer sessions open, want the never-attached blob", n)
	}
}
