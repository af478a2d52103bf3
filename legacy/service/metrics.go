package service

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// Metric names.
const (
	metricPrefix = "artifact_registry_legacy_"

	MetricRepositories  = metricPrefix + "repositories"
	MetricStatsUp       = metricPrefix + "repositories_stats_up"
	MetricPassDuration  = metricPrefix + "pass_duration_seconds"
	MetricPassOutcomes  = metricPrefix + "pass_outcomes_total"
	MetricBytesImported = metricPrefix + "imported_bytes_total"
	MetricProxied       = metricPrefix + "proxied_requests_total"
)

// Metrics are the migration's Prometheus metrics; one set per process,
// shared by the service and proxy mode.
type Metrics struct {
	passDuration *prometheus.HistogramVec
	outcomes     *prometheus.CounterVec
	bytes        prometheus.Counter
	proxied      *prometheus.CounterVec
	statuses     *statusCollector
}

// NewMetrics builds the metrics; st feeds the repositories-by-status gauge,
// read at scrape time.
func NewMetrics(st *store.Store) *Metrics {
	return &Metrics{
		passDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricPassDuration,
			Help:    "Run time of one import pass of one repository (pass pre or final), finished or not.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600, 7200},
		}, []string{"pass"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPassOutcomes,
			Help: "Import passes by pass and outcome (done, failed, over_time_limit).",
		}, []string{"pass", "outcome"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: MetricBytesImported,
			Help: "Blob bytes copied from the legacy registry's storage into ours.",
		}),
		proxied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricProxied,
			Help: "Requests under a legacy repository name by outcome (forwarded, local, read_only_rejected, target_refused, error, canceled); target_refused: a request under the target name of a repository not migrated yet.",
		}, []string{"outcome"}),
		statuses: &statusCollector{st: st,
			desc: prometheus.NewDesc(MetricRepositories, "Legacy repositories in the inventory by migration status.", []string{"status"}, nil),
			up:   prometheus.NewDesc(MetricStatsUp, "1 when the last scrape could count the inventory.", nil, nil)},
	}
}

// Collectors lists every collector for registration.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.passDuration, m.outcomes, m.bytes, m.proxied, m.statuses}
}

// ObserveProxy counts one request under a legacy name (protocol/oci
// LegacyOptions.Observe).
func (m *Metrics) ObserveProxy(outcome string) { m.proxied.WithLabelValues(outcome).Inc() }

func (m *Metrics) pass(pass legacy.Pass, outcome string, d time.Duration) {
	m.passDuration.WithLabelValues(pass.String()).Observe(d.Seconds())
	m.outcomes.WithLabelValues(pass.String(), outcome).Inc()
}

// statusCollector counts the inventory by status at scrape time (one
// grouped query over a small plain table).
type statusCollector struct {
	st       *store.Store
	desc, up *prometheus.Desc
}

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc; ch <- c.up }

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := legacy.New(c.st).MigrationProgress(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	for _, s := range enum.LegacyStatusValues() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(p.ByStatus[s]), s.String())
	}
}
