package gc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
)

// Cleanup is the body of gc:cleanup for one candidate
// (docs/garbage-collection.md, rule 4): the store
// transaction (NOWAIT blob-row lock, recheck, kill switch, storage delete,
// row deletes, commit), then the failure bookkeeping in its own
// transaction, holding no lock. The returned error is for River (retry,
// bounded by MaxAttempts): only failures that could not be classified.
func (g *GC) Cleanup(ctx context.Context, key store.GCCandidateKey) (*store.GCCleanupResult, error) {
	if g.cfg.Phase < PhaseDiscard {
		return &store.GCCleanupResult{Outcome: store.GCCandidateGone}, nil
	}
	now := g.now()
	if g.cfg.Phase >= PhaseDelete {
		// While the sweep is paused (a broken backend), jobs that were
		// already enqueued leave their candidates alone too.
		paused, err := g.sweepPaused(ctx, now)
		if err != nil {
			return nil, err
		}
		if paused {
			g.metrics.outcome("paused")
			return &store.GCCleanupResult{Outcome: store.GCCandidateGone}, nil
		}
	}
	policy := store.GCCleanupPolicy{
		Now:          now,
		Delete:       g.cfg.Phase >= PhaseDelete,
		Holdback:     g.cfg.Holdback,
		MayDelete:    g.mayDelete,
		DeleteObject: g.deleteObject,
		AfterObjectDelete: func(ctx context.Context, b *store.Blob) error {
			// The irreversible step happened: one structured event per
			// object deleted, whatever happens to the transaction next.
			g.log.InfoContext(ctx, "gc: object deleted",
				"event", "gc.object_deleted",
				"namespace_id", b.NamespaceID.String(),
				"digest", b.Digest(),
				"size", b.Size,
				"object_key", b.ObjectStorageKey)
			if g.afterObjectDelete != nil {
				return g.afterObjectDelete(ctx, b)
			}
			return nil
		},
	}
	res, err := g.st.CleanupGCCandidate(ctx, key, policy)
	if err != nil {
		g.metrics.outcome("error")
		return nil, err
	}
	g.metrics.outcome(res.Outcome.String())
	switch res.Outcome {
	case store.GCReclaimed:
		g.window.record(true)
		g.metrics.reclaimed(res.Blob.Size)
	case store.GCBlobLocked:
		// A foreground caller (or another worker) holds the row: give way,
		// back off on the candidate row. Never a strike.
		_, err = g.st.RecordGCFailure(ctx, key, g.failure(now, "blob row locked", false))
	case store.GCDeleteFailed:
		err = g.deleteFailed(ctx, key, now, res.Err)
	case store.GCDeleteStopped:
		g.log.InfoContext(ctx, "gc: delete refused", "candidate", key.String(), "err", res.Err)
	case store.GCWouldDelete:
		g.log.InfoContext(ctx, "gc: would delete (phase 2)",
			"event", "gc.would_delete",
			"namespace_id", key.NamespaceID.String(),
			"digest", store.FormatSHA256(key.SHA256),
			"size", res.Blob.Size)
	case store.GCReferenced:
		g.log.DebugContext(ctx, "gc: candidate referenced again, discarded", "candidate", key.String())
	}
	if store.HasCode(err, store.CodeGCCandidateUnknown) {
		err = nil // went away meanwhile: nothing to record
	}
	return res, err
}

func (g *GC) failure(now time.Time, msg string, strike bool) store.GCFailure {
	return store.GCFailure{
		Now: now, Error: msg, Strike: strike, StrikeLimit: g.cfg.StrikeLimit,
		BackoffBase: g.cfg.BackoffBase, BackoffMax: g.cfg.BackoffMax,
	}
}

// deleteFailed classifies a failed storage delete by the failure ratio of
// the recent deletes of this process (never by the error text):
// widespread → environmental, pause the sweep, no strike; isolated → a
// strike for the candidate; too few samples to tell → neither.
func (g *GC) deleteFailed(ctx context.Context, key store.GCCandidateKey, now time.Time, cause error) error {
	verdict := g.window.record(false)
	strike := false
	switch verdict {
	case verdictEnvironmental:
		until := now.Add(g.cfg.PauseDuration)
		started, err := g.st.PauseGCSweep(ctx, now, until, fmt.Sprintf("storage deletes failing: %v", cause))
		if err != nil {
			return err
		}
		g.notePause(until)
		if started {
			g.metrics.sweepPauses.Inc()
			g.log.WarnContext(ctx, "gc: storage deletes failing broadly, sweep paused",
				"until", until, "err", cause)
		}
	case verdictIsolated:
		strike = true
	}
	c, err := g.st.RecordGCFailure(ctx, key, g.failure(now, cause.Error(), strike))
	if err != nil {
		return err
	}
	if strike && c.Strikes > 0 {
		g.metrics.strikes.Inc()
	}
	if c.ExcludedAt != nil {
		g.metrics.excluded.Inc()
		g.log.WarnContext(ctx, "gc: candidate excluded after repeated failures",
			"event", "gc.candidate_excluded",
			"namespace_id", key.NamespaceID.String(),
			"digest", store.FormatSHA256(key.SHA256),
			"strikes", c.Strikes, "last_error", cause.Error())
	}
	return nil
}

type verdict int

const (
	verdictUndetermined verdict = iota
	verdictIsolated
	verdictEnvironmental
)

// failureWindow holds the outcomes of the last storage deletes of this
// process (a ring). The failure ratio over it separates a bad backend
// (correlated failures) from a bad candidate (isolated ones).
type failureWindow struct {
	mu      sync.Mutex
	ring    []bool // true: success
	next, n int
	fails   int
	min     int
	ratio   float64
}

func newFailureWindow(size, minSamples int, ratio float64) *failureWindow {
	return &failureWindow{ring: make([]bool, size), min: minSamples, ratio: ratio}
}

// record adds an outcome and judges the window including it.
func (w *failureWindow) record(ok bool) verdict {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == len(w.ring) {
		if !w.ring[w.next] {
			w.fails--
		}
	} else {
		w.n++
	}
	w.ring[w.next] = ok
	if !ok {
		w.fails++
	}
	w.next = (w.next + 1) % len(w.ring)
	switch {
	case w.n < w.min:
		return verdictUndetermined
	case float64(w.fails) >= w.ratio*float64(w.n):
		return verdictEnvironmental
	}
	return verdictIsolated
}
