package gc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/store/catalog"
)

// KindExpirySweep is gc:expiry-sweep: hard-delete soft-deleted rows whose
// namespace's trash retention has passed, detaching their blobs (which
// then reach gc:cleanup through the ordinary zero-attachment path). It
// never touches storage.
const KindExpirySweep = "gc:expiry-sweep"

// Defaults of the expiry sweep.
const (
	DefaultExpiryInterval = 10 * time.Minute
	DefaultExpiryTimeout  = time.Hour
)

// ExpirySweepArgs is gc:expiry-sweep.
type ExpirySweepArgs struct{}

// Kind implements river.JobArgs.
func (ExpirySweepArgs) Kind() string { return KindExpirySweep }

// InsertOpts: one expiry sweep in flight at a time.
func (ExpirySweepArgs) InsertOpts() river.InsertOpts {
	return maintenanceOpts(3)
}

type expiryWorker struct {
	river.WorkerDefaults[ExpirySweepArgs]
	g *GC
}

func (w *expiryWorker) Timeout(*river.Job[ExpirySweepArgs]) time.Duration {
	return DefaultExpiryTimeout
}

func (w *expiryWorker) Work(ctx context.Context, _ *river.Job[ExpirySweepArgs]) error {
	_, err := w.g.ExpirySweep(ctx)
	return err
}

// ExpiryResult is what one expiry sweep purged.
type ExpiryResult struct {
	Rows    map[catalog.TrashKind]int
	Stopped bool // the kill switch stopped it (or could not be read)
}

// ExpirySweep runs one gc:expiry-sweep over every namespace: rows of every
// format deleted more than the namespace's retention ago are purged in
// batches, one transaction each (store/catalog). The kill switch is read
// before every batch and fails closed: an expiry makes blobs reclaimable,
// so stopping reclamation stops it too. The work is resumable: a run that
// stops or fails leaves whole batches only, and the next run finds what
// is left.
func (g *GC) ExpirySweep(ctx context.Context) (*ExpiryResult, error) {
	p, err := g.catalog.ExpireAll(ctx, g.now(), catalog.ExpiryOptions{Batch: g.cfg.ExpiryBatch, Gate: g.reclaimGate})
	res := &ExpiryResult{Rows: map[catalog.TrashKind]int{}}
	if p != nil {
		for k, n := range p.Rows {
			res.Rows[k] = n
			g.metrics.expired.WithLabelValues(string(k)).Add(float64(n))
		}
		if p.Total() > 0 {
			g.log.Info("gc.expiry_sweep", "rows", p.Total(), "attachments_detached", p.Released.Attachments,
				"candidates_recorded", p.Released.Candidates)
		}
	}
	if errors.Is(err, errReclaimStopped) {
		res.Stopped = true
		g.log.Warn("gc: expiry sweep stopped by the kill switch", "err", err)
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("gc: expiry sweep: %w", err)
	}
	return res, nil
}
