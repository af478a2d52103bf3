package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

// healthLogT records what a HealthRecorder receives.
type healthLogT struct {
	mu  sync.Mutex
	got []Health
}

func (h *healthLogT) RecordHealth(_ context.Context, v Health) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, v)
	return nil
}

func (h *healthLogT) statuses() []enum.HealthStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	var s []enum.HealthStatus
	for _, v := range h.got {
		s = append(s, v.Status)
	}
	return s
}

func (h *healthLogT) last() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[len(h.got)-1]
}

func get(c *Client, path string) error {
	resp, err := c.Do(context.Background(), &Request{Path: path})
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

func wantKind(t *testing.T, err error, k Kind) *Error {
	t.Helper()
	e := asError(t, err)
	if e.Kind != k {
		t.Fatalf("kind %v (%v), want %v", e.Kind, err, k)
	}
	return e
}

// waitHealth waits until the recorder saw n records.
func waitHealth(t *testing.T, h *healthLogT, n int) {
	t.Helper()
	waitFor(t, "health records", func() bool { return len(h.statuses()) >= n })
}

// TestBreaker: consecutive failures (5xx, refused connections, timeouts)
// open the breaker, which then fails fast without contacting the upstream
// and reports the remote unhealthy; after the offline period one probe
// goes through: its failure reopens, its success closes. 404s and other
// answers never count.
func TestBreaker(t *testing.T) {
	clk := newClock()
	f := &flaky{ok: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }}
	up := serve(t, f)
	rec := &healthLogT{}
	metrics := NewMetrics()
	c := newTestClient(t, Config{URL: up.URL, Now: clk.Now, FailureThreshold: 3, OfflinePeriod: time.Minute,
		HealthRecorder: rec, Metrics: metrics, Name: "b"})

	if err := get(c, "x"); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, rec, 1)
	f.down.Store(true)
	for range 2 {
		wantKind(t, get(c, "x"), KindBadGateway)
	}
	if h := c.Health(); h.Status != enum.HealthHealthy {
		t.Fatalf("health after 2 failures: %v", h.Status)
	}
	e := wantKind(t, get(c, "x"), KindBadGateway)
	if e.Status != http.StatusServiceUnavailable || !e.Temporary() || e.ClientStatus() != http.StatusBadGateway {
		t.Fatalf("error %+v", e)
	}
	hits := f.hits.Load()
	e = wantKind(t, get(c, "x"), KindOffline)
	if f.hits.Load() != hits {
		t.Fatal("an open breaker contacted the upstream")
	}
	if !e.RetryAt.Equal(clk.Now().Add(time.Minute)) || e.ClientStatus() != http.StatusServiceUnavailable {
		t.Fatalf("offline error %+v", e)
	}
	if strings.Contains(e.Error(), up.URL) || strings.Contains(e.ClientMessage(), "127.0.0.1") {
		t.Fatalf("error text names the upstream: %q", e.Error())
	}
	waitHealth(t, rec, 2)
	if h := rec.last(); h.Status != enum.HealthUnhealthy || h.LastError == "" || !h.CheckedAt.Equal(clk.Now()) {
		t.Fatalf("recorded %+v", h)
	}
	if got := testutil.ToFloat64(metrics.breaker.WithLabelValues("b")); got != breakerOpen {
		t.Fatalf("breaker gauge %v", got)
	}

	// Half-open, upstream still down: the probe fails, the breaker reopens.
	clk.Advance(time.Minute + time.Second)
	wantKind(t, get(c, "x"), KindBadGateway)
	if f.hits.Load() != hits+1 {
		t.Fatalf("probe hits %d", f.hits.Load()-hits)
	}
	wantKind(t, get(c, "x"), KindOffline)

	// Half-open with a slow probe: the others still fail fast.
	clk.Advance(time.Minute + time.Second)
	f.down.Store(false)
	release := make(chan struct{})
	f.ok = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "ok")
	}
	probe := make(chan error, 1)
	go func() { probe <- get(c, "slow") }()
	waitFor(t, "the probe", func() bool { return f.hits.Load() == hits+2 })
	wantKind(t, get(c, "x"), KindOffline)
	if got := testutil.ToFloat64(metrics.breaker.WithLabelValues("b")); got != breakerHalfOpen {
		t.Fatalf("breaker gauge %v", got)
	}
	close(release)
	if err := <-probe; err != nil {
		t.Fatal(err)
	}
	if err := get(c, "x"); err != nil {
		t.Fatalf("after a successful probe: %v", err)
	}
	waitHealth(t, rec, 3)
	if h := rec.last(); h.Status != enum.HealthHealthy {
		t.Fatalf("recorded %+v", h)
	}
	if h := c.Health(); h.Status != enum.HealthHealthy || !h.RetryAt.IsZero() {
		t.Fatalf("health %+v", h)
	}
}

