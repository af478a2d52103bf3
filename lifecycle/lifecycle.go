// Package lifecycle runs the lifecycle policies on a schedule: the
// periodic River job lifecycle:apply (leader-only, daily by default)
// applies every enabled policy, namespace by namespace, through
// store/lifecycle, which deletes through each format's soft-delete path
// (to the trash, with the policy as the deleter). A run is bounded: at
// most store/lifecycle's MaxDeletesPerRun items per repository, the rest
// left to the next run.
//
// Wiring (cmd/artifact-registry/serve.go):
//
//	a := lifecycle.New(st, lifecycle.Config{Interval: cfg.LifecycleInterval, NpmHook: hook, Logger: log})
//	periodic = append(periodic, a.Register(workers)...)
//	maps.Copy(queues, a.Queues())
//	registry.MustRegister(a.Collectors()...)
package lifecycle

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
	lifecyclestore "github.com/artifact-registry/artifact-registry/store/lifecycle"
)

// KindApply is the River job kind.
const KindApply = "lifecycle:apply"

// Queue is the River queue of the job.
const Queue = "lifecycle"

// Defaults of Config.
const (
	DefaultInterval = 24 * time.Hour
	DefaultTimeout  = time.Hour
)

// MetricDeleted counts items moved to the trash by policies, by kind.
const MetricDeleted = "artifact_registry_lifecycle_deleted_total"

// Config configures the job. Zero values take the defaults.
type Config struct {
	Interval time.Duration // how often lifecycle:apply runs
	Timeout  time.Duration // time budget of one run
	NpmHook  lifecyclestore.NpmHook
	Logger   *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Applier applies the policies.
type Applier struct {
	st      *store.Store
	ls      *lifecyclestore.Store
	cfg     Config
	deleted *prometheus.CounterVec
}

// New returns an applier over a store.
func New(st *store.Store, cfg Config) *Applier {
	cfg = cfg.withDefaults()
	return &Applier{st: st, cfg: cfg, ls: lifecyclestore.New(st, lifecyclestore.Options{NpmHook: cfg.NpmHook}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDeleted,
			Help: "Artifacts (and Maven SNAPSHOT builds) moved to the trash by lifecycle policies."}, []string{"kind"})}
}

// Collectors returns the metrics to register.
func (a *Applier) Collectors() []prometheus.Collector { return []prometheus.Collector{a.deleted} }

// Result sums one run.
type Result struct {
	Namespaces int
	Deleted    int
	Skipped    int
}

// namespacePage is how many namespaces one listing returns.
const namespacePage = 200

// Apply runs every enabled policy once, namespaces in id order. A
// namespace that fails is logged and skipped; the next run retries it.
func (a *Applier) Apply(ctx context.Context) (Result, error) {
	var res Result
	after := uuid.Nil
	for {
		ids, err := a.ls.NamespacesWithEnabledPolicies(ctx, after, namespacePage)
		if err != nil {
			return res, err
		}
		nss, err := a.st.NamespacesByIDs(ctx, ids)
		if err != nil {
			return res, err
		}
		for _, ns := range nss {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			r, err := a.ls.RunNamespace(ctx, ns)
			for k, n := range r.Deleted {
				a.deleted.WithLabelValues(string(k)).Add(float64(n))
				res.Deleted += n
			}
			res.Skipped += r.Skipped
			res.Namespaces++
			if err != nil {
				a.cfg.Logger.Warn("lifecycle: namespace not finished", "namespace", ns.Slug, "err", err)
			}
		}
		if len(ids) < namespacePage {
			return res, nil
		}
		after = ids[len(ids)-1]
	}
}

// ApplyArgs is lifecycle:apply.
type ApplyArgs struct{}

// Kind implements river.JobArgs.
func (ApplyArgs) Kind() string { return KindApply }

// InsertOpts: one run in flight at a time.
func (ApplyArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: jobstates.InFlight()}}
}

type applyWorker struct {
	river.WorkerDefaults[ApplyArgs]
	a *Applier
}

func (w *applyWorker) Timeout(*river.Job[ApplyArgs]) time.Duration { return w.a.cfg.Timeout }

func (w *applyWorker) Work(ctx context.Context, _ *river.Job[ApplyArgs]) error {
	res, err := w.a.Apply(ctx)
	w.a.cfg.Logger.Info("lifecycle: applied", "namespaces", res.Namespaces, "deleted", res.Deleted, "skipped", res.Skipped, "err", err)
	if err != nil {
		return fmt.Errorf("lifecycle: apply: %w", err)
	}
	return nil
}

// Register adds the worker and returns the periodic job (run by River's
// elected leader only, so once per cluster per interval).
func (a *Applier) Register(workers *river.Workers) []*river.PeriodicJob {
	river.AddWorker(workers, &applyWorker{a: a})
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(a.cfg.Interval),
			func() (river.JobArgs, *river.InsertOpts) { return ApplyArgs{}, nil },
			// RunOnStart: a cluster restarted more often than the interval
			// would otherwise never run it; a run is idempotent.
			&river.PeriodicJobOpts{ID: KindApply, RunOnStart: true}),
	}
}

// Queues returns the job's queue; one worker: a run covers every namespace.
func (a *Applier) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{Queue: {MaxWorkers: 1}}
}
