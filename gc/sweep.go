package gc

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/store"
)

// SweepResult describes one gc:sweep run.
type SweepResult struct {
	// Skipped names why nothing was enqueued ("" when the sweep ran):
	// "phase", "paused" or "stopped" (kill switch off or unreadable).
	Skipped string
	// Due: candidates read (due, not excluded, not backing off).
	Due int
	// Enqueued: new cleanup jobs; Duplicates: candidates that already had
	// an in-flight job.
	Enqueued, Duplicates int
}

// sweepPage: candidates read and enqueued per round trip.
const sweepPage = 1000

// Sweep is the body of gc:sweep: unless the phase, a sweep pause or the
// kill switch forbids it, it reads up to SweepBatch due candidates, oldest
// review time first, in keyset pages, and enqueues a gc:cleanup job for each (unique among
// in-flight jobs).
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
	insert, err := g.jobInserter(ctx)
	if err != nil {
		return nil, err
	}
	opts := CleanupArgs{}.InsertOpts()
	opts.MaxAttempts = g.cfg.CleanupAttempts
	var cursor *store.GCDueCursor
	for res.Due < g.cfg.SweepBatch {
		var keys []store.GCCandidateKey
		keys, cursor, err = g.st.GCDueCandidates(ctx, now, cursor, min(sweepPage, g.cfg.SweepBatch-res.Due))
		if err != nil {
			return nil, err
		}
		res.Due += len(keys)
		if len(keys) > 0 {
			params := make([]river.InsertManyParams, len(keys))
			for i, k := range keys {
				params[i] = river.InsertManyParams{Args: cleanupArgs(k), InsertOpts: &opts}
			}
			ins, dup, err := insert.insertMany(ctx, params)
			if err != nil {
				return nil, fmt.Errorf("gc: sweep: enqueue cleanups: %w", err)
			}
			res.Enqueued += ins
			res.Duplicates += dup
		}
		if cursor == nil {
			break
		}
	}
	g.metrics.sweepEnqueued.Add(float64(res.Enqueued))
	if res.Due > 0 {
		g.log.InfoContext(ctx, "gc: sweep", "due", res.Due, "enqueued", res.Enqueued, "in_flight", res.Duplicates)
	}
	return res, nil
}