// TestBreakerCounts: refused connections and timeouts count, 404s and
// other client errors do not.
func TestBreakerCounts(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		up := serve(t, http.NotFoundHandler())
		url := up.URL
		up.Close()
		c := newTestClient(t, Config{URL: url, FailureThreshold: 2})
		for range 2 {
			wantKind(t, get(c, "x"), KindUnreachable)
		}
		wantKind(t, get(c, "x"), KindOffline)
	})
	t.Run("header-timeout", func(t *testing.T) {
		c := newTestClient(t, Config{URL: blackhole(t), FailureThreshold: 2, ResponseHeaderTimeout: 100 * time.Millisecond})
		for range 2 {
			e := wantKind(t, get(c, "x"), KindTimeout)
			if e.ClientStatus() != http.StatusGatewayTimeout || e.Cached {
				t.Fatalf("%+v", e)
			}
		}
		wantKind(t, get(c, "x"), KindOffline)
	})
	t.Run("not-found-and-4xx", func(t *testing.T) {
		up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/bad" {
				http.Error(w, "bad", http.StatusBadRequest)
				return
			}
			http.NotFound(w, r)
		}))
		c := newTestClient(t, Config{URL: up.URL, FailureThreshold: 2, NegativeTTL: -1})
		for range 5 {
			wantKind(t, get(c, "x"), KindNotFound)
			wantKind(t, get(c, "bad"), KindRejected)
		}
	})
	t.Run("caller-cancel", func(t *testing.T) {
		c := newTestClient(t, Config{URL: blackhole(t), FailureThreshold: 1})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := c.Do(ctx, &Request{Path: "x"}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("do: %v", err)
		}
		if c.breaker.consecutiveFailures() != 0 {
			t.Fatal("the caller's own deadline counted as an upstream failure")
		}
	})
}

// TestRateLimit: a 429 makes requests fail fast until its Retry-After
// (seconds or a date), and the ratelimit headers become metrics.
func TestRateLimit(t *testing.T) {
	clk := newClock()
	var mu sync.Mutex
	status, retry := http.StatusTooManyRequests, "120"
	hits := 0
	up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		hits++
		w.Header().Set("Ratelimit-Limit", "100;w=21600")
		w.Header().Set("Ratelimit-Remaining", "0;w=21600")
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", retry)
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Ratelimit-Remaining", "7;w=21600")
		io.WriteString(w, "ok")
	}))
	rec := &healthLogT{}
	metrics := NewMetrics()
	c := newTestClient(t, Config{URL: up.URL, Now: clk.Now, Metrics: metrics, Name: "rl", HealthRecorder: rec})
	e := wantKind(t, get(c, "x"), KindRateLimited)
	if !e.RetryAt.Equal(clk.Now().Add(120 * time.Second)) {
		t.Fatalf("retry at %v", e.RetryAt)
	}
	if got := testutil.ToFloat64(metrics.rlRemaining.WithLabelValues("rl")); got != 0 {
		t.Fatalf("remaining %v", got)
	}
	if got := testutil.ToFloat64(metrics.rlLimit.WithLabelValues("rl")); got != 100 {
		t.Fatalf("limit %v", got)
	}
	if got := testutil.ToFloat64(metrics.rlWindow.WithLabelValues("rl")); got != 21600 {
		t.Fatalf("window %v", got)
	}
	clk.Advance(119 * time.Second)
	wantKind(t, get(c, "x"), KindRateLimited)
	if hits != 1 {
		t.Fatalf("hits %d: a rate-limited upstream was asked again before Retry-After", hits)
	}
	if h := c.Health(); h.Status != enum.HealthUnhealthy {
		t.Fatalf("health %+v", h)
	}
	// The recorder gets the latest of the reports made while it was busy:
	// unless the unhealthy one is written before the upstream recovers, it
	// may be replaced by the recovery and never recorded.
	c.health.flush()
	// A date form.
	clk.Advance(2 * time.Second)
	mu.Lock()
	retry = clk.Now().Add(30 * time.Second).Format(http.TimeFormat)
	mu.Unlock()
	e = wantKind(t, get(c, "x"), KindRateLimited)
	if !e.RetryAt.Equal(clk.Now().Add(30 * time.Second)) {
		t.Fatalf("retry at %v", e.RetryAt)
	}
	clk.Advance(31 * time.Second)
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	if err := get(c, "x"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(metrics.rlRemaining.WithLabelValues("rl")); got != 7 {
		t.Fatalf("remaining %v", got)
	}
	if hits != 3 {
		t.Fatalf("hits %d", hits)
	}
	waitFor(t, "health records", func() bool {
		s := rec.statuses()
		return len(s) >= 2 && s[len(s)-1] == enum.HealthHealthy && s[0] == enum.HealthUnhealthy
	})
	if c.breaker.consecutiveFailures() != 0 {
		t.Fatal("a 429 counted as a breaker failure")
	}
}

func TestRetryAfterBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	h := http.Header{}
	if got := retryAfter(h, now, 30*time.Second, time.Hour); !got.Equal(now.Add(30 * time.Second)) {
		t.Fatalf("default: %v", got)
	}
	h.Set("Retry-After", "999999999999")
	if got := retryAfter(h, now, 30*time.Second, time.Hour); !got.Equal(now.Add(time.Hour)) {
		t.Fatalf("capped: %v", got)
	}
	h.Set("Retry-After", "soon")
	if got := retryAfter(h, now, 30*time.Second, time.Hour); !got.Equal(now.Add(30 * time.Second)) {
		t.Fatalf("unreadable: %v", got)
	}
	h.Set("Retry-After", now.Add(-time.Minute).Format(http.TimeFormat))
	if got := retryAfter(h, now, 30*time.Second, time.Hour); !got.Equal(now) {
		t.Fatalf("past date: %v", got)
	}
	for in, want := range map[string][2]float64{"100;w=21600": {100, 21600}, " 5 ": {5, 0}, "7;w=60;comment=x": {7, 60}} {
		v, w, ok := parseRateLimit(in)
		if !ok || v != want[0] || w != want[1] {
			t.Fatalf("%q: %v %v %v", in, v, w, ok)
		}
	}
	for _, in := range []string{"", "x", "-1;w=5"} {
		if _, _, ok := parseRateLimit(in); ok {
			t.Fatalf("%q parsed", in)
		}
	}
}

// TestNegativeCache: a 404 is remembered for NegativeTTL (GET and HEAD of
// the same path share it); a 503 or a timeout never is.
func TestNegativeCache(t *testing.T) {
	clk := newClock()
	var cnt counter
	var fail sync.Map
	up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cnt.add("ANY", r.URL.Path)
		if _, ok := fail.Load(r.URL.Path); ok {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		http.NotFound(w, r)
	}))
	metrics := NewMetrics()
	c := newTestClient(t, Config{URL: up.URL, Now: clk.Now, NegativeTTL: 30 * time.Second, FailureThreshold: 100, Metrics: metrics, Name: "neg"})
	wantKind(t, get(c, "missing"), KindNotFound)
	e := wantKind(t, get(c, "missing"), KindNotFound)
	if !e.Cached || e.ClientStatus() != http.StatusNotFound || e.Temporary() {
		t.Fatalf("%+v", e)
	}
	if _, err := c.Do(context.Background(), &Request{Method: http.MethodHead, Path: "missing"}); !IsKind(err, KindNotFound) {
		t.Fatalf("head: %v", err)
	}
	if n := cnt.get("ANY", "/missing"); n != 1 {
		t.Fatalf("upstream hits %d, want 1", n)
	}
	if got := testutil.ToFloat64(metrics.negativeHits.WithLabelValues("neg")); got != 2 {
		t.Fatalf("negative hits metric %v", got)
	}
	clk.Advance(31 * time.Second)
	wantKind(t, get(c, "missing"), KindNotFound)
	if n := cnt.get("ANY", "/missing"); n != 2 {
		t.Fatalf("after the TTL: upstream hits %d, want 2", n)
	}
	c.ForgetNotFound("/missing")
	wantKind(t, get(c, "missing"), KindNotFound)
	if n := cnt.get("ANY", "/missing"); n != 3 {
		t.Fatalf("after ForgetNotFound: upstream hits %d, want 3", n)
	}

	fail.Store("/flaky", true)
	for range 3 {
		e := wantKind(t, get(c, "flaky"), KindBadGateway)
		if e.Cached {
			t.Fatal("a 503 was cached")
		}
	}
	if n := cnt.get("ANY", "/flaky"); n != 3 {
		t.Fatalf("503s: upstream hits %d, want 3", n)
	}

	bh := newTestClient(t, Config{URL: blackhole(t), Now: clk.Now, ResponseHeaderTimeout: 50 * time.Millisecond, FailureThreshold: 100})
	for range 2 {
		if e := wantKind(t, get(bh, "x"), KindTimeout); e.Cached {
			t.Fatal("a timeout was cached")
		}
	}

	off := newTestClient(t, Config{URL: up.URL, NegativeTTL: -1})
	for range 2 {
		wantKind(t, get(off, "disabled"), KindNotFound)
	}
	if n := cnt.get("ANY", "/disabled"); n != 2 {
		t.Fatalf("negative cache disabled: upstream hits %d, want 2", n)
	}
}

