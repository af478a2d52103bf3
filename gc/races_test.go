package gc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// The race and fault tests of docs/garbage-collection.md, one per rule. All
// run against real
// PostgreSQL and the file backend, on the fake clock.

// A re-push during the review delay clears the candidate, and the blob
// survives every later GC run.
func TestRepushDuringDelayClearsCandidate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	layer := blobData("layer", 4096)
	atts := e.mustPush(layer)
	e.clock.Advance(store.GCGracePeriod) // the blob is old: only the delay protects it
	if zero := e.mustDetach(atts...); len(zero) != 1 {
		t.Fatalf("detach recorded %d candidates, want 1", len(zero))
	}
	if e.candidate(layer) == nil {
		t.Fatal("no candidate after the last detach")
	}
	e.clock.Advance(testReviewDelay / 2)
	res, err := e.upload(layer)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Deduplicated || !res.ObjectChecked || res.Reuploaded {
		t.Fatalf("re-push commit: %+v, want a dedup skip that checked storage under the live candidate", res)
	}
	e.mustPush(layer)
	if c := e.candidate(layer); c != nil {
		t.Fatalf("candidate survived the re-push: %+v", c)
	}
	e.pastDelayAndGrace()
	if out := e.runGC(); len(out) != 0 {
		t.Fatalf("GC acted on a re-pushed blob: %v", out)
	}
	e.assertIntact(layer)
}

// A re-reference committed after the sweep read the candidate, while its
// cleanup is on its way, is seen by the recheck under the lock; and a
// re-reference still in progress (its transaction holds the blob row)
// makes the cleanup give way at once (NOWAIT), back off without a strike,
// and leave the blob alone.
func TestRereferenceDuringCleanupSeenByRecheck(t *testing.T) {
	e := newEnv(t, Config{})
	committed := blobData("committed-meanwhile", 3000)
	inProgress := blobData("in-progress", 3000)
	a1 := e.mustPush(committed)
	a2 := e.mustPush(inProgress)
	e.clock.Advance(store.GCGracePeriod)
	e.mustDetach(a1...)
	e.mustDetach(a2...)
	e.clock.Advance(testReviewDelay + time.Minute)

	if _, err := e.g.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	jobs := e.drain()
	if len(jobs) != 2 {
		t.Fatalf("sweep enqueued %d cleanups, want 2", len(jobs))
	}

	// 1. The re-reference commits between the sweep and the cleanup.
	e.mustPush(committed)
	res, err := e.g.Cleanup(e.ctx, e.key(committed))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != store.GCCandidateGone {
		t.Fatalf("cleanup after a committed re-reference: %v, want gone", res.Outcome)
	}
	e.assertIntact(committed)

	// 2. The re-reference is in progress: its transaction holds the blob
	// row (and the candidate row it is clearing). Cleanup gives up at once.
	locked := make(chan struct{})
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	var wg sync.WaitGroup
	wg.Add(1)
	var pushErr error
	go func() {
		defer wg.Done()
		pushErr = e.st.WithTx(e.ctx, func(tx pgx.Tx) error {
			_, err := e.st.Attach(e.ctx, tx, e.ns, [][32]byte{e.key(inProgress).SHA256})
			close(locked)
			<-release
			return err
		})
	}()
	<-locked
	start := time.Now()
	res, err = e.g.Cleanup(e.ctx, e.key(inProgress))
	waited := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != store.GCBlobLocked {
		t.Fatalf("cleanup on a held row: %v, want locked", res.Outcome)
	}
	if waited > time.Second {
		t.Fatalf("cleanup waited %v on a held row; NOWAIT must give up at once", waited)
	}
	releaseOnce()
	wg.Wait()
	if pushErr != nil {
		t.Fatal(pushErr)
	}
	if res, err = e.g.Cleanup(e.ctx, e.key(inProgress)); err != nil || res.Outcome != store.GCCandidateGone {
		t.Fatalf("cleanup after the re-reference committed: %v %v, want gone", res, err)
	}
	e.assertIntact(inProgress)
}

