package upstream

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Health is what a Client knows about its upstream, as HealthRecorder
// receives it and Client.Health returns it.
type Health struct {
	// Status: HealthHealthy after an answer (any status below 500 other
	// than 429, 401 and 403), HealthUnhealthy once the breaker opened, a
	// 429 made requests fail fast or the credentials were refused,
	// HealthUnknown before any of these.
	Status enum.HealthStatus
	// CheckedAt is when Status was last confirmed by an upstream answer
	// or failure.
	CheckedAt time.Time
	// LastError is the last failure's ClientMessage (empty when
	// healthy): no URL, no credential.
	LastError string
	// RetryAt is, while unhealthy, when requests go upstream again.
	RetryAt time.Time
}

// HealthRecorder persists a remote's health (the remote repository
// tables' last_health_status and last_health_checked_at). A Client calls
// it when the status changes and otherwise at most once per
// Config.HealthInterval, from one goroutine at a time, in order, never on
// a request's path; an error is logged and the next change tries again.
type HealthRecorder interface {
	RecordHealth(ctx context.Context, h Health) error
}

// HealthFunc adapts a function to HealthRecorder.
type HealthFunc func(ctx context.Context, h Health) error

// RecordHealth calls f.
func (f HealthFunc) RecordHealth(ctx context.Context, h Health) error { return f(ctx, h) }

// breaker is the circuit breaker and the 429 gate of one upstream.
//
// Closed: requests go upstream; consecutive failures (no answer,
// timeouts, 5xx; not 404 or other 4xx) are counted, and the threshold
// opens it. Open: requests fail fast with KindOffline until openUntil.
// Then half-open: the next request is the probe and goes upstream while
// the others still fail fast; its answer closes the breaker, its failure
// opens it for another period. Independently, a 429 makes every request
// fail fast with KindRateLimited until its Retry-After.
type breaker struct {
	threshold int
	openFor   time.Duration
	now       func() time.Time

	mu           sync.Mutex
	failures     int
	state        int
	openUntil    time.Time
	probing      bool
	limitedUntil time.Time

	metrics *remoteMetrics
	health  func(h Health)
}

// allow says whether a request may go upstream; probe: it is the
// half-open probe, whose outcome must be reported (or released).
func (b *breaker) allow() (probe bool, err *Error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if now.Before(b.limitedUntil) {
		return false, &Error{Kind: KindRateLimited, RetryAt: b.limitedUntil, msg: "rate limit reached, waiting for Retry-After"}
	}
	switch b.state {
	case breakerOpen:
		if now.Before(b.openUntil) {
			return false, &Error{Kind: KindOffline, RetryAt: b.openUntil, msg: "assumed offline after repeated failures"}
		}
		b.setState(breakerHalfOpen)
		fallthrough
	case breakerHalfOpen:
		if b.probing {
			return false, &Error{Kind: KindOffline, RetryAt: now.Add(time.Second), msg: "assumed offline, a probe is in flight"}
		}
		b.probing = true
		return true, nil
	}
	return false, nil
}

func (b *breaker) setState(s int) {
	b.state = s
	b.metrics.breaker.Set(float64(s))
}

// success records an answer from the upstream.
func (b *breaker) success(probe bool) {
	b.mu.Lock()
	b.failures = 0
	if probe {
		b.probing = false
	}
	if b.state != breakerClosed {
		b.setState(breakerClosed)
	}
	now := b.now()
	b.mu.Unlock()
	b.health(Health{Status: enum.HealthHealthy, CheckedAt: now})
}

// refused records an answer that makes the upstream unusable although it
// is up (credentials refused): the breaker treats it as an answer, the
// health as a problem an admin must see.
func (b *breaker) refused(probe bool, e *Error) {
	b.mu.Lock()
	b.failures = 0
	if probe {
		b.probing = false
	}
	if b.state != breakerClosed {
		b.setState(breakerClosed)
	}
	now := b.now()
	b.mu.Unlock()
	b.health(Health{Status: enum.HealthUnhealthy, CheckedAt: now, LastError: e.ClientMessage()})
}

// failure records a failed request (e.Temporary() and not a 429).
func (b *breaker) failure(probe bool, e *Error) {
	b.mu.Lock()
	now := b.now()
	b.failures++
	if probe {
		b.probing = false
	}
	opened := false
	if (b.state == breakerClosed && b.failures >= b.threshold) || b.state == breakerHalfOpen {
		b.openUntil = now.Add(b.openFor)
		b.setState(breakerOpen)
		opened = true
	}
	until := b.openUntil
	b.mu.Unlock()
	if opened {
		b.health(Health{Status: enum.HealthUnhealthy, CheckedAt: now, LastError: e.ClientMessage(), RetryAt: until})
	}
}