// TestResolve: paths resolve under the upstream URL, escapes kept.
func TestResolve(t *testing.T) {
	c := newTestClient(t, Config{URL: "https://registry.example.com/npm/registry"})
	for in, want := range map[string]string{
		"@scope%2fname":             "https://registry.example.com/npm/registry/@scope%2fname",
		"/left-pad/-/left-pad.tgz":  "https://registry.example.com/npm/registry/left-pad/-/left-pad.tgz",
		"v2/a/b/manifests/latest":   "https://registry.example.com/npm/registry/v2/a/b/manifests/latest",
		"https://cdn.example.org/x": "https://cdn.example.org/x",
		"x?y=1":                     "https://registry.example.com/npm/registry/x?y=1",
	} {
		u, err := c.resolve(in)
		if err != nil || u.String() != want {
			t.Fatalf("%q: %v %v, want %s", in, u, err, want)
		}
	}
	for _, in := range []string{"//evil.example/x", "ftp://x/y", "https://u:p@x/y"} {
		if _, err := c.resolve(in); err == nil {
			t.Fatalf("%q resolved", in)
		}
	}
	for _, bad := range []string{"ftp://x", "https://u:p@x/", "https://x/?q=1", "/relative"} {
		if _, err := New(Config{URL: bad}); err == nil {
			t.Fatalf("New(%q) accepted", bad)
		}
	}
}

// TestStallTimeoutOnDo: a body that stops arriving fails its read with
// KindTimeout within StallTimeout, instead of holding the client.
func TestStallTimeoutOnDo(t *testing.T) {
	unblock := make(chan struct{})
	up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write(make([]byte, 10))
		w.(http.Flusher).Flush()
		<-unblock
	}))
	t.Cleanup(func() { close(unblock) })
	c := newTestClient(t, Config{URL: up.URL, StallTimeout: 100 * time.Millisecond})
	resp, err := c.Do(context.Background(), &Request{Path: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	n, err := io.Copy(io.Discard, resp.Body)
	wantKind(t, err, KindTimeout)
	if n != 10 {
		t.Fatalf("read %d", n)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("the stall was not detected")
	}
}

// mappedTransport dials host:port names to test servers, so that tests
// can use real DNS-style names (subdomains, registrable domains).
func mappedTransport(m map[string]string) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if a, ok := m[addr]; ok {
			addr = a
		}
		return d.DialContext(ctx, network, addr)
	}}
}

func hostOf(s string) string { return strings.TrimPrefix(s, "http://") }

// TestHealthInterval: an unchanged status is recorded again only once
// per HealthInterval; a change is recorded at once; a recorder error is
// logged, not returned to requests.
func TestHealthInterval(t *testing.T) {
	clk := newClock()
	f := &flaky{ok: func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }}
	up := serve(t, f)
	rec := &healthLogT{}
	c := newTestClient(t, Config{URL: up.URL, Now: clk.Now, HealthRecorder: rec, HealthInterval: time.Minute, FailureThreshold: 1})
	for range 5 {
		if err := get(c, "x"); err != nil {
			t.Fatal(err)
		}
	}
	c.health.flush()
	if n := len(rec.statuses()); n != 1 {
		t.Fatalf("records %d, want 1", n)
	}
	clk.Advance(61 * time.Second)
	if err := get(c, "x"); err != nil {
		t.Fatal(err)
	}
	c.health.flush()
	if n := len(rec.statuses()); n != 2 || !rec.last().CheckedAt.Equal(clk.Now()) {
		t.Fatalf("records %d (%+v), want 2 at the new time", n, rec.last())
	}
	f.down.Store(true)
	wantKind(t, get(c, "x"), KindBadGateway)
	c.health.flush()
	if s := rec.statuses(); len(s) != 3 || s[2] != enum.HealthUnhealthy {
		t.Fatalf("statuses %v", s)
	}

	failing := newTestClient(t, Config{URL: up.URL, HealthRecorder: HealthFunc(func(context.Context, Health) error {
		return errors.New("database down")
	})})
	f.down.Store(false)
	if err := get(failing, "x"); err != nil {
		t.Fatalf("a failing recorder leaked into the request: %v", err)
	}
}
