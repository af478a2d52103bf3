// Package gc is the online garbage collector (docs/garbage-collection.md)
// on River: the
// periodic gc:sweep enqueues a gc:cleanup-partition job per partition
// holding due review candidates, which reclaims them in paced batches (it
// and gc:cleanup of one candidate, left from earlier releases, are the
// only jobs that destroy bytes); gc:reconcile-scan repairs missed candidate
// records; gc:staging-sweep purges expired upload sessions; gc:expiry-sweep
// purges soft-deleted rows past their namespace's trash retention
// (through store/catalog), which only detaches blobs. Candidates are
// recorded and cleared by the blob layer (store.Attach / store.Detach);
// every SQL statement lives in package store (store/gc*.go).
//
// Wiring (cmd/artifact-registry/serve.go):
//
//	g, err := gc.New(st, gc.Config{Phase: gc.PhaseDelete}) // also installs the push-path metrics on st
//	workers := river.NewWorkers()
//	periodic := g.Register(workers)
//	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}}
//	maps.Copy(queues, g.Queues())
//	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
//		Queues: queues, Workers: workers, PeriodicJobs: periodic, ...})
//	prometheus.MustRegister(g.Collectors()...)
//
// The review delay is the store's (store.Options.ReviewDelay, default
// 24 h): the blob layer records candidates with it.
package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"golang.org/x/time/rate"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/catalog"
)

// Phase is the GC rollout phase (docs/garbage-collection.md "Operational
// controls", item 5).
type Phase int

const (
	// PhaseRecord: candidates are recorded (by the blob layer) and the
	// reconcile scan runs; nothing is rechecked or deleted.
	PhaseRecord Phase = 1
	// PhaseDiscard: the sweep and cleanup run, recheck and discard
	// re-referenced candidates, and delete nothing (eligible candidates are
	// logged and held back).
	PhaseDiscard Phase = 2
	// PhaseDelete: cleanup deletes objects (the irreversible step), and the
	// staging sweep purges expired uploads. The default.
	PhaseDelete Phase = 3
)

