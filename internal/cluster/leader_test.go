package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// leaderWatch records River's leadership terms (river_leader rows) while
// the test runs: every new term inserts the RunOnStart periodic jobs
// again, so the job counts are judged per term.
type leaderWatch struct {
	c      *Cluster
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	terms map[string]time.Time // leader_id/elected_at -> elected_at
	err   error
}

func watchLeaders(t *testing.T, c *Cluster) *leaderWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &leaderWatch{c: c, start: time.Now(), cancel: cancel, done: make(chan struct{}), terms: map[string]time.Time{}}
	go w.run(ctx)
	t.Cleanup(w.stop)
	return w
}

func (w *leaderWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *leaderWatch) run(ctx context.Context) {
	defer close(w.done)
	conn, err := pgx.Connect(ctx, w.c.DatabaseURL)
	if err != nil {
		w.setErr(err)
		return
	}
	defer conn.Close(context.Background())
	for {
		var id string
		var elected time.Time
		err := conn.QueryRow(ctx, `SELECT leader_id, elected_at FROM river_leader`).Scan(&id, &elected)
		switch {
		case err == nil:
			w.mu.Lock()
			w.terms[id+"/"+elected.String()] = elected
			w.mu.Unlock()
		case err != pgx.ErrNoRows && ctx.Err() == nil:
			w.setErr(err)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (w *leaderWatch) setErr(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// periodic are leader-only jobs with their intervals; a zero interval is
// one far longer than any test, so each term inserts it once (RunOnStart).
var periodic = map[string]time.Duration{
	"counters:fold":      30 * time.Second,
	"gc:sweep":           time.Minute,
	"gc:reconcile-scan":  0,
	"gc:cache-evict":     0,
	"lifecycle:apply":    0,
	"auth:session-sweep": 0,
}

// check fails unless some leader was seen and each periodic job was
// inserted at most once per term at start plus once per interval since:
// an instance inserting periodic jobs without being the leader would
// multiply the counts by the number of instances.
func (w *leaderWatch) check(t *testing.T) {
	w.mu.Lock()
	terms, err := len(w.terms), w.err
	first := w.start
	for _, e := range w.terms {
		if e.Before(first) {
			first = e
		}
	}
	w.mu.Unlock()
	if err != nil {
		t.Fatalf("watching river_leader: %v", err)
	}
	if terms == 0 {
		t.Fatal("no River leader was seen")
	}
	elapsed := time.Since(first)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, w.c.DatabaseURL)
	must(t, err)
	defer conn.Close(ctx)
	for kind, every := range periodic {
		var n int
		must(t, conn.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1`, kind).Scan(&n))
		limit := terms
		if every > 0 {
			limit += int(elapsed / every)
		}
		t.Logf("%s: %d jobs in %s, %d leadership terms (at most %d allowed)", kind, n, elapsed.Round(time.Second), terms, limit)
		if n == 0 || n > limit {
			t.Errorf("%s was inserted %d times in %s with %d leadership terms; want 1 to %d", kind, n, elapsed.Round(time.Second), terms, limit)
		}
	}
}
