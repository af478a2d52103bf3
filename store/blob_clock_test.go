package store

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The GC grace window is measured from blob_storage_blobs.created_at
// against the store's clock. created_at comes from the same clock, so a
// store clock far from the database server's (here the fixture's fake
// clock, years ahead of the database) neither shortens the window (a
// blob "years old" the moment it is committed would be reclaimable at
// once) nor stretches it: the blob is too young until exactly one
// GCGracePeriod after its commit on the store clock, for cleanup and for
// the reconcile scan alike.
func TestBlobCreatedAtUsesStoreClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newBlobFixture(t, "file", Options{ReviewDelay: time.Hour})
	var dbNow time.Time
	if err := f.pool.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	if d := f.clock.Now().Sub(dbNow); d < 48*time.Hour {
		t.Fatalf("the fixture clock must be far from the database's (%v apart)", d)
	}
	committedAt := f.clock.Now()
	data, orphan := randomBytes(5000, 31), randomBytes(6000, 32)
	blob := f.put(t, data).Blob
	if !blob.CreatedAt.Equal(committedAt) {
		t.Fatalf("created_at %v, store clock %v", blob.CreatedAt, committedAt)
	}
	f.put(t, orphan) // never attached: only the reconcile scan finds it
	f.detach(t, f.attach(t, blob.SHA256)...)

	allow := func(context.Context, pgx.Tx) error { return nil }
	cleanup := func() GCCleanupOutcome {
		t.Helper()
		res, err := f.store.CleanupGCCandidate(ctx, GCCandidateKey{NamespaceID: f.ns, SHA256: blob.SHA256},
			GCCleanupPolicy{Now: f.clock.Now(), Delete: true, MayDelete: allow})
		if err != nil {
			t.Fatal(err)
		}
		return res.Outcome
	}
	eligible := func() int {
		t.Helper()
		p, err := f.store.ReconcileGCPage(ctx, f.clock.Now(), nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		return p.Eligible
	}

	// Review delay over, grace window not: nothing may go.
	f.clock.Advance(time.Hour + time.Minute)
	if o := cleanup(); o != GCTooYoung {
		t.Fatalf("cleanup inside the grace window: %v", o)
	}
	if n := eligible(); n != 0 {
		t.Fatalf("reconcile inside the grace window: %d eligible", n)
	}
	if ok, err := f.objects.Exists(ctx, blob.ObjectStorageKey); err != nil || !ok {
		t.Fatalf("object gone inside the grace window: %v %v", ok, err)
	}
	// One minute short of the window on the store clock: still too young.
	f.clock.Advance(committedAt.Add(GCGracePeriod - time.Minute).Sub(f.clock.Now()))
	if n := eligible(); n != 0 {
		t.Fatalf("reconcile a minute before the window ends: %d eligible", n)
	}
	// Past the window: the orphan is found, the candidate is reclaimed.
	f.clock.Advance(2 * time.Minute)
	if n := eligible(); n != 1 {
		t.Fatalf("reconcile after the window: %d eligible, want the never-attached blob", n)
	}
	if o := cleanup(); o != GCReclaimed {
		t.Fatalf("cleanup after the window: %v", o)
	}
}
