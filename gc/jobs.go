package gc

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/internal/jobstates"
	"github.com/artifact-registry/artifact-registry/store"
)

// Job kinds of the GC job family (docs/garbage-collection.md "Job family")
// implemented here (gc:expiry-sweep in expiry.go, gc:cache-evict in
// cacheevict.go).
const (
	KindSweep            = "gc:sweep"
	KindCleanup          = "gc:cleanup"
	KindCleanupPartition = "gc:cleanup-partition"
	KindReconcileScan    = "gc:reconcile-scan"
	KindStagingSweep     = "gc:staging-sweep"
)

// SweepArgs is gc:sweep: promote due candidates to cleanup jobs.
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return KindSweep }

// InsertOpts: one sweep in flight at a time.
func (SweepArgs) InsertOpts() river.InsertOpts {
	return maintenanceOpts(1)
}

// CleanupPartitionArgs is gc:cleanup-partition: batches of one partition's
// due candidates (store.GCPartition), until none is left. One in flight
// per partition, so one per candidate: two cleanups never race for a
// candidate, as the review queue's design asks.
type CleanupPartitionArgs struct {
	Partition int `json:"partition" river:"unique"`
}

// Kind implements river.JobArgs.
func (CleanupPartitionArgs) Kind() string { return KindCleanupPartition }

// InsertOpts: unique per partition among in-flight jobs only.
func (CleanupPartitionArgs) InsertOpts() river.InsertOpts { return CleanupArgs{}.InsertOpts() }

// CleanupArgs is gc:cleanup of one candidate, as earlier releases
// enqueued it; jobs left over from them still run.
type CleanupArgs struct {
	NamespaceID uuid.UUID `json:"namespace_id" river:"unique"`
	// SHA256 is the hex digest (64 characters).
	SHA256 string `json:"sha256" river:"unique"`
}

// Kind implements river.JobArgs.
func (CleanupArgs) Kind() string { return KindCleanup }

// InsertOpts: unique per candidate among in-flight jobs only.
func (CleanupArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueCleanup, Priority: 2,
		UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: jobstates.InFlight()}}
}

func (a CleanupArgs) key() (store.GCCandidateKey, error) {
	k := store.GCCandidateKey{NamespaceID: a.NamespaceID}
	b, err := hex.DecodeString(a.SHA256)
	if err != nil || len(b) != 32 {
		return k, fmt.Errorf("gc: cleanup job with a bad digest %q", a.SHA256)
	}
	k.SHA256 = [32]byte(b)
	return k, nil
}

// ReconcileScanArgs is gc:reconcile-scan.
type ReconcileScanArgs struct{}

// Kind implements river.JobArgs.
func (ReconcileScanArgs) Kind() string { return KindReconcileScan }

// InsertOpts: one scan in flight at a time.
func (ReconcileScanArgs) InsertOpts() river.InsertOpts {
	return maintenanceOpts(3)
}

// StagingSweepArgs is gc:staging-sweep.
type StagingSweepArgs struct{}

// Kind implements river.JobArgs.
func (StagingSweepArgs) Kind() string { return KindStagingSweep }

// InsertOpts: one staging sweep in flight at a time.
func (StagingSweepArgs) InsertOpts() river.InsertOpts {
	return maintenanceOpts(3)
}

// ---------------------------------------------------------------- workers

type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	g *GC
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	_, err := w.g.Sweep(ctx)
	return err
}

type cleanupWorker struct {
	river.WorkerDefaults[CleanupArgs]
	g *GC
}

// Timeout: a cleanup is a few statements and one bounded storage call.
func (w *cleanupWorker) Timeout(*river.Job[CleanupArgs]) time.Duration { return 30 * time.Second }

func (w *cleanupWorker) Work(ctx context.Context, job *river.Job[CleanupArgs]) error {
	key, err := job.Args.key()
	if err != nil {
		return river.JobCancel(err)
	}
	_, err = w.g.Cleanup(ctx, key)
	return err
}

type cleanupPartitionWorker struct {
	river.WorkerDefaults[CleanupPartitionArgs]
	g *GC
}

// Timeout: one batch, whose deletes stop after store.GCBatchLockBudget.
func (w *cleanupPartitionWorker) Timeout(*river.Job[CleanupPartitionArgs]) time.Duration {
	return 30 * time.Second
}

// Work runs one batch; while the partition has more due candidates the
// job snoozes for no time: it runs again at once, and other partitions'
// jobs get their turn.
func (w *cleanupPartitionWorker) Work(ctx context.Context, job *river.Job[CleanupPartitionArgs]) error {
	if p := job.Args.Partition; p < 0 || p >= store.GCPartitions {
		return river.JobCancel(fmt.Errorf("gc: cleanup of partition %d, of %d", p, store.GCPartitions))
	}
	_, more, err := w.g.CleanupPartition(ctx, job.Args.Partition)
	if errors.Is(err, errPaced) {
		return river.JobSnooze(time.Second)
	}
	if err != nil {
		return err
	}
	if more {
		return river.JobSnooze(0)
	}
	return nil
}

type reconcileWorker struct {
	river.WorkerDefaults[ReconcileScanArgs]
	g *GC
}

func (w *reconcileWorker) Timeout(*river.Job[ReconcileScanArgs]) time.Duration {
	return w.g.cfg.ReconcileTimeout
}

func (w *reconcileWorker) Work(ctx context.Context, _ *river.Job[ReconcileScanArgs]) error {
	_, err := w.g.ReconcileScan(ctx)
	return err
}

type stagingWorker struct {
	river.WorkerDefaults[StagingSweepArgs]
	g *GC
}

func (w *stagingWorker) Timeout(*river.Job[StagingSweepArgs]) time.Duration { return 10 * time.Minute }

func (w *stagingWorker) Work(ctx context.Context, _ *river.Job[StagingSweepArgs]) error {
	_, err := w.g.StagingSweep(ctx)
	return err
}

// maintenanceOpts are the insert options of GC's maintenance jobs: their
// queue, three attempts, and one run in flight at a time (uniqueness over
// in-flight states only, so a finished run never suppresses the next).
func maintenanceOpts(priority int) river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, Priority: priority, MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: jobstates.InFlight()}}
}
