package auth

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/artifact-registry/artifact-registry/store"
)

// Failed authentications are limited per client address, so that guessing
// a token online costs what it costs offline times a very large number: a
// token bucket per address holds FailureLimit failures and refills at
// FailureLimit per FailureWindow. While the bucket of an address is
// empty, every request from it that presents a credential is refused with
// ErrRateLimited before the credential is even checked (a right guess
// must look like a wrong one). Only failures take from the bucket:
// clients that authenticate never wait, however fast they go, and
// anonymous requests are never limited (they guess nothing).
//
// The buckets are per instance: N instances behind a load balancer allow
// N times the rate. They are bounded in memory: at most
// DefaultFailureAddresses addresses, the least recently failing forgotten
// first (forgetting an address gives it a full bucket back, which only
// matters to an attacker holding that many addresses already). IPv6
// clients are counted per /64, since one host commonly owns a whole /64.

// Defaults of the failure limit.
const (
	// DefaultFailureWindow is the refill period of FailureLimit.
	DefaultFailureWindow = time.Minute
	// DefaultFailureAddresses bounds the addresses tracked at once.
	DefaultFailureAddresses = 50000
)

// ErrRateLimited: too many failed authentications came from the client's
// address; it may retry after RetryAfter. HTTP 429 with Retry-After;
// GraphQL RATE_LIMITED.
var ErrRateLimited = errors.New("too many failed authentications")

// RateLimitedError is the ErrRateLimited of one request.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("too many failed authentications from this address: retry in %d s", RetryAfterSeconds(e))
}

// Is makes errors.Is(err, ErrRateLimited) hold.
func (e *RateLimitedError) Is(target error) bool { return target == ErrRateLimited }

// RetryAfterSeconds is the Retry-After value (whole seconds, at least 1)
// of a rate-limited refusal, 0 for any other error.
func RetryAfterSeconds(err error) int {
	var rl *RateLimitedError
	if !errors.As(err, &rl) {
		return 0
	}
	return max(1, int(math.Ceil(rl.RetryAfter.Seconds())))
}

// failureLimiter holds the buckets and the metrics.
type failureLimiter struct {
	limit   rate.Limit
	burst   int
	clock   store.Clock
	trusted []netip.Prefix
	buckets *lru.Cache[netip.Prefix, *rate.Limiter]

	failures *prometheus.CounterVec
	limited  prometheus.Counter
}

func newFailureLimiter(o Options) *failureLimiter {
	l := &failureLimiter{
		burst:   o.FailureLimit,
		clock:   o.Clock,
		trusted: o.TrustedProxies,
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "artifact_registry_auth_failures_total",
			Help: "Failed authentications (a credential was presented and refused), by reason.",
		}, []string{"reason"}),
		limited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "artifact_registry_auth_rate_limited_total",
			Help: "Requests refused with 429 because their address failed to authenticate too often.",
		}),
	}
	if o.FailureLimit > 0 {
		l.limit = rate.Limit(float64(o.FailureLimit) / o.FailureWindow.Seconds())
		l.buckets, _ = lru.New[netip.Prefix, *rate.Limiter](o.FailureAddresses)
	}
	return l
}

// admit takes one failure from the client's bucket before its credential
// is checked, so concurrent guesses cannot all pass an "is it spent yet"
// test together; done gives it back unless the authentication failed. A
// client without a bucket (no failure remembered) is admitted as is.
func (l *failureLimiter) admit(client netip.Prefix) (done func(err error), _ error) {
	if l.buckets == nil {
		return l.record(client, nil), nil
	}
	// Peek takes only the read lock: successes, the common case, do not
	// serialize on the LRU order; failures move their address up.
	b, ok := l.buckets.Peek(client)
	if !ok {
		return l.record(client, nil), nil
	}
	now := l.clock.Now()
	res := b.ReserveN(now, 1)
	if wait := res.DelayFrom(now); !res.OK() || wait > 0 {
		res.CancelAt(now)
		l.limited.Inc()
		return nil, &RateLimitedError{RetryAfter: wait}
	}
	return l.record(client, res), nil
}

// record returns the completion of an admitted authentication: a failure
// is counted and keeps the reserved token (or takes one from a new
// bucket); a success gives the reservation back.
func (l *failureLimiter) record(client netip.Prefix, res *rate.Reservation) func(error) {
	return func(err error) {
		if !errors.Is(err, ErrUnauthenticated) {
			if res != nil {
				res.CancelAt(l.clock.Now())
			}
			return
		}
		l.failures.WithLabelValues(failureReason(err)).Inc()
		if l.buckets == nil {
			return
		}
		if res != nil {
			l.buckets.Get(client) // most recently failing: evicted last
			return
		}
		b := rate.NewLimiter(l.limit, l.burst)
		if prev, found, _ := l.buckets.PeekOrAdd(client, b); found {
			b = prev
		}
		b.AllowN(l.clock.Now(), 1)
	}
}

// failureReason is the metric label of a refusal: a fixed word, never
// anything the client sent.
func failureReason(err error) string {
	var e *Error
	if errors.As(err, &e) && e.reason != "" {
		return e.reason
	}
	return "invalid"
}

// Failure reasons (label values of artifact_registry_auth_failures_total).
const (
	reasonMalformed = "malformed"
	reasonUnknown   = "unknown_token"
	reasonRevoked   = "revoked"
	reasonExpired   = "expired"
	reasonBearer    = "invalid_bearer"
)

// clientKey is the bucket of a request: its client address (see
// ClientAddr), IPv6 addresses by their /64.
func (l *failureLimiter) clientKey(r *http.Request) netip.Prefix {
	a := ClientAddr(r, l.trusted)
	bits := a.BitLen()
	if a.Is6() {
		bits = 64
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return netip.Prefix{} // unparseable peer: one shared bucket
	}
	return p
}

// ClientAddr is the address a request came from: the TCP peer, or, when
// the peer is one of the trusted proxies, the nearest address of
// X-Forwarded-For that is not a trusted proxy (addresses further left
// were written by the client and prove nothing). The zero Addr when the
// peer address cannot be parsed.
func ClientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := parseAddr(r.RemoteAddr)
	if !peer.IsValid() || !inPrefixes(peer, trusted) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a := parseAddr(strings.TrimSpace(hops[i]))
		if !a.IsValid() {
			break
		}
		if !inPrefixes(a, trusted) {
			return a
		}
	}
	return peer
}

func parseAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(s)
	return a.Unmap()
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Collectors are the authentication metrics, for the process registry.
func (a *Authenticator) Collectors() []prometheus.Collector {
	return []prometheus.Collector{a.limiter.failures, a.limiter.limited}
}

// guard runs authenticate for a request that presents a credential,
// refusing it first when its client's failures are spent and counting it
// when it fails.
func (a *Authenticator) guard(r *http.Request, authenticate func() (*Principal, error)) (*Principal, error) {
	done, err := a.limiter.admit(a.limiter.clientKey(r))
	if err != nil {
		return nil, err
	}
	p, err := authenticate()
	done(err)
	return p, err
}
