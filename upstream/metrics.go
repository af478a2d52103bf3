package upstream

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names. Every series carries the label remote (Config.Name, which
// the caller chooses: never a URL or anything secret).
const (
	metricPrefix = "artifact_registry_upstream_"

	MetricRequests          = metricPrefix + "requests_total"
	MetricRequestDuration   = metricPrefix + "request_duration_seconds"
	MetricBreakerState      = metricPrefix + "breaker_state"
	MetricRateLimitLimit    = metricPrefix + "ratelimit_limit"
	MetricRateLimitRemain   = metricPrefix + "ratelimit_remaining"
	MetricRateLimitWindow   = metricPrefix + "ratelimit_window_seconds"
	MetricRateLimitedUntil  = metricPrefix + "rate_limited_until_timestamp_seconds"
	MetricTokenRequests     = metricPrefix + "token_requests_total"
	MetricFills             = metricPrefix + "fills_total"
	MetricFillJoins         = metricPrefix + "fill_joins_total"
	MetricFillBytes         = metricPrefix + "fill_bytes_total"
	MetricFillsInFlight     = metricPrefix + "fills_in_flight"
	MetricNegativeCacheHits = metricPrefix + "negative_cache_hits_total"
)

// Breaker states as MetricBreakerState reports them.
const (
	breakerClosed   = 0
	breakerOpen     = 1
	breakerHalfOpen = 2
)

// Metrics are the upstream layer's Prometheus metrics: one set per
// process, shared by every Client (each adds its own remote label).
// Register Collectors() once.
type Metrics struct {
	requests     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	breaker      *prometheus.GaugeVec
	rlLimit      *prometheus.GaugeVec
	rlRemaining  *prometheus.GaugeVec
	rlWindow     *prometheus.GaugeVec
	limitedUntil *prometheus.GaugeVec
	tokens       *prometheus.CounterVec
	fills        *prometheus.CounterVec
	joins        *prometheus.CounterVec
	fillBytes    *prometheus.CounterVec
	inFlight     *prometheus.GaugeVec
	negativeHits *prometheus.CounterVec
}

// NewMetrics builds an unregistered set.
func NewMetrics() *Metrics {
	remote := []string{"remote"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, remote)
	}
	return &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRequests,
			Help: "Upstream requests by outcome (ok, not_found, unauthorized, rate_limited, offline, unreachable, timeout, bad_gateway, rejected, invalid, canceled); offline and rate_limited include requests that failed fast without reaching the upstream.",
		}, []string{"remote", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricRequestDuration,
			Help:    "Time from sending an upstream request to its response headers (token exchange included).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, remote),
		breaker:      gauge(MetricBreakerState, "Circuit breaker state: 0 closed, 1 open (upstream assumed offline, requests fail fast), 2 half-open (one probe in flight)."),
		rlLimit:      gauge(MetricRateLimitLimit, "The upstream's last ratelimit-limit header: requests allowed per window."),
		rlRemaining:  gauge(MetricRateLimitRemain, "The upstream's last ratelimit-remaining header: requests left in the window."),
		rlWindow:     gauge(MetricRateLimitWindow, "The window (w=) of the upstream's last ratelimit-limit header."),
		limitedUntil: gauge(MetricRateLimitedUntil, "Unix time until which requests fail fast after a 429 (Retry-After); 0 when not rate-limited."),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricTokenRequests,
			Help: "Token requests to the upstream's realm by outcome (ok, refused, error).",
		}, []string{"remote", "outcome"}),
		fills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricFills,
			Help: "Finished fills by outcome (committed, streamed: nothing to cache, not_modified: a conditional fill whose cached copy is current, mismatch: digest or length wrong, too_large, upstream_error, stage_failed, commit_failed).",
		}, []string{"remote", "outcome"}),
		joins:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricFillJoins, Help: "Requests that joined a fill already in flight instead of fetching again."}, remote),
		fillBytes:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricFillBytes, Help: "Bytes received from the upstream by fills."}, remote),
		inFlight:     gauge(MetricFillsInFlight, "Fills receiving from the upstream now."),
		negativeHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricNegativeCacheHits, Help: "Requests answered not found from the negative cache without asking the upstream."}, remote),
	}
}

// Collectors returns every metric, to register on the process's registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.requests, m.duration, m.breaker, m.rlLimit, m.rlRemaining, m.rlWindow,
		m.limitedUntil, m.tokens, m.fills, m.joins, m.fillBytes, m.inFlight, m.negativeHits}
}

// Forget drops every series of a remote (deleted, or renamed).
func (m *Metrics) Forget(remote string) {
	l := prometheus.Labels{"remote": remote}
	m.requests.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
	m.breaker.DeletePartialMatch(l)
	m.rlLimit.DeletePartialMatch(l)
	m.rlRemaining.DeletePartialMatch(l)
	m.rlWindow.DeletePartialMatch(l)
	m.limitedUntil.DeletePartialMatch(l)
	m.tokens.DeletePartialMatch(l)
	m.fills.DeletePartialMatch(l)
	m.joins.DeletePartialMatch(l)
	m.fillBytes.DeletePartialMatch(l)
	m.inFlight.DeletePartialMatch(l)
	m.negativeHits.DeletePartialMatch(l)
}

// remoteMetrics are the series of one remote, resolved once.
type remoteMetrics struct {
	m            *Metrics
	name         string
	duration     prometheus.Observer
	breaker      prometheus.Gauge
	rlLimit      prometheus.Gauge
	rlRemaining  prometheus.Gauge
	rlWindow     prometheus.Gauge
	limitedUntil prometheus.Gauge
	joins        prometheus.Counter
	fillBytes    prometheus.Counter
	inFlight     prometheus.Gauge
	negativeHits prometheus.Counter
}

func (m *Metrics) remote(name string) *remoteMetrics {
	return &remoteMetrics{
		m: m, name: name,
		duration:     m.duration.WithLabelValues(name),
		breaker:      m.breaker.WithLabelValues(name),
		rlLimit:      m.rlLimit.WithLabelValues(name),
		rlRemaining:  m.rlRemaining.WithLabelValues(name),
		rlWindow:     m.rlWindow.WithLabelValues(name),
		limitedUntil: m.limitedUntil.WithLabelValues(name),
		joins:        m.joins.WithLabelValues(name),
		fillBytes:    m.fillBytes.WithLabelValues(name),
		inFlight:     m.inFlight.WithLabelValues(name),
		negativeHits: m.negativeHits.WithLabelValues(name),
	}
}

func (r *remoteMetrics) request(outcome string) { r.m.requests.WithLabelValues(r.name, outcome).Inc() }
func (r *remoteMetrics) token(outcome string)   { r.m.tokens.WithLabelValues(r.name, outcome).Inc() }
func (r *remoteMetrics) fill(outcome string)    { r.m.fills.WithLabelValues(r.name, outcome).Inc() }
