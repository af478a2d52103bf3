// Package counters folds the buffered counters (docs/schema.md "Buffered
// counters") into their rows: request paths only insert
// counter_deltas rows, and the periodic River job counters:fold merges
// them into repositories, namespace_statistics, the npm and Maven package
// and version rows (counters by sum, timestamps by maximum). The SQL lives
// in package store (store/counter_fold.go): each batch deletes the deltas
// it merges in the transaction that applies them, so a delta is applied
// exactly once, and two folders of one namespace exclude each other.
//
// Wiring (cmd/artifact-registry/serve.go):
//
//	f := counters.New(st, counters.Config{Logger: log})
//	periodic = append(periodic, f.Register(workers)...)
//	maps.Copy(queues, f.Queues())
package counters

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/internal/jobstates"
	"github.com/artifact-registry/artifact-registry/store"
)

// KindFold is the River job kind.
const KindFold = "counters:fold"

// Queue is the River queue of the fold job.
const Queue = "counters"

// Defaults of Config.
const (
	// DefaultInterval bounds how stale a folded counter is (and so the
	// drift of the npm entity limits, which read versions_count).
	DefaultInterval = 30 * time.Second
	DefaultBatch    = store.DefaultCounterFoldBatch
	// DefaultMaxBatches bounds one namespace per run, so a namespace with
	// a steady stream of deltas cannot starve the others.
	DefaultMaxBatches = 50
	DefaultTimeout    = 5 * time.Minute
)

// Config configures the folder. Zero values take the defaults above.
type Config struct {
	Interval   time.Duration // how often counters:fold runs
	Batch      int           // deltas per transaction
	MaxBatches int           // transactions per namespace per run
	Timeout    time.Duration // time budget of one run
	Logger     *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.MaxBatches <= 0 {
		c.MaxBatches = DefaultMaxBatches
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Folder runs the fold.
type Folder struct {
	st  *store.Store
	cfg Config
}

// New returns a folder over a store.
func New(st *store.Store, cfg Config) *Folder {
	return &Folder{st: st, cfg: cfg.withDefaults()}
}

// Result sums one run.
type Result struct {
	Namespaces int // namespaces folded
	Skipped    int // namespaces another folder held
	Deltas     int // deltas merged and deleted
	Targets    int // target row updates
	Batches    int // committed transactions
}

// namespacePage is how many namespaces with pending deltas one listing
// returns.
const namespacePage = 500

// Fold merges the pending deltas of every namespace once: namespaces in id
// order, each until drained or MaxBatches transactions. A retryable error
// (a target row held past the lock timeout, a deadlock with a foreground
// writer) skips that namespace for this run; its batch was rolled back.
func (f *Folder) Fold(ctx context.Context) (Result, error) {
	var res Result
	after := uuid.Nil
	for {
		ids, err := f.st.NamespacesWithCounterDeltas(ctx, after, namespacePage)
		if err != nil {
			return res, err
		}
		for _, ns := range ids {
			r, err := f.st.FoldCounterDeltas(ctx, ns, f.cfg.Batch, f.cfg.MaxBatches)
			res.Deltas += r.Deltas
			res.Targets += r.Targets
			res.Batches += r.Batches
			switch {
			case store.HasCode(err, store.CodeRetryable):
				f.cfg.Logger.Warn("counters: fold deferred", "namespace", ns, "err", err)
			case err != nil:
				return res, fmt.Errorf("counters: fold namespace %s: %w", ns, err)
			case r.Skipped:
				res.Skipped++
			default:
				res.Namespaces++
			}
		}
		if len(ids) < namespacePage {
			return res, nil
		}
		after = ids[len(ids)-1]
	}
}

// FoldArgs is counters:fold.
type FoldArgs struct{}

// Kind implements river.JobArgs.
func (FoldArgs) Kind() string { return KindFold }

// InsertOpts: one fold in flight at a time (completed runs do not block
// the next one).
func (FoldArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: jobstates.InFlight()}}
}

type foldWorker struct {
	river.WorkerDefaults[FoldArgs]
	f *Folder
}

func (w *foldWorker) Timeout(*river.Job[FoldArgs]) time.Duration { return w.f.cfg.Timeout }

func (w *foldWorker) Work(ctx context.Context, _ *river.Job[FoldArgs]) error {
	res, err := w.f.Fold(ctx)
	if res.Deltas > 0 || err != nil {
		w.f.cfg.Logger.Info("counters: folded", "namespaces", res.Namespaces, "skipped", res.Skipped,
			"deltas", res.Deltas, "targets", res.Targets, "batches", res.Batches, "err", err)
	}
	return err
}

// Register adds the worker and returns the periodic job (run by River's
// elected leader, also at start).
func (f *Folder) Register(workers *river.Workers) []*river.PeriodicJob {
	river.AddWorker(workers, &foldWorker{f: f})
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(f.cfg.Interval),
			func() (river.JobArgs, *river.InsertOpts) { return FoldArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindFold, RunOnStart: true}),
	}
}

// Queues returns the queue of the fold job; merge it into
// river.Config.Queues. One worker: a run covers every namespace.
func (f *Folder) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{Queue: {MaxWorkers: 1}}
}