// release gives up a probe that ended without an outcome (the caller's
// context ended first): the next request probes instead.
func (b *breaker) release(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
}

// rateLimited records a 429 and makes requests fail fast until until.
func (b *breaker) rateLimited(probe bool, until time.Time, e *Error) {
	b.mu.Lock()
	now := b.now()
	if probe {
		b.probing = false
	}
	if b.state == breakerHalfOpen {
		// The upstream answered: it is up, only refusing.
		b.setState(breakerClosed)
	}
	b.failures = 0
	if until.After(b.limitedUntil) {
		b.limitedUntil = until
	}
	until = b.limitedUntil
	b.mu.Unlock()
	b.metrics.limitedUntil.Set(float64(until.Unix()))
	b.health(Health{Status: enum.HealthUnhealthy, CheckedAt: now, LastError: e.ClientMessage(), RetryAt: until})
}

func (b *breaker) consecutiveFailures() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures
}

// snapshot reports whether requests fail fast now (breaker open or a
// Retry-After pending) and until when.
func (b *breaker) snapshot() (offline bool, retryAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.now().Before(b.limitedUntil) {
		return true, b.limitedUntil
	}
	if b.state == breakerOpen {
		return true, b.openUntil
	}
	return false, time.Time{}
}

// retryAfter parses Retry-After (delay-seconds or an HTTP date) relative
// to now, bounded by limit; def when absent or unreadable.
func retryAfter(h http.Header, now time.Time, def, limit time.Duration) time.Time {
	d := def
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs >= 0 {
			d = time.Duration(min(secs, int64(limit/time.Second)+1)) * time.Second
		} else if t, err := http.ParseTime(v); err == nil {
			d = t.Sub(now)
		}
	}
	d = min(max(d, 0), limit)
	return now.Add(d)
}

// observeRateLimit exports the ratelimit-limit and ratelimit-remaining
// headers ("100;w=21600").
func (r *remoteMetrics) observeRateLimit(h http.Header) {
	if v, w, ok := parseRateLimit(h.Get("Ratelimit-Limit")); ok {
		r.rlLimit.Set(v)
		if w > 0 {
			r.rlWindow.Set(w)
		}
	}
	if v, _, ok := parseRateLimit(h.Get("Ratelimit-Remaining")); ok {
		r.rlRemaining.Set(v)
	}
}

func parseRateLimit(s string) (value, window float64, ok bool) {
	if s == "" {
		return 0, 0, false
	}
	parts := strings.Split(s, ";")
	n, err := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	if err != nil || n < 0 {
		return 0, 0, false
	}
	for _, p := range parts[1:] {
		if k, v, found := strings.Cut(strings.TrimSpace(p), "="); found && strings.EqualFold(k, "w") {
			if w, err := strconv.ParseFloat(v, 64); err == nil && w > 0 {
				window = w
			}
		}
	}
	return n, window, true
}

// healthLog coalesces health reports and hands them to the recorder from
// one goroutine.
type healthLog struct {
	rec      HealthRecorder
	interval time.Duration
	onError  func(error)

	mu       sync.Mutex
	cur      Health
	recorded time.Time
	pending  *Health
	// idle is closed when the running drain goroutine exits (nil when
	// none runs).
	idle chan struct{}
}

func (l *healthLog) report(h Health) {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := h.Status != l.cur.Status
	if !changed && h.Status == enum.HealthUnhealthy {
		h.LastError = l.cur.LastError
	}
	l.cur = h
	if l.rec == nil || (!changed && h.CheckedAt.Sub(l.recorded) < l.interval) {
		return
	}
	l.recorded = h.CheckedAt
	l.pending = &h
	if l.idle == nil {
		l.idle = make(chan struct{})
		go l.drain(l.idle)
	}
}

func (l *healthLog) drain(idle chan struct{}) {
	for {
		l.mu.Lock()
		p := l.pending
		l.pending = nil
		if p == nil {
			l.idle = nil
			l.mu.Unlock()
			close(idle)
			return
		}
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := l.rec.RecordHealth(ctx, *p); err != nil {
			l.onError(err)
		}
		cancel()
	}
}

// flush waits until the records pending now are written.
func (l *healthLog) flush() {
	l.mu.Lock()
	idle := l.idle
	l.mu.Unlock()
	if idle != nil {
		<-idle
	}
}

func (l *healthLog) current() Health {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}