// A foreground transaction that holds only the blob row (a dedup commit
// checking the object under its lock) makes cleanup give way at once and
// requeue with backoff on the candidate row, in its own transaction,
// without a strike; the next attempt after the backoff reclaims the blob.
func TestCleanupGivesWayToHeldBlobRow(t *testing.T) {
	e := newEnv(t, Config{})
	layer := blobData("held", 3000)
	e.mustDetach(e.mustPush(layer)...)
	e.pastDelayAndGrace()
	sum := e.key(layer).SHA256
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx) //nolint:errcheck
	// The foreground holder (what commitSQL's FOR UPDATE of a dedup does).
	if _, err := tx.Exec(e.ctx, `SELECT 1 FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2 FOR UPDATE`, e.ns, sum[:]); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := e.g.Cleanup(e.ctx, e.key(layer))
	if err != nil || res.Outcome != store.GCBlobLocked {
		t.Fatalf("cleanup on a held row: %v %v", res, err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Fatalf("cleanup waited %v", waited)
	}
	c := e.candidate(layer)
	if c == nil || c.Strikes != 0 || c.Attempts != 1 || c.BackoffUntil == nil || !c.BackoffUntil.After(e.clock.Now()) {
		t.Fatalf("candidate after a lock conflict: %+v, want attempts 1, no strike, backing off", c)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if out := e.runGC(); len(out) != 0 {
		t.Fatalf("sweep ignored the backoff: %v", out)
	}
	e.clock.Advance(DefaultBackoffBase)
	if out := e.runGC(); out[store.GCReclaimed] != 1 {
		t.Fatalf("outcomes %v after the backoff", out)
	}
	e.assertGone(layer)
}

// A stale candidate whose blob is attached (a reference that reappeared
// without clearing it) is discarded by the recheck, and nothing is deleted.
func TestRecheckDiscardsCandidateOfReferencedBlob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	layer := blobData("stale", 2000)
	e.mustPush(layer)
	e.pastDelayAndGrace()
	// Fixture: a candidate recorded behind the blob layer's back.
	sum := e.key(layer).SHA256
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after) VALUES ($1, $2, $3)`,
		e.ns, sum[:], e.clock.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	out := e.runGC()
	if out[store.GCReferenced] != 1 || len(out) != 1 {
		t.Fatalf("outcomes %v, want one referenced", out)
	}
	if e.candidate(layer) != nil {
		t.Fatal("candidate of a referenced blob was not discarded")
	}
	e.assertIntact(layer)
}

// Push (blob rows first, then the artifact row) and delete (artifact row
// first, then blob rows) lock in opposite orders and can deadlock. The
// loser gets store.CodeRetryable (503 with Retry-After at the protocol),
// never an unmapped error (500); the winner commits; a retry succeeds.
func TestPushDeleteDeadlockLoserGetsRetryable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	shared := blobData("shared-layer", 1500)
	old := e.mustPush(shared) // the artifact being deleted references it
	if _, err := e.upload(shared); err != nil {
		t.Fatal(err)
	}
	// The "artifact metadata row" both paths lock: the repository row
	// stands in for the format's manifest row here.
	lockArtifact := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT 1 FROM repositories WHERE namespace_id = $1 AND id = $2 FOR UPDATE`, e.ns, e.repo)
		return err
	}
	pushLocked := make(chan struct{})
	deleteLocked := make(chan struct{})
	var wg sync.WaitGroup
	var pushErr, deleteErr error
	wg.Add(2)
	go func() { // push: blob rows, then the artifact row
		defer wg.Done()
		pushErr = e.st.WithTx(e.ctx, func(tx pgx.Tx) error {
			if _, err := e.st.Attach(e.ctx, tx, e.ns, [][32]byte{e.key(shared).SHA256}); err != nil {
				return err
			}
			close(pushLocked)
			<-deleteLocked
			return lockArtifact(e.ctx, tx)
		})
	}()
	go func() { // delete: the artifact row, then blob rows
		defer wg.Done()
		deleteErr = e.st.WithTx(e.ctx, func(tx pgx.Tx) error {
			if err := lockArtifact(e.ctx, tx); err != nil {
				return err
			}
			close(deleteLocked)
			<-pushLocked
			_, err := e.st.Detach(e.ctx, tx, e.ns, old)
			return err
		})
	}()
	wg.Wait()
	for name, err := range map[string]error{"push": pushErr, "delete": deleteErr} {
		if err != nil && !store.HasCode(err, store.CodeRetryable) {
			t.Fatalf("%s failed with an unmapped error (would be a 500): %v", name, err)
		}
	}
	if (pushErr == nil) == (deleteErr == nil) {
		t.Fatalf("want exactly one loser: push=%v delete=%v", pushErr, deleteErr)
	}
	// The client retries the loser, which now succeeds.
	if pushErr != nil {
		e.mustPush(shared)
	} else {
		e.mustDetach(old...)
	}
	e.assertIntact(shared)
}