func (p Phase) String() string {
	switch p {
	case PhaseRecord:
		return "record"
	case PhaseDiscard:
		return "discard"
	case PhaseDelete:
		return "delete"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Queue names. Cleanup jobs get their own queue so that the worker count
// that bounds the drain rate (and the load on storage) is one setting.
const (
	QueueCleanup     = "gc_cleanup"
	QueueMaintenance = "gc_maintenance"
)

// CleanupFetchCooldown is how often, at most, the cleanup queue fetches
// jobs. River fetches at most once per cooldown, at most as many jobs as
// it has free workers: its default of 100 ms held a drain with ten workers
// to 100 objects/s, whatever the database could do.
const CleanupFetchCooldown = 5 * time.Millisecond

// Defaults of Config.
const (
	DefaultPhase             = PhaseDelete
	DefaultSweepInterval     = time.Minute
	DefaultCleanupBatch      = 100
	DefaultCleanupRate       = 600
	DefaultCleanupWorkers    = 10
	DefaultCleanupAttempts   = 5
	DefaultReconcileInterval = 6 * time.Hour
	DefaultReconcilePage     = 1000
	DefaultReconcileTimeout  = time.Hour
	DefaultStagingInterval   = 15 * time.Minute
	DefaultStagingBatch      = 500
	DefaultStrikeLimit       = 5
	DefaultBackoffBase       = time.Minute
	DefaultBackoffMax        = 6 * time.Hour
	DefaultFailureWindow     = 32
	DefaultFailureMinSamples = 8
	DefaultFailureRatio      = 0.5
	DefaultPauseDuration     = 10 * time.Minute
	DefaultHoldback          = 6 * time.Hour
	DefaultMetricsRefresh    = 15 * time.Second
)

// Config configures the collector. Zero values take the defaults above.
type Config struct {
	// Phase of the rollout (1, 2 or 3); default 3.
	Phase Phase
	// SweepInterval: how often gc:sweep runs (on the elected leader).
	SweepInterval time.Duration
	// CleanupBatch: candidates per cleanup transaction. A batch shares
	// one job, one transaction and one statement per step among its
	// candidates; the kill switch is still read before each delete.
	CleanupBatch int
	// CleanupRate: candidates per second this process's cleanups take on
	// at most, all workers together; negative: no limit. A drain left
	// unpaced takes every core the database has, and pushes wait behind
	// it.
	CleanupRate float64
	// CleanupWorkers: MaxWorkers of QueueCleanup (see Queues). Each
	// running cleanup holds one pool connection for its transaction, so
	// the pool (pgxpool's default MaxConns is max(4, NumCPU)) must leave
	// room for the foreground paths: size it above this count.
	CleanupWorkers int
	// CleanupAttempts: River MaxAttempts of a cleanup job (bounds a job
	// that keeps failing with an unclassified error; the candidate
	// survives it and is enqueued again by a later sweep).
	CleanupAttempts int
	// Reconcile scan: interval, page size and time budget of one run.
	ReconcileInterval time.Duration
	ReconcilePage     int
	ReconcileTimeout  time.Duration
	// Staging sweep: interval and batch size.
	StagingInterval time.Duration
	StagingBatch    int
	// Expiry sweep: interval, and rows of one kind purged per transaction.
	ExpiryInterval time.Duration
	ExpiryBatch    int
	// Cache eviction (gc:cache-evict): interval, and cached images
	// evicted per transaction.
	CacheEvictInterval time.Duration
	CacheEvictBatch    int
	// Failure isolation: a candidate is excluded at StrikeLimit strikes;
	// failed attempts back off BackoffBase * 2^(attempts-1), at most
	// BackoffMax. Over the last FailureWindow storage deletes of this
	// process, a failure ratio of at least FailureRatio (with at least
	// FailureMinSamples deletes) is environmental: the sweep pauses for
	// PauseDuration and nobody is struck; below the ratio a failure is a
	// strike; with fewer samples it is neither.
	StrikeLimit       int
	BackoffBase       time.Duration
	BackoffMax        time.Duration
	FailureWindow     int
	FailureMinSamples int
	FailureRatio      float64
	PauseDuration     time.Duration
	// Holdback: in phase 2, how long a candidate that would have been
	// deleted waits before it is reviewed again.
	Holdback time.Duration
	// KillSwitch is the source of the operator kill switch; nil reads the
	// gc_controls row through the store. It is read before every delete
	// and fails closed.
	KillSwitch KillSwitch
	// ManifestParser: the blob references of a stored manifest, for the
	// gc:record-blob-references backfill (nil: the job is not scheduled).
	ManifestParser ManifestParser
	// Backfill of manifest blob references: interval and batch size (the
	// subjects backfill uses the same batch size).
	ReferencesInterval time.Duration
	ReferencesBatch    int
	// SubjectParser: the subject and artifact type of a stored manifest,
	// for the gc:record-manifest-subjects backfill (nil: the job is not
	// scheduled); SubjectsInterval its period.
	SubjectParser    SubjectParser
	SubjectsInterval time.Duration
	// Clock; nil takes the store's.
	Clock store.Clock
	// Logger for the structured events; nil is slog.Default().
	Logger *slog.Logger
	// MetricsRefresh: the queue gauges are recomputed at most this often.
	MetricsRefresh time.Duration
}

func (c Config) withDefaults(st *store.Store) (Config, error) {
	if c.Phase == 0 {
		c.Phase = DefaultPhase
	}
	if c.Phase < PhaseRecord || c.Phase > PhaseDelete {
		return c, fmt.Errorf("gc: phase %d: want 1 (record), 2 (discard) or 3 (delete)", int(c.Phase))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.SweepInterval, DefaultSweepInterval)
	defInt(&c.CleanupBatch, DefaultCleanupBatch)
	if c.CleanupRate == 0 {
		c.CleanupRate = DefaultCleanupRate
	}
	defInt(&c.CleanupWorkers, DefaultCleanupWorkers)
	defInt(&c.CleanupAttempts, DefaultCleanupAttempts)
	def(&c.ReconcileInterval, DefaultReconcileInterval)
	defInt(&c.ReconcilePage, DefaultReconcilePage)
	def(&c.ReconcileTimeout, DefaultReconcileTimeout)
	def(&c.StagingInterval, DefaultStagingInterval)
	defInt(&c.StagingBatch, DefaultStagingBatch)
	def(&c.ExpiryInterval, DefaultExpiryInterval)
	def(&c.ReferencesInterval, DefaultReferencesInterval)
	def(&c.SubjectsInterval, DefaultSubjectsInterval)
	defInt(&c.ReferencesBatch, DefaultReferencesBatch)
	defInt(&c.ExpiryBatch, catalog.DefaultPurgeBatch)
	def(&c.CacheEvictInterval, DefaultCacheEvictInterval)
	defInt(&c.CacheEvictBatch, DefaultCacheEvictBatch)
	defInt(&c.StrikeLimit, DefaultStrikeLimit)
	def(&c.BackoffBase, DefaultBackoffBase)
	def(&c.BackoffMax, DefaultBackoffMax)
	defInt(&c.FailureWindow, DefaultFailureWindow)
	defInt(&c.FailureMinSamples, DefaultFailureMinSamples)
	if c.FailureRatio <= 0 || c.FailureRatio > 1 {
		c.FailureRatio = DefaultFailureRatio
	}
	def(&c.PauseDuration, DefaultPauseDuration)
	def(&c.Holdback, DefaultHoldback)
	def(&c.MetricsRefresh, DefaultMetricsRefresh)
	if c.FailureMinSamples > c.FailureWindow {
		c.FailureMinSamples = c.FailureWindow
	}
	if c.Clock == nil {
		c.Clock = st.Options().Clock
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.KillSwitch == nil {
		c.KillSwitch = StoreKillSwitch{Store: st}
	}
	return c, nil
}

// GC is the garbage collector of one process.
type GC struct {
	st      *store.Store
	catalog *catalog.Store
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	window  *failureWindow
	// pace holds the cleanups to CleanupRate; a batch waits for its
	// candidates' tokens before its transaction starts.
	pace *rate.Limiter

	// pause caches gc_sweep_state for the cleanup path (one read per
	// second at most; this process's own pauses update it at once).
	pauseMu      sync.Mutex
	pauseUntil   time.Time
	pauseChecked time.Time

	// Fault injection (tests).
	deleteObject      func(ctx context.Context, key string) error
	afterObjectDelete func(ctx context.Context, b *store.Blob) error
	inserter          jobInserter
}

// New returns the collector over a store. It installs its push-path
// metrics as the store's PushObserver.
func New(st *store.Store, cfg Config) (*GC, error) {
	cfg, err := cfg.withDefaults(st)
	if err != nil {
		return nil, err
	}
	g := &GC{
		st:      st,
		catalog: catalog.New(st),
		cfg:     cfg,
		log:     cfg.Logger.With("component", "gc"),
		metrics: newMetrics(),
		window:  newFailureWindow(cfg.FailureWindow, cfg.FailureMinSamples, cfg.FailureRatio),
		pace:    rate.NewLimiter(rate.Inf, 0),
	}
	if cfg.CleanupRate > 0 {
		g.pace = rate.NewLimiter(rate.Limit(cfg.CleanupRate), g.batchSize()) // a second's worth at most
	}
	g.metrics.queue = &queueCollector{g: g}
	st.SetPushObserver(g.metrics.push)
	return g, nil
}

// Config returns the effective configuration.
func (g *GC) Config() Config { return g.cfg }

// Register adds the GC workers to workers and returns the periodic jobs
// of the configured phase (pass them as river.Config.PeriodicJobs; River
// runs them on the elected leader only). Every worker is registered in
// every phase, so jobs left over from a later phase still find a worker
// (which then does nothing the phase does not allow).
//
//	phase 1: gc:reconcile-scan
//	phase 2: + gc:sweep (cleanup rechecks and discards, deletes nothing)
//	every phase: gc:expiry-sweep, gc:cache-evict and, with a ManifestParser,
//	gc:record-blob-references (they only detach: the phase governs what
//	becomes of the candidates they record); with a SubjectParser,
//	gc:record-manifest-subjects (it only writes two columns)
//	phase 3: + gc:staging-sweep (and cleanup deletes)
func (g *GC) Register(workers *river.Workers) []*river.PeriodicJob {
	river.AddWorker(workers, &sweepWorker{g: g})
	river.AddWorker(workers, &cleanupWorker{g: g})
	river.AddWorker(workers, &cleanupPartitionWorker{g: g})
	river.AddWorker(workers, &reconcileWorker{g: g})
	river.AddWorker(workers, &stagingWorker{g: g})
	river.AddWorker(workers, &expiryWorker{g: g})
	river.AddWorker(workers, &referencesWorker{g: g})
	river.AddWorker(workers, &cacheEvictWorker{g: g})
	river.AddWorker(workers, &subjectsWorker{g: g})
	jobs := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(g.cfg.CacheEvictInterval),
			func() (river.JobArgs, *river.InsertOpts) { return CacheEvictArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindCacheEvict, RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(g.cfg.ReconcileInterval),
			func() (river.JobArgs, *river.InsertOpts) { return ReconcileScanArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindReconcileScan, RunOnStart: true}),
		river.NewPeriodicJob(river.PeriodicInterval(g.cfg.ExpiryInterval),
			func() (river.JobArgs, *river.InsertOpts) { return ExpirySweepArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindExpirySweep, RunOnStart: true}),
	}
	if g.cfg.ManifestParser != nil {
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(g.cfg.ReferencesInterval),
			func() (river.JobArgs, *river.InsertOpts) { return RecordReferencesArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindRecordReferences, RunOnStart: true}))
	}
	if g.cfg.SubjectParser != nil {
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(g.cfg.SubjectsInterval),
			func() (river.JobArgs, *river.InsertOpts) { return RecordSubjectsArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindRecordSubjects, RunOnStart: true}))
	}
	if g.cfg.Phase >= PhaseDiscard {
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(g.cfg.SweepInterval),
			func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindSweep, RunOnStart: true}))
	}
	if g.cfg.Phase >= PhaseDelete {
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(g.cfg.StagingInterval),
			func() (river.JobArgs, *river.InsertOpts) { return StagingSweepArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindStagingSweep, RunOnStart: true}))
	}
	return jobs
}

