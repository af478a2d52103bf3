package gc

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"
)

// SweepResult describes one gc:sweep run.
type SweepResult struct {
	// Skipped names why nothing was enqueued ("" when the sweep ran):
	// "phase", "paused" or "stopped" (kill switch off or unreadable).
	Skipped string
	// Partitions: partitions holding due candidates (due, not excluded,
	// not backing off).
	Partitions int
	// Enqueued: new gc:cleanup-partition jobs; Duplicates: partitions that
	// already had one in flight.
	Enqueued, Duplicates int
}

// Sweep is the body of gc:sweep: unless the phase, a sweep pause or the
// kill switch forbids it, it enqueues a gc:cleanup-partition job (unique
// among in-flight jobs) for each partition holding due candidates; each
// job then works through its partition's due candidates, oldest review
// time first, in batches.
func (g *GC) Sweep(ctx context.Context) (*SweepResult, error) {
	res := &SweepResult{}
	if g.cfg.Phase < PhaseDiscard {
		res.Skipped = "phase"
		return res, nil
	}
	now := g.now()
	paused, err := g.sweepPaused(ctx, now)
	if err != nil {
		return nil, err
	}
	if paused {
		res.Skipped = "paused"
		g.log.InfoContext(ctx, "gc: sweep paused, nothing enqueued")
		return res, nil
	}
	if g.cfg.Phase >= PhaseDelete {
		if st := g.reclaimStatus(ctx); !st.enabled {
			res.Skipped = "stopped"
			g.log.InfoContext(ctx, "gc: reclamation stopped, nothing enqueued", "reason", st.reason, "detail", st.detail)
			return res, nil
		}
	}
	parts, err := g.st.GCDuePartitions(ctx, now)
	if err != nil || len(parts) == 0 {
		return res, err
	}
	insert, err := g.jobInserter(ctx)
	if err != nil {
		return nil, err
	}
	opts := CleanupPartitionArgs{}.InsertOpts()
	opts.MaxAttempts = g.cfg.CleanupAttempts
	params := make([]river.InsertManyParams, len(parts))
	for i, p := range parts {
		params[i] = river.InsertManyParams{Args: CleanupPartitionArgs{Partition: p}, InsertOpts: &opts}
	}
	res.Partitions = len(parts)
	res.Enqueued, res.Duplicates, err = insert.insertMany(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("gc: sweep: enqueue cleanups: %w", err)
	}
	g.metrics.sweepEnqueued.Add(float64(res.Enqueued))
	g.log.InfoContext(ctx, "gc: sweep", "partitions", res.Partitions, "enqueued", res.Enqueued, "in_flight", res.Duplicates)
	return res, nil
}
