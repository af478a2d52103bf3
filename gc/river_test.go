package gc

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/artifact-registry/artifact-registry/store"
)

// Through a real River client: gc:sweep enqueues a gc:cleanup-partition
// job per partition with due candidates, they run and reclaim; cleanup
// uniqueness covers in-flight jobs only, so a blob dereferenced a second
// time within one review delay is cleaned the second time too.
func TestSweepEnqueuesCleanupsThroughRiver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var blobs [][]byte
	for i := range 10 {
		b := blobData("river-"+string(rune('a'+i)), 1200)
		blobs = append(blobs, b)
		e.mustDetach(e.mustPush(b)...)
	}
	keep := blobData("still-referenced", 1200)
	e.mustPush(keep)
	e.pastDelayAndGrace()

	c := e.riverClient(e.g)
	if _, err := c.Insert(e.ctx, SweepArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitJobs(c)
	dumpJobs(t, e, c)
	for _, o := range []string{"reclaimed", "locked", "delete_failed", "stopped", "too_young", "gone", "paused", "error", "referenced", "orphan"} {
		t.Logf("outcome %s: %v", o, gatherGauge(t, e.g, MetricCleanupOutcomes, "outcome", o))
	}
	for _, b := range blobs {
		e.assertGone(b)
	}
	e.assertIntact(keep)
	done := e.jobsOf(c, KindCleanupPartition, rivertype.JobStateCompleted)
	if want := e.partitionsOf(blobs...); len(done) != want {
		t.Fatalf("%d cleanup jobs completed, want %d (one per partition)", len(done), want)
	}
	if sweeps := e.jobsOf(c, KindSweep, rivertype.JobStateCompleted); len(sweeps) != 1 {
		t.Fatalf("%d sweeps completed", len(sweeps))
	}

	// Second episode of the same digest within one review delay of the
	// first: the completed job of the first must not suppress it.
	again := blobs[0]
	e.mustDetach(e.mustPush(again)...)
	e.clock.Advance(testReviewDelay + store.GCGracePeriod + time.Minute)
	if _, err := c.Insert(e.ctx, SweepArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitJobs(c)
	e.assertGone(again)
	if done2 := e.jobsOf(c, KindCleanupPartition, rivertype.JobStateCompleted); len(done2) != len(done)+1 {
		t.Fatalf("%d cleanup jobs completed, want %d", len(done2), len(done)+1)
	}
	if v := gatherGauge(t, e.g, MetricReclaimedObjects); v != float64(len(blobs)+1) {
		t.Fatalf("reclaimed objects %v", v)
	}
}

// A partition with a cleanup in flight is not enqueued twice (so neither
// is any candidate): the second sweep's inserts are skipped as duplicates
// while the first jobs wait.
func TestCleanupUniqueWhileInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var blobs [][]byte
	for i := range 3 {
		b := blobData("uniq-"+string(rune('a'+i)), 900)
		blobs = append(blobs, b)
		e.mustDetach(e.mustPush(b)...)
	}
	e.pastDelayAndGrace()
	// An insert-only client (not started): the jobs stay available.
	workers := river.NewWorkers()
	e.g.Register(workers)
	c, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{Workers: workers, Logger: testLogger(), TestOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	e.g.inserter = riverInserter{c}
	parts := e.partitionsOf(blobs...)
	first, err := e.g.Sweep(e.ctx)
	if err != nil || first.Enqueued != parts || first.Partitions != parts {
		t.Fatalf("first sweep: %+v %v, want %d partitions", first, err, parts)
	}
	second, err := e.g.Sweep(e.ctx)
	if err != nil || second.Enqueued != 0 || second.Duplicates != parts {
		t.Fatalf("second sweep: %+v %v", second, err)
	}
	jobs := e.jobsOf(c, KindCleanupPartition, rivertype.JobStateAvailable)
	if len(jobs) != parts || jobs[0].Queue != QueueCleanup || jobs[0].MaxAttempts != DefaultCleanupAttempts {
		t.Fatalf("jobs: %d, first %+v", len(jobs), jobs[0])
	}
}

// The periodic jobs of phase 3, on a started client: River's leader runs
// them at start (RunOnStart), the sweep enqueues the cleanups and they
// reclaim, the reconcile scan, the staging sweep, the expiry sweep and the
// cache eviction run too.
func TestPeriodicJobsOnRiver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var blobs [][]byte
	for i := range 5 {
		b := blobData("periodic-"+string(rune('a'+i)), 600)
		blobs = append(blobs, b)
		e.mustDetach(e.mustPush(b)...)
	}
	e.pastDelayAndGrace()
	workers := river.NewWorkers()
	periodic := e.g.Register(workers)
	e.g.inserter = nil
	if len(periodic) != 5 {
		t.Fatalf("%d periodic jobs in phase 3, want 5", len(periodic))
	}
	c, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{
		Queues: e.g.Queues(), Workers: workers, PeriodicJobs: periodic, Logger: testLogger(),
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond, TestOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(e.ctx) })
	deadline := time.Now().Add(time.Minute)
	for _, kind := range []string{KindSweep, KindReconcileScan, KindStagingSweep, KindExpirySweep, KindCacheEvict} {
		for len(e.jobsOf(c, kind, rivertype.JobStateCompleted)) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("periodic %s did not run", kind)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	e.waitJobs(c)
	for _, b := range blobs {
		e.assertGone(b)
	}
}

