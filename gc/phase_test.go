package gc

import (
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// Phase 1 records (the blob layer and the reconcile scan) and deletes
// nothing; nothing is rechecked either.
func TestPhaseRecordDeletesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Phase: PhaseRecord})
	dropped := blobData("phase1-dropped", 900)
	orphan := blobData("phase1-orphan", 900)
	e.mustDetach(e.mustPush(dropped)...)
	if _, err := e.upload(orphan); err != nil {
		t.Fatal(err)
	}
	e.pastDelayAndGrace()
	if res, err := e.g.Sweep(e.ctx); err != nil || res.Skipped != "phase" {
		t.Fatalf("sweep in phase 1: %+v %v", res, err)
	}
	if res, err := e.g.Cleanup(e.ctx, e.key(dropped)); err != nil || res.Outcome != store.GCCandidateGone {
		t.Fatalf("cleanup in phase 1: %+v %v", res, err)
	}
	r, err := e.g.ReconcileScan(e.ctx)
	if err != nil || r.Recorded != 1 {
		t.Fatalf("reconcile in phase 1: %+v %v", r, err)
	}
	if s, err := e.g.StagingSweep(e.ctx); err != nil || s.Skipped != StopPhase {
		t.Fatalf("staging in phase 1: %+v %v", s, err)
	}
	e.assertIntact(dropped)
	e.assertIntact(orphan)
	if e.candidate(dropped) == nil || e.candidate(orphan) == nil {
		t.Fatal("phase 1 lost a candidate")
	}
	if v := gatherGauge(t, e.g, MetricReclaimStopped, "reason", StopPhase); v != 1 {
		t.Fatalf("reclaim_stopped{phase} = %v", v)
	}
	if v := gatherGauge(t, e.g, MetricPhase); v != 1 {
		t.Fatalf("phase gauge %v", v)
	}
}

// Phase 2 rechecks and discards re-referenced candidates, logs and holds
// back the ones it would delete, and deletes nothing.
func TestPhaseDiscardRechecksAndDeletesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Phase: PhaseDiscard, Holdback: 2 * time.Hour})
	would := blobData("phase2-would", 900)
	stale := blobData("phase2-stale", 900)
	e.mustDetach(e.mustPush(would)...)
	e.mustPush(stale)
	e.pastDelayAndGrace()
	sum := e.key(stale).SHA256
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after) VALUES ($1, $2, $3)`,
		e.ns, sum[:], e.clock.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	out := e.runGC()
	if out[store.GCWouldDelete] != 1 || out[store.GCReferenced] != 1 || out[store.GCReclaimed] != 0 {
		t.Fatalf("outcomes in phase 2: %v", out)
	}
	e.assertIntact(would)
	e.assertIntact(stale)
	c := e.candidate(would)
	if c == nil || c.BackoffUntil == nil || c.BackoffUntil.Sub(e.clock.Now().Add(2*time.Hour)).Abs() > time.Millisecond || c.Strikes != 0 {
		t.Fatalf("held-back candidate %+v", c)
	}
	if e.candidate(stale) != nil {
		t.Fatal("re-referenced candidate not discarded in phase 2")
	}
	// Switching the same database to phase 3 reclaims it.
	e.g = e.newGC(Config{Phase: PhaseDelete})
	e.clock.Advance(2 * time.Hour)
	if out := e.runGC(); out[store.GCReclaimed] != 1 {
		t.Fatalf("outcomes in phase 3: %v", out)
	}
	e.assertGone(would)
}

// The staging sweep purges expired upload sessions (object first, then
// row), in phase 3 and while the kill switch is on.
func TestStagingSweepPurgesExpiredUploads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{StagingBatch: 2})
	var ups []*store.Upload
	for range 5 {
		u, err := e.st.StartUpload(e.ctx, e.ns, e.repo, store.UploadMonolithic)
		if err != nil {
			t.Fatal(err)
		}
		ups = append(ups, u)
	}
	fresh, err := e.st.StartUpload(e.ctx, e.ns, e.repo, store.UploadResumable)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(store.DefaultMonolithicUploadTTL + time.Minute)

	if _, err := e.st.SetGCReclaim(e.ctx, false, "ops", ""); err != nil {
		t.Fatal(err)
	}
	if res, err := e.g.StagingSweep(e.ctx); err != nil || res.Skipped != StopOperator || res.Purged != 0 {
		t.Fatalf("staging with the switch off: %+v %v", res, err)
	}
	if exp, _ := e.st.ExpiredUploads(e.ctx, 100); len(exp) != 5 {
		t.Fatalf("%d expired sessions left, want 5", len(exp))
	}
	if _, err := e.st.SetGCReclaim(e.ctx, true, "ops", ""); err != nil {
		t.Fatal(err)
	}
	res, err := e.g.StagingSweep(e.ctx)
	if err != nil || res.Purged != 5 {
		t.Fatalf("staging: %+v %v", res, err)
	}
	if exp, _ := e.st.ExpiredUploads(e.ctx, 100); len(exp) != 0 {
		t.Fatalf("%d expired sessions left", len(exp))
	}
	for _, u := range ups {
		if ok, _ := e.st.Objects().Exists(e.ctx, objstore.UploadKey(u.NamespaceID, u.UploadID)); ok {
			t.Fatal("temporary upload data left behind")
		}
	}
	if _, err := e.st.UploadStatus(e.ctx, fresh.Ref()); err != nil {
		t.Fatalf("unexpired session purged: %v", err)
	}
}