// A crash after the storage delete and before the commit leaves the blob
// row and the candidate; the next push of those bytes re-uploads them, and
// the next cleanup succeeds idempotently (a missing object counts as
// deleted).
func TestCrashAfterStorageDeleteBeforeCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	repushed := blobData("repushed-after-crash", 5000)
	retried := blobData("cleanup-retried-after-crash", 5000)
	a1 := e.mustPush(repushed)
	a2 := e.mustPush(retried)
	e.clock.Advance(store.GCGracePeriod)
	e.mustDetach(a1...)
	e.mustDetach(a2...)
	e.clock.Advance(testReviewDelay + time.Minute)

	errCrash := errors.New("simulated crash")
	e.g.afterObjectDelete = func(context.Context, *store.Blob) error { return errCrash }
	for _, b := range [][]byte{repushed, retried} {
		if _, err := e.g.Cleanup(e.ctx, e.key(b)); !errors.Is(err, errCrash) {
			t.Fatalf("cleanup with a crash: %v", err)
		}
		if _, err := e.st.StatBlob(e.ctx, e.ns, e.key(b).SHA256); err != nil {
			t.Fatalf("blob row gone after a crash before commit: %v", err)
		}
		if e.candidate(b) == nil {
			t.Fatal("candidate gone after a crash before commit")
		}
		if e.objectExists(b) {
			t.Fatal("object still there: the crash hook runs after the storage delete")
		}
	}
	e.g.afterObjectDelete = nil

	// The next push: the dedup skip sees the live candidate, checks
	// storage under the lock, finds nothing and re-uploads.
	res, err := e.upload(repushed)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Deduplicated || !res.ObjectChecked || !res.Reuploaded {
		t.Fatalf("push after the crash: %+v, want a re-upload", res)
	}
	a1 = e.mustPush(repushed)
	e.assertIntact(repushed)
	if e.candidate(repushed) != nil {
		t.Fatal("attach did not clear the candidate")
	}

	// The next cleanup of the other one finds the object missing and
	// finishes the job.
	out, err := e.g.Cleanup(e.ctx, e.key(retried))
	if err != nil || out.Outcome != store.GCReclaimed {
		t.Fatalf("cleanup after the crash: %v %v, want reclaimed", out, err)
	}
	e.assertGone(retried)
	if e.candidate(retried) != nil {
		t.Fatal("candidate left after the idempotent cleanup")
	}

	// And the re-pushed blob is reclaimed normally once dropped again.
	e.mustDetach(a1...)
	e.clock.Advance(testReviewDelay + time.Minute)
	if out := e.runGC(); out[store.GCReclaimed] != 1 {
		t.Fatalf("outcomes %v, want one reclaimed", out)
	}
	e.assertGone(repushed)
}

