package counters

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/internal/jobstates"
	"github.com/artifact-registry/artifact-registry/store"
)

// KindReconcile is the River job kind of the reconciliation.
const KindReconcile = "counters:reconcile"

// ReconcileQueue is the River queue of the reconciliation: its own, so a
// long pass never holds up the fold.
const ReconcileQueue = "counters-reconcile"

// Defaults of ReconcileConfig.
const (
	// DefaultReconcileInterval: how often a run starts.
	DefaultReconcileInterval = 10 * time.Minute
	// DefaultReconcileEvery: how old a namespace's last pass must be for
	// a run to take it again.
	DefaultReconcileEvery = 24 * time.Hour
	// DefaultReconcileNamespaces bounds the namespaces of one run.
	DefaultReconcileNamespaces = 200
	DefaultReconcileTimeout    = 30 * time.Minute
)

// Metric names.
const (
	MetricReconcileDrift       = "artifact_registry_counters_reconcile_drift_total"
	MetricReconcileCorrections = "artifact_registry_counters_reconcile_corrections_total"
	MetricReconcileNamespaces  = "artifact_registry_counters_reconcile_namespaces_total"
	MetricReconcileDuration    = "artifact_registry_counters_reconcile_namespace_seconds"
)

// ReconcileConfig configures the reconciler. Zero values take the
// defaults above.
type ReconcileConfig struct {
	Interval   time.Duration // how often counters:reconcile runs
	Every      time.Duration // minimum age of a namespace's last pass
	Namespaces int           // namespaces per run
	Batch      int           // repositories per transaction
	Timeout    time.Duration // time budget of one run
	Logger     *slog.Logger
}

func (c ReconcileConfig) withDefaults() ReconcileConfig {
	if c.Interval <= 0 {
		c.Interval = DefaultReconcileInterval
	}
	if c.Every <= 0 {
		c.Every = DefaultReconcileEvery
	}
	if c.Namespaces <= 0 {
		c.Namespaces = DefaultReconcileNamespaces
	}
	if c.Batch <= 0 {
		c.Batch = store.DefaultReconcileBatch
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultReconcileTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Reconciler recomputes the storage counters from the rows and corrects
// the drift it finds (store.ReconcileNamespaceCounters), namespace by
// namespace, stalest first.
type Reconciler struct {
	st      *store.Store
	cfg     ReconcileConfig
	drift   *prometheus.CounterVec
	fixes   *prometheus.CounterVec
	passes  *prometheus.CounterVec
	seconds prometheus.Histogram
}

// NewReconciler returns a reconciler over a store.
func NewReconciler(st *store.Store, cfg ReconcileConfig) *Reconciler {
	return &Reconciler{
		st:  st,
		cfg: cfg.withDefaults(),
		drift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReconcileDrift,
			Help: "Absolute drift found by counters:reconcile (exact value minus stored value and pending deltas), summed, by counter (table.column).",
		}, []string{"counter"}),
		fixes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReconcileCorrections,
			Help: "Counters counters:reconcile found drifted and corrected, by counter (table.column).",
		}, []string{"counter"}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricReconcileNamespaces,
			Help: "Namespace passes of counters:reconcile by outcome (clean, corrected, skipped, error).",
		}, []string{"outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricReconcileDuration,
			Help:    "Duration of one namespace pass of counters:reconcile.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10),
		}),
	}
}

// Collectors returns the reconciliation metrics, to register on the
// process's Prometheus registry.
func (r *Reconciler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{r.drift, r.fixes, r.passes, r.seconds}
}

// ReconcileNamespace runs one pass over a namespace now and records its
// metrics.
func (r *Reconciler) ReconcileNamespace(ctx context.Context, nsID uuid.UUID) (store.ReconcileResult, error) {
	start := time.Now()
	res, err := r.st.ReconcileNamespaceCounters(ctx, nsID, r.cfg.Batch)
	for _, d := range res.Drifts {
		label := d.Target.String() + "." + d.Field.String()
		r.drift.WithLabelValues(label).Add(float64(abs(d.Drift)))
		r.fixes.WithLabelValues(label).Inc()
	}
	switch {
	case err != nil:
		r.passes.WithLabelValues("error").Inc()
	case res.Skipped:
		r.passes.WithLabelValues("skipped").Inc()
	case len(res.Drifts) > 0:
		r.passes.WithLabelValues("corrected").Inc()
		r.cfg.Logger.Warn("counters: drift corrected", "namespace", nsID, "corrections", len(res.Drifts))
	default:
		r.passes.WithLabelValues("clean").Inc()
	}
	if err == nil && !res.Skipped {
		r.seconds.Observe(time.Since(start).Seconds())
	}
	return res, err
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// ReconcileRunResult sums one run.
type ReconcileRunResult struct {
	Namespaces int // passes completed
	Skipped    int // namespaces another pass held
	Failed     int // passes that failed (retried by a later run)
	Drifts     int // corrections recorded
}

// Run reconciles up to Namespaces namespaces whose last pass is older than
// Every, stalest first. A failed pass leaves the namespace's
// last_reconciled_at alone, so a later run takes it again.
func (r *Reconciler) Run(ctx context.Context, now time.Time) (ReconcileRunResult, error) {
	var res ReconcileRunResult
	ids, err := r.st.NamespacesToReconcile(ctx, now.Add(-r.cfg.Every), r.cfg.Namespaces)
	if err != nil {
		return res, err
	}
	for _, ns := range ids {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		p, err := r.ReconcileNamespace(ctx, ns)
		res.Drifts += len(p.Drifts)
		switch {
		case err != nil:
			res.Failed++
			r.cfg.Logger.Warn("counters: reconcile failed", "namespace", ns, "err", err)
		case p.Skipped:
			res.Skipped++
		default:
			res.Namespaces++
		}
	}
	return res, nil
}

// ReconcileArgs is counters:reconcile.
type ReconcileArgs struct{}

// Kind implements river.JobArgs.
func (ReconcileArgs) Kind() string { return KindReconcile }

// InsertOpts: one run in flight at a time.
func (ReconcileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: ReconcileQueue, MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: jobstates.InFlight()}}
}

type reconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	r *Reconciler
}

func (w *reconcileWorker) Timeout(*river.Job[ReconcileArgs]) time.Duration { return w.r.cfg.Timeout }

func (w *reconcileWorker) Work(ctx context.Context, _ *river.Job[ReconcileArgs]) error {
	res, err := w.r.Run(ctx, time.Now())
	if res.Namespaces > 0 || res.Failed > 0 || err != nil {
		w.r.cfg.Logger.Info("counters: reconciled", "namespaces", res.Namespaces, "skipped", res.Skipped,
			"failed", res.Failed, "corrections", res.Drifts, "err", err)
	}
	if err != nil {
		return fmt.Errorf("counters: reconcile: %w", err)
	}
	return nil
}

// Register adds the worker and returns the periodic job (run by River's
// elected leader, also at start).
func (r *Reconciler) Register(workers *river.Workers) []*river.PeriodicJob {
	river.AddWorker(workers, &reconcileWorker{r: r})
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(r.cfg.Interval),
			func() (river.JobArgs, *river.InsertOpts) { return ReconcileArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindReconcile, RunOnStart: true}),
	}
}

// Queues returns the queue of the reconciliation; merge it into
// river.Config.Queues. One worker: a run covers every namespace due.
func (r *Reconciler) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{ReconcileQueue: {MaxWorkers: 1}}
}
