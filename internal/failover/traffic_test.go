package failover_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testserver"
)

// outcome is one request of the traffic: when it was sent and answered,
// and how.
type outcome struct {
	kind        string // "write", "read" or "ready"
	sent, ended time.Time
	what        string
	resp        response
	err         error
}

type published struct{ name, version string }

// traffic publishes distinct versions from two writers, reads a
// packument and probes /-/ready, recording everything.
type traffic struct {
	srv  *server
	t    testing.TB
	quit chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	outcomes []outcome
	acked    []published
}

const pace = 20 * time.Millisecond

func startTraffic(t testing.TB, srv *server) *traffic {
	tr := &traffic{srv: srv, t: t, quit: make(chan struct{})}
	// The reader's package exists before the traffic starts.
	first := tr.write("failover-w0", "0.0.1")
	tr.outcomes = append(tr.outcomes, first)
	for w := range 2 {
		tr.loop(func(i int) outcome { return tr.write(fmt.Sprintf("failover-w%d", w), fmt.Sprintf("1.0.%d", i)) })
	}
	tr.loop(func(int) outcome {
		r, err := srv.do(http.MethodGet, "/npm/"+namespace+"/"+repo+"/failover-w0", nil)
		return outcome{kind: "read", what: "packument", resp: r, err: err}
	})
	tr.loop(func(int) outcome {
		r, err := srv.do(http.MethodGet, "/-/ready", nil)
		return outcome{kind: "ready", resp: r, err: err}
	})
	return tr
}

func (tr *traffic) loop(step func(i int) outcome) {
	tr.wg.Add(1)
	go func() {
		defer tr.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-tr.quit:
				return
			default:
			}
			sent := time.Now()
			o := step(i)
			o.sent, o.ended = sent, time.Now()
			tr.mu.Lock()
			tr.outcomes = append(tr.outcomes, o)
			tr.mu.Unlock()
			time.Sleep(pace)
		}
	}()
}

func (tr *traffic) write(name, version string) outcome {
	r, err := tr.srv.publish(tr.t, name, version)
	if err == nil && r.status/100 == 2 {
		tr.mu.Lock()
		tr.acked = append(tr.acked, published{name, version})
		tr.mu.Unlock()
	}
	return outcome{kind: "write", what: name + "@" + version, resp: r, err: err}
}

func (tr *traffic) stop() {
	close(tr.quit)
	tr.wg.Wait()
}

// find waits until an outcome matching ok is recorded and returns when it
// was answered.
func (tr *traffic) find(t *testing.T, limit time.Duration, what string, ok func(o outcome) bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		tr.mu.Lock()
		for _, o := range tr.outcomes {
			if ok(o) {
				tr.mu.Unlock()
				return o.ended
			}
		}
		tr.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within %v; serve logs:\n%s", what, limit, tr.srv.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (tr *traffic) waitAcked(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	tr.find(t, limit, fmt.Sprintf("%d acknowledged writes", n), func(outcome) bool {
		return len(tr.acked) >= n
	})
}

// waitReady returns when /-/ready, probed after since, first answered
// status.
func (tr *traffic) waitReady(t *testing.T, status int, since time.Time, limit time.Duration) time.Time {
	t.Helper()
	return tr.find(t, limit, fmt.Sprintf("/-/ready %d", status), func(o outcome) bool {
		return o.kind == "ready" && o.err == nil && o.sent.After(since) && o.resp.status == status
	})
}

// waitWrite returns when the first write sent after since was
// acknowledged: the primary was gone by then, so it went to the standby.
func (tr *traffic) waitWrite(t *testing.T, since time.Time, limit time.Duration) time.Time {
	t.Helper()
	return tr.find(t, limit, "an acknowledged write after the primary stopped", func(o outcome) bool {
		return o.kind == "write" && o.err == nil && o.sent.After(since) && o.resp.status/100 == 2
	})
}

// check: the registry stayed reachable; nothing failed before the primary
// stopped; every failure after it is 503 with Retry-After, and for npm in
// npm's error format. Logs the counts.
func (tr *traffic) check(t *testing.T, stopAt time.Time) {
	t.Helper()
	counts := map[string]int{}
	for _, o := range tr.outcomes {
		key := fmt.Sprintf("%s %d", o.kind, o.resp.status)
		if o.err != nil {
			key = o.kind + " error"
		}
		counts[key]++
		switch {
		case o.err != nil:
			t.Errorf("%s %s: registry unreachable: %v", o.kind, o.what, o.err)
		case o.resp.status/100 == 2:
		case o.ended.Before(stopAt):
			t.Errorf("%s %s failed before the primary stopped: %d %.300s", o.kind, o.what, o.resp.status, o.resp.body)
		case o.resp.status != http.StatusServiceUnavailable:
			t.Errorf("%s %s: %d %.300s, want 2xx or 503", o.kind, o.what, o.resp.status, o.resp.body)
		case o.kind == "ready":
		case o.resp.retryAfter == "":
			t.Errorf("%s %s: 503 without Retry-After: %.300s", o.kind, o.what, o.resp.body)
		default:
			if _, ok := testserver.NpmError(o.resp.body); !ok {
				t.Errorf("%s %s: 503 body %.300s, want npm's {\"error\"}", o.kind, o.what, o.resp.body)
			}
		}
	}
	t.Logf("outcomes: %v; acknowledged writes: %d", counts, len(tr.acked))
}