// A blob that was committed but never attached, younger than the grace
// window, is untouched by the reconcile scan and by cleanup; once past the
// window the scan records it and GC reclaims it, even while a writer keeps
// a newer upload session open in the namespace (one opened after the blob
// cannot be on its way to attaching it).
func TestGraceWindowProtectsNeverAttachedBlob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	orphan := blobData("never-attached", 2500)
	young := blobData("attached-then-dropped-young", 2500)
	if _, err := e.upload(orphan); err != nil {
		t.Fatal(err)
	}
	atts := e.mustPush(young)
	e.mustDetach(atts...)

	// Past the review delay, inside the grace window.
	e.clock.Advance(store.GCGracePeriod - time.Hour)
	r, err := e.g.ReconcileScan(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Recorded != 0 {
		t.Fatalf("reconcile recorded %d young blobs", r.Recorded)
	}
	if e.candidate(orphan) != nil {
		t.Fatal("candidate for a young never-attached blob")
	}
	// cleanup reaches the young dropped blob (its candidate is due) and
	// must not delete it: it backs off until the window ends.
	out := e.runGC()
	if out[store.GCTooYoung] != 1 || out[store.GCReclaimed] != 0 {
		t.Fatalf("outcomes %v, want one too_young", out)
	}
	c := e.candidate(young)
	if c == nil || c.BackoffUntil == nil || c.Strikes != 0 {
		t.Fatalf("candidate of the young blob: %+v", c)
	}
	e.assertIntact(orphan)
	e.assertIntact(young)

	// Past the window, with an upload in flight in the namespace that was
	// opened after the blob's commit: the scan records the blob.
	e.clock.Advance(2 * time.Hour)
	if _, err := e.st.StartUpload(e.ctx, e.ns, e.repo, store.UploadResumable); err != nil {
		t.Fatal(err)
	}
	if r, err = e.g.ReconcileScan(e.ctx); err != nil || r.Recorded != 1 {
		t.Fatalf("reconcile past the window with a newer upload open: %+v %v, want 1 recorded", r, err)
	}
	if c := e.candidate(orphan); c == nil || c.ReviewAfter.Before(e.clock.Now().Add(testReviewDelay-time.Second)) {
		t.Fatalf("reconciled candidate %+v: want due after the review delay", c)
	}
	e.clock.Advance(testReviewDelay + time.Minute)
	if out := e.runGC(); out[store.GCReclaimed] != 2 {
		t.Fatalf("outcomes %v, want both reclaimed", out)
	}
	e.assertGone(orphan)
	e.assertGone(young)
}

// The kill switch: off (operator) or unreadable (fail-closed) means no
// object is deleted, whether the sweep or the per-delete check sees it.
func TestKillSwitchOffOrUnreadableDeletesNothing(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, cfg Config) (*env, [][]byte) {
		e := newEnv(t, cfg)
		var blobs [][]byte
		for _, n := range []string{"a", "b", "c"} {
			b := blobData("ks-"+n, 1000)
			blobs = append(blobs, b)
			e.mustDetach(e.mustPush(b)...)
		}
		e.pastDelayAndGrace()
		return e, blobs
	}
	intact := func(e *env, blobs [][]byte) {
		e.t.Helper()
		for _, b := range blobs {
			e.assertIntact(b)
			if e.candidate(b) == nil {
				e.t.Fatal("candidate lost while reclamation was stopped")
			}
		}
	}

	t.Run("operator", func(t *testing.T) {
		e, blobs := setup(t, Config{})
		if _, err := e.st.SetGCReclaim(e.ctx, false, "alice", "incident 42"); err != nil {
			t.Fatal(err)
		}
		res, err := e.g.Sweep(e.ctx)
		if err != nil || res.Skipped != "stopped" {
			t.Fatalf("sweep with the switch off: %+v %v", res, err)
		}
		for _, b := range blobs { // jobs enqueued before the switch went off
			out, err := e.g.Cleanup(e.ctx, e.key(b))
			if err != nil || out.Outcome != store.GCDeleteStopped {
				t.Fatalf("cleanup with the switch off: %v %v", out, err)
			}
		}
		intact(e, blobs)
		if v := gatherGauge(t, e.g, MetricReclaimStopped, "reason", StopOperator); v != 1 {
			t.Fatalf("reclaim_stopped{operator} = %v", v)
		}
		// Turned back on, GC resumes.
		if _, err := e.st.SetGCReclaim(e.ctx, true, "alice", "resolved"); err != nil {
			t.Fatal(err)
		}
		if out := e.runGC(); out[store.GCReclaimed] != 3 {
			t.Fatalf("outcomes %v after the switch went back on", out)
		}
	})

	t.Run("flipped between sweep and delete", func(t *testing.T) {
		e, blobs := setup(t, Config{})
		if _, err := e.g.Sweep(e.ctx); err != nil {
			t.Fatal(err)
		}
		jobs := e.drain()
		if len(jobs) != 3 {
			t.Fatalf("enqueued %d", len(jobs))
		}
		first, err := e.g.Cleanup(e.ctx, jobs[0])
		if err != nil || first.Outcome != store.GCReclaimed {
			t.Fatalf("first cleanup: %v %v", first, err)
		}
		if _, err := e.st.SetGCReclaim(e.ctx, false, "bob", ""); err != nil {
			t.Fatal(err)
		}
		for _, k := range jobs[1:] {
			out, err := e.g.Cleanup(e.ctx, k)
			if err != nil || out.Outcome != store.GCDeleteStopped {
				t.Fatalf("cleanup after the switch went off mid-batch: %v %v", out, err)
			}
		}
		if left := e.readable(blobs); left != 2 {
			t.Fatalf("%d blobs left, want 2", left)
		}
	})

	t.Run("unreadable: table missing", func(t *testing.T) {
		e, blobs := setup(t, Config{})
		if _, err := e.pool.Exec(e.ctx, `DROP TABLE gc_controls`); err != nil {
			t.Fatal(err)
		}
		if res, err := e.g.Sweep(e.ctx); err != nil || res.Skipped != "stopped" {
			t.Fatalf("sweep with an unreadable switch: %+v %v", res, err)
		}
		for _, b := range blobs {
			out, err := e.g.Cleanup(e.ctx, e.key(b))
			if err != nil || out.Outcome != store.GCDeleteStopped {
				t.Fatalf("cleanup with an unreadable switch: %v %v", out, err)
			}
		}
		intact(e, blobs)
		if v := gatherGauge(t, e.g, MetricReclaimStopped, "reason", StopFailClosed); v != 1 {
			t.Fatalf("reclaim_stopped{fail_closed} = %v", v)
		}
		if v := gatherGauge(t, e.g, MetricReclaimEnabled); v != 0 {
			t.Fatalf("reclaim_enabled = %v", v)
		}
	})

	t.Run("unreadable: source hangs or errors", func(t *testing.T) {
		for name, ks := range map[string]KillSwitch{
			"hangs":  hangingSwitch{},
			"errors": failingSwitch{},
		} {
			e, blobs := setup(t, Config{KillSwitch: ks})
			for _, b := range blobs {
				out, err := e.g.Cleanup(e.ctx, e.key(b))
				if err != nil || out.Outcome != store.GCDeleteStopped {
					t.Fatalf("%s: cleanup: %v %v", name, out, err)
				}
			}
			intact(e, blobs)
		}
	})
}