// Queues returns the River queues the GC jobs run in; merge them into
// river.Config.Queues.
func (g *GC) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{
		QueueCleanup:     {MaxWorkers: g.cfg.CleanupWorkers, FetchCooldown: CleanupFetchCooldown},
		QueueMaintenance: {MaxWorkers: 2},
	}
}

// Register is New followed by (*GC).Register, for callers that only need
// the periodic jobs; use New when the metrics are wanted too.
func Register(workers *river.Workers, st *store.Store, cfg Config) (*GC, []*river.PeriodicJob, error) {
	g, err := New(st, cfg)
	if err != nil {
		return nil, nil, err
	}
	return g, g.Register(workers), nil
}

// jobInserter inserts jobs and reports how many were new and how many
// were skipped as duplicates of in-flight jobs. Production uses the River
// client of the job's context; tests may set GC.inserter.
type jobInserter interface {
	insertMany(ctx context.Context, params []river.InsertManyParams) (inserted, duplicates int, err error)
}

func (g *GC) now() time.Time { return g.cfg.Clock.Now() }

// sweepPaused reports whether the sweep is paused at now (cached ≤ 1 s).
func (g *GC) sweepPaused(ctx context.Context, now time.Time) (bool, error) {
	g.pauseMu.Lock()
	fresh := !g.pauseChecked.IsZero() && now.Sub(g.pauseChecked) < time.Second && !now.Before(g.pauseChecked)
	until := g.pauseUntil
	g.pauseMu.Unlock()
	if !fresh {
		st, err := g.st.GCSweepState(ctx)
		if err != nil {
			return false, err
		}
		until = time.Time{}
		if st.PausedUntil != nil {
			until = *st.PausedUntil
		}
		g.pauseMu.Lock()
		g.pauseUntil, g.pauseChecked = until, now
		g.pauseMu.Unlock()
	}
	return until.After(now), nil
}

func (g *GC) notePause(until time.Time) {
	g.pauseMu.Lock()
	if until.After(g.pauseUntil) {
		g.pauseUntil = until
	}
	g.pauseMu.Unlock()
}

// jobInserter returns the inserter of the sweep: the River client found
// in the job's context (or the one a test installed).
func (g *GC) jobInserter(ctx context.Context) (jobInserter, error) {
	if g.inserter != nil {
		return g.inserter, nil
	}
	c, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return nil, errors.New("gc: no River client in the job context")
	}
	return riverInserter{c}, nil
}

// riverInserter inserts through a River client.
type riverInserter struct{ c *river.Client[pgx.Tx] }

func (r riverInserter) insertMany(ctx context.Context, params []river.InsertManyParams) (int, int, error) {
	res, err := r.c.InsertMany(ctx, params)
	if err != nil {
		return 0, 0, err
	}
	inserted, dup := 0, 0
	for _, x := range res {
		if x.UniqueSkippedAsDuplicate {
			dup++
		} else {
			inserted++
		}
	}
	return inserted, dup, nil
}
