package gc

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names (the alert rules in alerts.yml refer to them).
const (
	metricPrefix = "artifact_registry_gc_"

	MetricCandidatesTracked    = metricPrefix + "candidates_tracked"
	MetricCandidatesDue        = metricPrefix + "candidates_due"
	MetricCandidatesBackingOff = metricPrefix + "candidates_backing_off"
	MetricCandidatesExcluded   = metricPrefix + "candidates_excluded"
	MetricOldestDueAge         = metricPrefix + "candidates_oldest_due_age_seconds"
	MetricQueueStatsUp         = metricPrefix + "queue_stats_up"
	MetricSweepPaused          = metricPrefix + "sweep_paused"
	MetricReclaimEnabled       = metricPrefix + "reclaim_enabled"
	MetricReclaimStopped       = metricPrefix + "reclaim_stopped"
	MetricPhase                = metricPrefix + "phase"
	MetricReclaimedObjects     = metricPrefix + "reclaimed_objects_total"
	MetricReclaimedBytes       = metricPrefix + "reclaimed_bytes_total"
	MetricCleanupOutcomes      = metricPrefix + "cleanup_outcomes_total"
	MetricSweepEnqueued        = metricPrefix + "sweep_enqueued_total"
	MetricSweepPauses          = metricPrefix + "sweep_pauses_total"
	MetricStrikes              = metricPrefix + "candidate_strikes_total"
	MetricExclusions           = metricPrefix + "candidate_exclusions_total"
	MetricReconcileRecorded    = metricPrefix + "reconcile_recorded_total"
	MetricStagingPurged        = metricPrefix + "staging_purged_total"
	MetricExpiredRows          = metricPrefix + "expired_rows_total"
	MetricCacheEvictedImages   = metricPrefix + "cache_evicted_images_total"
	// MetricCacheEvictedNpmVersions and MetricCacheEvictedMavenVersions
	// count the cached versions of npm and Maven remotes gc:cache-evict
	// evicted.
	MetricCacheEvictedNpmVersions   = metricPrefix + "cache_evicted_npm_versions_total"
	MetricCacheEvictedMavenVersions = metricPrefix + "cache_evicted_maven_versions_total"
	MetricBlobLockWait              = metricPrefix + "push_blob_lock_wait_seconds"
	MetricDedupObjectChecks         = metricPrefix + "push_dedup_object_checks_total"
)

type metrics struct {
	reclaimedObjects          prometheus.Counter
	reclaimedBytes            prometheus.Counter
	outcomes                  *prometheus.CounterVec
	sweepEnqueued             prometheus.Counter
	sweepPauses               prometheus.Counter
	strikes                   prometheus.Counter
	excluded                  prometheus.Counter
	reconcileRecorded         prometheus.Counter
	stagingPurged             prometheus.Counter
	expired                   *prometheus.CounterVec
	cacheEvicted              prometheus.Counter
	cacheEvictedNpmVersions   prometheus.Counter
	cacheEvictedMavenVersions prometheus.Counter
	push                      *pushMetrics
	queue                     *queueCollector
}

func newMetrics() *metrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &metrics{
		reclaimedObjects: counter(MetricReclaimedObjects, "Blob objects deleted by the cleanups (committed)."),
		reclaimedBytes:   counter(MetricReclaimedBytes, "Bytes of the blob objects deleted by the cleanups (committed)."),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricCleanupOutcomes,
			Help: "Cleanup attempts by candidate and outcome (reclaimed, referenced, locked, delete_failed, stopped, too_young, would_delete, orphan, gone, deferred, paused, error).",
		}, []string{"outcome"}),
		sweepEnqueued:     counter(MetricSweepEnqueued, "gc:cleanup-partition jobs enqueued by gc:sweep."),
		sweepPauses:       counter(MetricSweepPauses, "Sweep pauses started because storage deletes failed broadly."),
		strikes:           counter(MetricStrikes, "Strikes given to candidates for candidate-specific delete failures."),
		excluded:          counter(MetricExclusions, "Candidates excluded after reaching the strike limit."),
		reconcileRecorded: counter(MetricReconcileRecorded, "Candidates recorded by gc:reconcile-scan (missed records repaired)."),
		stagingPurged:     counter(MetricStagingPurged, "Expired upload sessions purged by gc:staging-sweep."),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricExpiredRows,
			Help: "Soft-deleted rows hard-deleted by gc:expiry-sweep after their trash retention, by kind (REPOSITORY, CONTAINER_IMAGE, CONTAINER_MANIFEST, CONTAINER_BLOB_LINK, NPM_PACKAGE, NPM_VERSION, MAVEN_PACKAGE, MAVEN_VERSION).",
		}, []string{"kind"}),
		cacheEvicted:              counter(MetricCacheEvictedImages, "Cached images of pull-through caches evicted by gc:cache-evict (not pulled within the namespace's KEEP_DOWNLOADED_WITHIN days)."),
		cacheEvictedNpmVersions:   counter(MetricCacheEvictedNpmVersions, "Cached versions of npm remotes evicted by gc:cache-evict (not downloaded within the namespace's KEEP_DOWNLOADED_WITHIN days)."),
		cacheEvictedMavenVersions: counter(MetricCacheEvictedMavenVersions, "Cached versions of Maven proxies evicted by gc:cache-evict (not downloaded within the namespace's KEEP_DOWNLOADED_WITHIN days)."),
		push: &pushMetrics{
			lockWait: prometheus.NewHistogram(prometheus.HistogramOpts{
				Name:    MetricBlobLockWait,
				Help:    "Time a push, delete or dedup commit waited for its blob-row locks (docs/garbage-collection.md, Lock protocol).",
				Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
			}),
			checks: prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: MetricDedupObjectChecks,
				Help: "Storage existence checks made by dedup skips under the blob-row lock because of a live GC candidate, by result (present, missing, error).",
			}, []string{"result"}),
		},
	}
}