type hangingSwitch struct{}

func (hangingSwitch) ReclaimEnabled(ctx context.Context) (bool, string, error) {
	<-ctx.Done()
	return true, "", ctx.Err() // "true" with an error must still stop
}

type failingSwitch struct{}

func (failingSwitch) ReclaimEnabled(context.Context) (bool, string, error) {
	return true, "", errors.New("flag service unreachable")
}

// A backend that fails every delete pauses the sweep (in the database, for
// every worker) without striking any candidate; the pause ends by itself
// and GC resumes once the backend is healthy.
func TestFailingBackendPausesSweepWithoutStrikes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var blobs [][]byte
	for i := range 20 {
		b := blobData("broken-backend-"+string(rune('a'+i)), 800)
		blobs = append(blobs, b)
		e.mustDetach(e.mustPush(b)...)
	}
	e.pastDelayAndGrace()
	errBackend := errors.New("503 slow down")
	e.g.deleteObject = func(context.Context, string) error { return errBackend }

	out := e.runGC()
	if out[store.GCDeleteFailed] != DefaultFailureMinSamples {
		t.Fatalf("outcomes %v: want %d failed deletes before the pause", out, DefaultFailureMinSamples)
	}
	st, err := e.st.GCSweepState(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.PausedAt(e.clock.Now()) {
		t.Fatalf("sweep not paused: %+v", st)
	}
	for _, b := range blobs {
		c := e.candidate(b)
		if c == nil || c.Strikes != 0 || c.ExcludedAt != nil {
			t.Fatalf("candidate %+v: a broken backend must not strike", c)
		}
		e.assertIntact(b)
	}
	if v := gatherGauge(t, e.g, MetricSweepPaused); v != 1 {
		t.Fatalf("sweep_paused = %v", v)
	}
	// Another worker (a second GC on the same database) sees the pause.
	other := e.newGC(Config{})
	if res, err := other.Sweep(e.ctx); err != nil || res.Skipped != "paused" {
		t.Fatalf("second worker's sweep: %+v %v", res, err)
	}

	// Still broken after the pause: the sweep runs, fails, pauses again,
	// still without strikes.
	e.clock.Advance(DefaultPauseDuration + DefaultBackoffMax)
	if res, err := e.g.Sweep(e.ctx); err != nil || res.Skipped != "" {
		t.Fatalf("sweep after the pause: %+v %v", res, err)
	}
	again := map[store.GCCleanupOutcome]int{}
	for _, k := range e.drain() {
		res, err := e.g.Cleanup(e.ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		again[res.Outcome]++
	}
	if st, _ := e.st.GCSweepState(e.ctx); !st.PausedAt(e.clock.Now()) {
		t.Fatalf("sweep not paused again: %+v, outcomes %v", st, again)
	}
	for _, b := range blobs {
		if c := e.candidate(b); c.Strikes != 0 {
			t.Fatalf("strike while paused: %+v", c)
		}
	}

	// The backend recovers; after the pause everything is reclaimed.
	e.g.deleteObject = nil
	e.clock.Advance(DefaultPauseDuration + DefaultBackoffMax)
	if out := e.runGC(); out[store.GCReclaimed] != len(blobs) {
		t.Fatalf("outcomes %v after recovery", out)
	}
	for _, b := range blobs {
		e.assertGone(b)
	}
}

// One candidate that keeps failing among good ones is struck out and
// excluded (kept, out of the dequeue and the drain signals); the good ones
// are reclaimed; the sweep is never paused. An operator can list and
// requeue it.
func TestBadCandidateStruckOutAndExcluded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{StrikeLimit: 3})
	bad := blobData("bad-candidate", 700)
	badKey := e.key(bad)
	var good [][]byte
	for i := range 30 {
		b := blobData("good-"+string(rune('a'+i)), 700)
		good = append(good, b)
		e.mustDetach(e.mustPush(b)...)
	}
	e.mustDetach(e.mustPush(bad)...)
	e.pastDelayAndGrace()
	e.g.deleteObject = func(ctx context.Context, key string) error {
		if key == objstoreKey(badKey) {
			return errors.New("access denied on this object")
		}
		return e.st.Objects().Delete(ctx, key)
	}
	for round := 0; round < 20 && e.candidate(bad).ExcludedAt == nil; round++ {
		e.runGC()
		e.clock.Advance(DefaultBackoffMax)
	}
	c := e.candidate(bad)
	if c == nil || c.ExcludedAt == nil || c.Strikes != 3 {
		t.Fatalf("bad candidate: %+v, want excluded at 3 strikes", c)
	}
	if c.LastError == nil || *c.LastError == "" {
		t.Fatal("no last_error on the excluded candidate")
	}
	for _, b := range good {
		e.assertGone(b)
	}
	e.assertIntact(bad)
	if st, _ := e.st.GCSweepState(e.ctx); st.PausedUntil != nil {
		t.Fatalf("one bad candidate paused the sweep: %+v", st)
	}
	// Out of the dequeue and the drain signals.
	if res, err := e.g.Sweep(e.ctx); err != nil || res.Partitions != 0 {
		t.Fatalf("sweep after the exclusion: %+v %v", res, err)
	}
	if v := gatherGauge(t, e.g, MetricCandidatesExcluded); v != 1 {
		t.Fatalf("excluded gauge %v", v)
	}
	if v := gatherGauge(t, e.g, MetricCandidatesDue); v != 0 {
		t.Fatalf("due gauge %v", v)
	}
	list, more, err := e.st.ExcludedGCCandidates(e.ctx, e.ns, nil, 10)
	if err != nil || more || len(list) != 1 || list[0].SHA256 != badKey.SHA256 {
		t.Fatalf("excluded list: %v %v %v", list, more, err)
	}
	// The operator fixes the object and requeues it.
	e.g.deleteObject = nil
	if _, err := e.st.RequeueGCCandidate(e.ctx, e.ns, badKey.SHA256); err != nil {
		t.Fatal(err)
	}
	if out := e.runGC(); out[store.GCReclaimed] != 1 {
		t.Fatalf("outcomes %v after the requeue", out)
	}
	e.assertGone(bad)
}

func objstoreKey(k store.GCCandidateKey) string { return objstore.BlobKey(k.NamespaceID, k.SHA256) }
