package gc

import (
	"context"

	"github.com/artifact-registry/artifact-registry/store"
)

// ReconcileResult describes one gc:reconcile-scan run.
type ReconcileResult struct {
	Pages, Scanned, Eligible, Recorded int
}

// ReconcileScan is the body of gc:reconcile-scan: it walks every blob row
// (database only, never storage) page by page and records a candidate for
// each one with zero attachments, older than the grace window, not
// committed while an upload of its namespace that is still unexpired was
// in flight (store.ReconcileGCPage), that has none (a missed record).
// It runs in every phase: recording deletes nothing.
func (g *GC) ReconcileScan(ctx context.Context) (*ReconcileResult, error) {
	res := &ReconcileResult{}
	var cursor *store.GCCandidateKey
	for {
		page, err := g.st.ReconcileGCPage(ctx, g.now(), cursor, g.cfg.ReconcilePage)
		if err != nil {
			return res, err
		}
		res.Pages++
		res.Scanned += page.Scanned
		res.Eligible += page.Eligible
		res.Recorded += page.Recorded
		if page.Next == nil {
			break
		}
		cursor = page.Next
	}
	g.metrics.reconcileRecorded.Add(float64(res.Recorded))
	if res.Recorded > 0 {
		g.log.WarnContext(ctx, "gc: reconcile scan recorded missed candidates",
			"event", "gc.reconcile_recorded", "recorded", res.Recorded, "scanned", res.Scanned)
	}
	return res, nil
}

// StagingResult describes one gc:staging-sweep run.
type StagingResult struct {
	// Skipped names why nothing was purged ("" when the sweep ran).
	Skipped string
	Purged  int
}

// StagingSweep is the body of gc:staging-sweep: expired upload sessions,
// oldest first in batches (the upload purge of docs/schema.md "Upload
// sessions"), temporary objects
// first, then the rows. It deletes objects, so it runs in phase 3 only and
// asks the kill switch before every session.
func (g *GC) StagingSweep(ctx context.Context) (*StagingResult, error) {
	res := &StagingResult{}
	if g.cfg.Phase < PhaseDelete {
		res.Skipped = StopPhase
		return res, nil
	}
	for {
		expired, err := g.st.ExpiredUploads(ctx, g.cfg.StagingBatch)
		if err != nil {
			return res, err
		}
		for _, e := range expired {
			if st := g.reclaimStatus(ctx); !st.enabled {
				res.Skipped = st.reason
				g.metrics.stagingPurged.Add(float64(res.Purged))
				return res, nil
			}
			ok, err := g.st.PurgeUpload(ctx, e)
			if err != nil {
				g.metrics.stagingPurged.Add(float64(res.Purged))
				return res, err
			}
			if ok {
				res.Purged++
			}
		}
		if len(expired) < g.cfg.StagingBatch {
			break
		}
	}
	g.metrics.stagingPurged.Add(float64(res.Purged))
	if res.Purged > 0 {
		g.log.InfoContext(ctx, "gc: expired uploads purged", "event", "gc.staging_purged", "purged", res.Purged)
	}
	return res, nil
}