func (m *metrics) outcome(o string) { m.outcomes.WithLabelValues(o).Inc() }

func (m *metrics) reclaimed(size int64) {
	m.reclaimedObjects.Inc()
	m.reclaimedBytes.Add(float64(size))
}

// pushMetrics implements store.PushObserver.
type pushMetrics struct {
	lockWait prometheus.Histogram
	checks   *prometheus.CounterVec
}

func (p *pushMetrics) ObserveBlobLockWait(d time.Duration) { p.lockWait.Observe(d.Seconds()) }

func (p *pushMetrics) ObserveDedupObjectCheck(present bool, err error) {
	switch {
	case err != nil:
		p.checks.WithLabelValues("error").Inc()
	case present:
		p.checks.WithLabelValues("present").Inc()
	default:
		p.checks.WithLabelValues("missing").Inc()
	}
}

// Collectors returns every GC metric, to register on the process's
// Prometheus registry. The queue gauges, the sweep pause and the kill
// switch are read from the database at scrape time (at most every
// Config.MetricsRefresh).
func (g *GC) Collectors() []prometheus.Collector {
	m := g.metrics
	return []prometheus.Collector{
		m.reclaimedObjects, m.reclaimedBytes, m.outcomes, m.sweepEnqueued, m.sweepPauses,
		m.strikes, m.excluded, m.reconcileRecorded, m.stagingPurged, m.expired, m.cacheEvicted, m.cacheEvictedNpmVersions, m.cacheEvictedMavenVersions,
		m.push.lockWait, m.push.checks, m.queue,
	}
}

var (
	descTracked    = prometheus.NewDesc(MetricCandidatesTracked, "GC review candidates recorded (most wait for their review delay: a large value is normal).", nil, nil)
	descDue        = prometheus.NewDesc(MetricCandidatesDue, "Candidates past their review time, not excluded and not backing off (the drain signal).", nil, nil)
	descBackingOff = prometheus.NewDesc(MetricCandidatesBackingOff, "Candidates backing off after a failed or deferred attempt.", nil, nil)
	descExcluded   = prometheus.NewDesc(MetricCandidatesExcluded, "Candidates excluded after repeated candidate-specific failures; they need an operator.", nil, nil)
	descOldest     = prometheus.NewDesc(MetricOldestDueAge, "Seconds since the review time of the oldest due candidate (0 when none is due).", nil, nil)
	descStatsUp    = prometheus.NewDesc(MetricQueueStatsUp, "1 when the last read of the queue gauges succeeded.", nil, nil)
	descPaused     = prometheus.NewDesc(MetricSweepPaused, "1 while the sweep is paused because storage deletes failed broadly.", nil, nil)
	descEnabled    = prometheus.NewDesc(MetricReclaimEnabled, "1 when GC may delete objects (phase 3 and kill switch on and readable).", nil, nil)
	descStopped    = prometheus.NewDesc(MetricReclaimStopped, "1 for the reason reclamation is stopped: operator (kill switch off), fail_closed (kill switch unreadable), phase (rollout phase 1 or 2).", []string{"reason"}, nil)
	descPhase      = prometheus.NewDesc(MetricPhase, "Configured GC rollout phase (1 record, 2 discard, 3 delete).", nil, nil)
)

// queueCollector reads the queue gauges, the sweep pause and the kill
// switch from the database when scraped, caching them for
// Config.MetricsRefresh.
type queueCollector struct {
	g *GC

	mu      sync.Mutex
	at      time.Time
	samples []prometheus.Metric
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTracked, descDue, descBackingOff, descExcluded, descOldest, descStatsUp, descPaused, descEnabled, descStopped, descPhase} {
		ch <- d
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.samples == nil || time.Since(c.at) >= c.g.cfg.MetricsRefresh {
		c.samples = c.read()
		c.at = time.Now()
	}
	for _, s := range c.samples {
		ch <- s
	}
}

// refresh drops the cache (tests).
func (c *queueCollector) refresh() {
	c.mu.Lock()
	c.samples = nil
	c.mu.Unlock()
}

func (c *queueCollector) read() []prometheus.Metric {
	g := c.g
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := g.now()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
		return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	out := []prometheus.Metric{gauge(descPhase, float64(g.cfg.Phase))}
	if qs, err := g.st.GCQueueStats(ctx, now); err != nil {
		g.log.Warn("gc: read queue gauges", "err", err)
		out = append(out, gauge(descStatsUp, 0))
	} else {
		age := 0.0
		if qs.OldestDue != nil {
			age = max(now.Sub(*qs.OldestDue).Seconds(), 0)
		}
		out = append(out, gauge(descStatsUp, 1),
			gauge(descTracked, float64(qs.Tracked)),
			gauge(descDue, float64(qs.Due)),
			gauge(descBackingOff, float64(qs.BackingOff)),
			gauge(descExcluded, float64(qs.Excluded)),
			gauge(descOldest, age))
	}
	if st, err := g.st.GCSweepState(ctx); err != nil {
		g.log.Warn("gc: read sweep state", "err", err)
	} else {
		out = append(out, gauge(descPaused, b2f(st.PausedAt(now))))
	}
	rs := g.reclaimStatus(ctx)
	out = append(out, gauge(descEnabled, b2f(rs.enabled)))
	for _, r := range []string{StopOperator, StopFailClosed, StopPhase} {
		out = append(out, gauge(descStopped, b2f(rs.reason == r), r))
	}
	return out
}