// Register's periodic jobs follow the phase (the expiry sweep and the
// cache eviction, which only detach, run in every phase).
func TestRegisterByPhase(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{Phase: PhaseRecord})
	for phase, want := range map[Phase]int{PhaseRecord: 3, PhaseDiscard: 4, PhaseDelete: 5} {
		g := e.newGC(Config{Phase: phase})
		if n := len(g.Register(river.NewWorkers())); n != want {
			t.Errorf("phase %d: %d periodic jobs, want %d", phase, n, want)
		}
	}
	if _, err := New(e.st, Config{Phase: 4}); err == nil {
		t.Error("phase 4 accepted")
	}
	// Every kind has a worker in every phase (a River client refuses to
	// insert kinds without one).
	workers := river.NewWorkers()
	e.g.Register(workers)
	c, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{Workers: workers, Logger: testLogger(), TestOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []river.JobArgs{SweepArgs{}, CleanupArgs{SHA256: "00"}, CleanupPartitionArgs{}, ReconcileScanArgs{}, StagingSweepArgs{}, ExpirySweepArgs{}, CacheEvictArgs{}} {
		if _, err := c.Insert(e.ctx, args, nil); err != nil {
			t.Errorf("insert %s: %v", args.Kind(), err)
		}
	}
	var _ *river.Client[pgx.Tx] = c
}

func dumpJobs(t *testing.T, e *env, c *river.Client[pgx.Tx]) {
	res, _ := c.JobList(e.ctx, river.NewJobListParams().First(100))
	for _, j := range res.Jobs {
		t.Logf("job %s %s attempt %d errors %v", j.Kind, j.State, j.Attempt, j.Errors)
	}
}

// River fetches a queue's jobs at most once per fetch cooldown, at most as
// many as it has free workers, so the cleanup queue's workers and cooldown
// bound the drain rate whatever the database can do. With River's default
// cooldown (100 ms) ten workers drained 98 objects/s; the bound must leave
// the 500 objects/s goal room (BenchmarkDrainDueCandidates measures the
// rate itself).
func TestCleanupQueueFetchBoundsTheDrain(t *testing.T) {
	q := (&GC{cfg: Config{CleanupWorkers: DefaultCleanupWorkers}}).Queues()[QueueCleanup]
	cooldown := q.FetchCooldown
	if cooldown == 0 {
		cooldown = river.FetchCooldownDefault
	}
	if bound := float64(q.MaxWorkers) / cooldown.Seconds(); bound < 1000 {
		t.Errorf("the cleanup queue fetches %d jobs every %v at most: %.0f jobs/s, want at least 1000", q.MaxWorkers, cooldown, bound)
	}
}

// A gc:cleanup job of one candidate, as earlier releases enqueued, still
// reclaims its candidate after an upgrade.
func TestLeftoverSingleCleanupJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	b := blobData("leftover", 700)
	e.mustDetach(e.mustPush(b)...)
	e.pastDelayAndGrace()
	c := e.riverClient(e.g)
	if _, err := c.Insert(e.ctx, CleanupArgs{NamespaceID: e.ns, SHA256: hex.EncodeToString(digestOf(b))}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitJobs(c)
	e.assertGone(b)
	if done := e.jobsOf(c, KindCleanup, rivertype.JobStateCompleted); len(done) != 1 {
		t.Fatalf("%d single cleanups completed", len(done))
	}
}

// partitionsOf counts the partitions holding the candidates of blobs.
func (e *env) partitionsOf(blobs ...[]byte) int {
	seen := map[int]bool{}
	for _, b := range blobs {
		seen[store.GCPartition(e.key(b))] = true
	}
	return len(seen)
}
