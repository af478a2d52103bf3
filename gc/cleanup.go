package gc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
)

// Cleanup is CleanupBatch of one candidate: the body of a gc:cleanup job
// (enqueued by earlier releases, one per candidate).
func (g *GC) Cleanup(ctx context.Context, key store.GCCandidateKey) (*store.GCCleanupResult, error) {
	res, err := g.CleanupBatch(ctx, []store.GCCandidateKey{key})
	if len(res) == 0 {
		return nil, err
	}
	return res[0], err
}

// CleanupPartition is the body of gc:cleanup-partition: one batch of the
// partition's due candidates, oldest first, and their outcomes. more
// reports that the partition may hold further due candidates and the
// batch made progress, so the job should run again at once.
func (g *GC) CleanupPartition(ctx context.Context, part int) (res []*store.GCCleanupResult, more bool, err error) {
	batch := g.batchSize()
	keys, err := g.st.GCDueCandidatesIn(ctx, part, g.now(), batch)
	if err != nil || len(keys) == 0 {
		return nil, false, err
	}
	if err := g.waitPace(ctx, len(keys)); err != nil {
		return nil, false, err
	}
	res, err = g.CleanupBatch(ctx, keys)
	if err != nil {
		return res, false, err
	}
	progress := 0
	for _, r := range res {
		switch r.Outcome {
		case store.GCDeleteStopped:
			return res, false, nil // the next sweep asks the kill switch again
		case store.GCCandidateGone:
		default:
			progress++
		}
	}
	return res, len(keys) == batch && progress > 0, nil
}

// errPaced: the pace would have held the batch longer than paceMaxWait;
// the job runs again later instead of holding its worker.
var errPaced = errors.New("gc: cleanup paced")

// paceMaxWait bounds a batch's wait for its share of CleanupRate.
const paceMaxWait = 5 * time.Second

// batchSize is CleanupBatch, or under a rate below it one second's worth,
// so that a batch's share of the rate accrues within a second.
func (g *GC) batchSize() int {
	if r := g.cfg.CleanupRate; r > 0 && float64(g.cfg.CleanupBatch) > r {
		return max(1, int(r))
	}
	return g.cfg.CleanupBatch
}

// waitPace waits for n candidates' share of CleanupRate, at most
// paceMaxWait (errPaced beyond it: the tokens are not taken).
func (g *GC) waitPace(ctx context.Context, n int) error {
	wctx, cancel := context.WithTimeout(ctx, paceMaxWait)
	defer cancel()
	if err := g.pace.WaitN(wctx, n); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errPaced
	}
	return nil
}

// CleanupBatch cleans up candidates of one partition in one store
// transaction (docs/garbage-collection.md, rule 4): blob-row
// locks, recheck, the kill switch before each storage delete, the deletes,
// the row deletes, commit. Then, holding no lock, it does each
// candidate's failure bookkeeping in its own transaction. The returned
// error is for River (retry, bounded by MaxAttempts): only failures that
// could not be classified.
func (g *GC) CleanupBatch(ctx context.Context, keys []store.GCCandidateKey) ([]*store.GCCleanupResult, error) {
	if g.cfg.Phase < PhaseDiscard {
		return gone(keys), nil
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
			for range keys {
				g.metrics.outcome("paused")
			}
			return gone(keys), nil
		}
	}
	res, err := g.st.CleanupGCCandidates(ctx, keys, g.policy(now))
	if err != nil {
		g.metrics.outcome("error")
		return nil, err
	}
	var errs []error
	for _, r := range res {
		errs = append(errs, g.settle(ctx, r, now))
	}
	return res, errors.Join(errs...)
}

func gone(keys []store.GCCandidateKey) []*store.GCCleanupResult {
	out := make([]*store.GCCleanupResult, len(keys))
	for i, k := range keys {
		out[i] = &store.GCCleanupResult{Key: k, Outcome: store.GCCandidateGone}
	}
	return out
}

func (g *GC) policy(now time.Time) store.GCCleanupPolicy {
	return store.GCCleanupPolicy{
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
}

// settle records one candidate's outcome: metrics, the failure window,
// and the backoff or strike of a failed attempt.
func (g *GC) settle(ctx context.Context, res *store.GCCleanupResult, now time.Time) error {
	key := res.Key
	g.metrics.outcome(res.Outcome.String())
	var err error
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
	return err
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
