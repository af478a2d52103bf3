package gc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
)

func (e *env) lastReclaimedAt() *time.Time {
	e.t.Helper()
	q, err := e.st.GCQueueOf(e.ctx, e.ns)
	if err != nil {
		e.t.Fatal(err)
	}
	return q.LastReclaimedAt
}

// namespace_statistics.gc_last_reclaimed_at (GraphQL gcQueue.lastReclaimedAt)
// moves with the deleting transaction: not on a rollback after the storage
// delete, set to the cleanup's time on a reclaim, never moved backward by a
// worker that commits a later transaction with an earlier clock, and not
// touched by phase 2 (recheck without deleting).
func TestLastReclaimedAtFollowsDeletes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	a := blobData("reclaimed-first", 3000)
	b := blobData("reclaimed-second", 3000)
	atts := e.mustPush(a, b)
	e.clock.Advance(store.GCGracePeriod)
	e.mustDetach(atts...)
	e.clock.Advance(testReviewDelay + 10*time.Minute)
	if got := e.lastReclaimedAt(); got != nil {
		t.Fatalf("lastReclaimedAt = %v before any reclaim", got)
	}

	// Phase 2 rechecks and deletes nothing: no reclaim time.
	p2 := e.newGC(Config{Phase: PhaseDiscard})
	if out, err := p2.Cleanup(e.ctx, e.key(a)); err != nil || out.Outcome != store.GCWouldDelete {
		t.Fatalf("phase 2 cleanup: %v %v", out, err)
	}
	if got := e.lastReclaimedAt(); got != nil {
		t.Fatalf("lastReclaimedAt = %v after phase 2", got)
	}
	e.clock.Advance(2 * DefaultHoldback)

	// A crash after the storage delete rolls the time back with the rows.
	errCrash := errors.New("simulated crash")
	e.g.afterObjectDelete = func(context.Context, *store.Blob) error { return errCrash }
	if _, err := e.g.Cleanup(e.ctx, e.key(a)); !errors.Is(err, errCrash) {
		t.Fatalf("cleanup with a crash: %v", err)
	}
	if got := e.lastReclaimedAt(); got != nil {
		t.Fatalf("lastReclaimedAt = %v after a rolled-back cleanup", got)
	}
	e.g.afterObjectDelete = nil

	t1 := e.clock.Now()
	if out, err := e.g.Cleanup(e.ctx, e.key(a)); err != nil || out.Outcome != store.GCReclaimed {
		t.Fatalf("cleanup: %v %v", out, err)
	}
	if got := e.lastReclaimedAt(); got == nil || !got.Equal(t1.Truncate(time.Microsecond)) {
		t.Fatalf("lastReclaimedAt = %v, want %v", got, t1)
	}

	// A worker whose clock is behind commits later: t1 stays.
	e.clock.Advance(-time.Minute)
	if out, err := e.g.Cleanup(e.ctx, e.key(b)); err != nil || out.Outcome != store.GCReclaimed {
		t.Fatalf("second cleanup: %v %v", out, err)
	}
	if got := e.lastReclaimedAt(); got == nil || !got.Equal(t1.Truncate(time.Microsecond)) {
		t.Fatalf("lastReclaimedAt = %v after an earlier-clocked reclaim, want %v", got, t1)
	}
	e.assertGone(a)
	e.assertGone(b)

	// The time is kept to the second: a reclaim within a second of it
	// leaves it, one later moves it.
	c := blobData("reclaimed-third", 3000)
	d := blobData("reclaimed-fourth", 3000)
	atts = e.mustPush(c, d)
	e.clock.Advance(store.GCGracePeriod)
	e.mustDetach(atts...)
	e.clock.Advance(testReviewDelay + 10*time.Minute)
	if _, err := e.pool.Exec(e.ctx, `UPDATE namespace_statistics SET gc_last_reclaimed_at = $2 WHERE namespace_id = $1`,
		e.ns, e.clock.Now().Add(-500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	kept := e.lastReclaimedAt()
	if out, err := e.g.Cleanup(e.ctx, e.key(c)); err != nil || out.Outcome != store.GCReclaimed {
		t.Fatalf("third cleanup: %v %v", out, err)
	}
	if got := e.lastReclaimedAt(); got == nil || !got.Equal(*kept) {
		t.Fatalf("lastReclaimedAt = %v after a reclaim within a second of it, want %v", got, kept)
	}
	e.clock.Advance(time.Second)
	t2 := e.clock.Now()
	if out, err := e.g.Cleanup(e.ctx, e.key(d)); err != nil || out.Outcome != store.GCReclaimed {
		t.Fatalf("fourth cleanup: %v %v", out, err)
	}
	if got := e.lastReclaimedAt(); got == nil || !got.Equal(t2.Truncate(time.Microsecond)) {
		t.Fatalf("lastReclaimedAt = %v after a reclaim 1.5 s after it, want %v", got, t2)
	}
}
