package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/counters"
	"github.com/artifact-registry/artifact-registry/gc"
	"github.com/artifact-registry/artifact-registry/graph"
	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/invalidate"
	"github.com/artifact-registry/artifact-registry/internal/routes"
	"github.com/artifact-registry/artifact-registry/keyrotation"
	"github.com/artifact-registry/artifact-registry/lifecycle"
	"github.com/artifact-registry/artifact-registry/migrations"
	"github.com/artifact-registry/artifact-registry/protocol/maven"
	"github.com/artifact-registry/artifact-registry/protocol/npm"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
	"github.com/artifact-registry/artifact-registry/store/objstore"
	"github.com/artifact-registry/artifact-registry/upstream"
)

func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg config.Config
	cfg.Register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := cfg.Finish(); err != nil {
		return err
	}
	log := cfg.Logger()
	slog.SetDefault(log)
	start := time.Now()

	db, err := openDatabase(ctx, &cfg, log, roleServer)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if !cfg.NoMigrate {
		if err := migrations.Up(ctx, db.Pool); err != nil {
			return err
		}
	}
	db.checkpointIfCreated(ctx, log)
	objects, err := objstore.Open(ctx, cfg.StorageURL)
	if err != nil {
		return fmt.Errorf("open object storage: %w", err)
	}
	defer objects.Close()
	if cfg.StorageRedirect {
		if err := objects.CanSign(ctx); err != nil {
			return fmt.Errorf("--storage-redirect: %w", err)
		}
	}
	st := store.New(db.Pool, objects, store.Options{ReviewDelay: cfg.GCReviewDelay, MaxUploadSessionsPerRepository: cfg.MaxUploadSessionsPerRepository,
		RedirectDownloads: cfg.StorageRedirect})
	keyring, closeKeys, err := openKeyring(ctx, &cfg, st, log)
	if err != nil {
		return err
	}
	defer closeKeys()

	// One authenticator for every surface: its token cache and buffered
	// last_used_at are per process. Run flushes last_used_at until the
	// server stops, then once more before the database closes.
	// The caches of other instances' changes: one listening connection,
	// outside the pool, for the life of the process.
	listener := invalidate.New(db.Pool.Config().ConnConfig, invalidate.Options{Logger: log})
	listenCtx, stopListening := context.WithCancel(ctx)
	listening := make(chan struct{})
	go func() { defer close(listening); listener.Run(listenCtx) }()
	defer func() { stopListening(); <-listening }()
	authOpts := auth.Options{Logger: log, Listener: listener,
		SecureCookies: strings.HasPrefix(cfg.PublicURL, "https://"),
		FailureLimit:  cfg.AuthFailureLimit, TrustedProxies: cfg.TrustedProxies}
	if err := adminTokenOptions(&cfg, log, &authOpts); err != nil {
		return err
	}
	authn := auth.New(st, authOpts)
	authCtx, stopAuth := context.WithCancel(ctx)
	flushed := make(chan struct{})
	go func() { defer close(flushed); authn.Run(authCtx) }()
	defer func() { stopAuth(); <-flushed }()

	legacy, err := newLegacySetup(ctx, &cfg.Legacy, st, log)
	if err != nil {
		return err
	}
	defer legacy.Close()

	npmOpts := npm.Options{Auth: authn, PublicURL: cfg.PublicURL, Logger: log, MaxPublishSize: int64(cfg.NpmMaxPublishBytes)}
	reconciler := counters.NewReconciler(st, counters.ReconcileConfig{Logger: log})
	jobs, collector, applier, err := newJobClient(db.Pool, st, authn, &cfg, npmOpts, legacy, reconciler, keyring, log)
	if err != nil {
		return err
	}
	if err := jobs.Start(ctx); err != nil {
		return fmt.Errorf("start job client: %w", err)
	}
	defer stopJobs(jobs, cfg.ShutdownTimeout)
	npmOpts.Jobs = jobs

	srv := httpserver.New(httpserver.Options{Logger: log, Ready: readiness(db.Pool), BodyIdleTimeout: cfg.BodyIdleTimeout})
	srv.Registry().MustRegister(collector.Collectors()...)
	srv.Registry().MustRegister(applier.Collectors()...)
	srv.Registry().MustRegister(authn.Collectors()...)
	srv.Registry().MustRegister(reconciler.Collectors()...)
	srv.Registry().MustRegister(legacy.collectors()...)
	// Pull-through caches: the upstream layer's metrics and the cache
	// outcomes, one set each for the process.
	upstreamMetrics, cacheMetrics := upstream.NewMetrics(), oci.NewCacheMetrics()
	srv.Registry().MustRegister(upstreamMetrics.Collectors()...)
	srv.Registry().MustRegister(cacheMetrics.Collectors()...)
	npmCacheMetrics := npm.NewCacheMetrics()
	srv.Registry().MustRegister(npmCacheMetrics.Collectors()...)
	npmOpts.Remote = npm.RemoteOptions{Keyring: keyring, Metrics: upstreamMetrics, CacheMetrics: npmCacheMetrics,
		Upstream: upstream.Config{SpoolDir: cfg.RemoteSpoolDir}}
	mavenCacheMetrics := maven.NewCacheMetrics()
	srv.Registry().MustRegister(mavenCacheMetrics.Collectors()...)
	closeUpstreams := routes.Mount(srv.Router(), st, routes.Options{
		OCI: oci.Options{Auth: authn, Logger: log, Legacy: legacy.oci,
			Remote: oci.RemoteOptions{Keyring: keyring, Metrics: upstreamMetrics, CacheMetrics: cacheMetrics,
				Upstream: upstream.Config{SpoolDir: cfg.RemoteSpoolDir}}},
		Npm: npmOpts,
		Maven: maven.Options{Auth: authn, Logger: log,
			Remote: maven.RemoteOptions{Keyring: keyring, Metrics: upstreamMetrics, CacheMetrics: mavenCacheMetrics,
				Upstream: upstream.Config{SpoolDir: cfg.RemoteSpoolDir}}},
		Graph: graph.Options{Auth: authn, Logger: log, NpmWriteHook: npm.WriteHook(npmOpts), Keyring: keyring},
	})

	log.Info("artifact registry starting", "version", versionString(), "listen", cfg.Listen, "db_max_conns", db.Pool.Config().MaxConns,
		"storage", cfg.StorageURL, "storage_redirect", cfg.StorageRedirect, "public_url", cfg.PublicURL, "embedded_db", cfg.DatabaseURL == "", "root_key", keyring.RootURI(),
		"startup", time.Since(start).Round(time.Millisecond))
	// After Serve (deferred calls run last first): requests are drained,
	// the jobs and the pool still run while fills finish.
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		closeUpstreams(cctx)
	}()
	return srv.Serve(ctx, cfg.Listen, cfg.ShutdownTimeout)
}

// newJobClient wires River on the same pool with every job kind: the GC
// family, the counter fold, the counter reconciliation and lifecycle:apply (periodic,
// leader-elected), the npm packument
// rebuild, the sweep of ended UI sessions, the credential key rotations
// and, when enabled, the registry:2 migration service.
func newJobClient(pool *pgxpool.Pool, st *store.Store, authn *auth.Authenticator, cfg *config.Config, npmOpts npm.Options, legacy *legacySetup, reconciler *counters.Reconciler, keyring *credentials.Keyring, log *slog.Logger) (*river.Client[pgx.Tx], *gc.GC, *lifecycle.Applier, error) {
	workers := river.NewWorkers()
	cleanupRate := float64(cfg.GCCleanupRate)
	if cleanupRate == 0 {
		cleanupRate = -1 // no limit
	}
	collector, err := gc.New(st, gc.Config{Phase: gc.Phase(cfg.GCPhase), CleanupWorkers: cfg.GCCleanupWorkers, CleanupRate: cleanupRate,
		ExpiryInterval: cfg.GCExpiryInterval, ManifestParser: oci.BlobReferences, SubjectParser: oci.ManifestSubject, Logger: log})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("configure garbage collection: %w", err)
	}
	// The npm hook queues packument rebuilds on this client, which exists
	// only once the workers are registered: bind it late (no job runs
	// before Start).
	var client *river.Client[pgx.Tx]
	npmHook := func(ctx context.Context, tx pgx.Tx, pkg npmstore.PackageRef) error {
		o := npmOpts
		o.Jobs = client
		if h := npm.WriteHook(o); h != nil {
			return h(ctx, tx, pkg)
		}
		return nil
	}
	applier := lifecycle.New(st, lifecycle.Config{Interval: cfg.LifecycleInterval, NpmHook: npmHook, Logger: log})
	periodic := collector.Register(workers)
	folder := counters.New(st, counters.Config{Logger: log})
	periodic = append(periodic, folder.Register(workers)...)
	periodic = append(periodic, reconciler.Register(workers)...)
	periodic = append(periodic, authn.RegisterSessionSweep(workers)...)
	periodic = append(periodic, applier.Register(workers)...)
	keyrotation.New(keyring, keyrotation.Config{Logger: log}).Register(workers)
	if err := npm.RegisterWorkers(workers, st, npmOpts); err != nil {
		return nil, nil, nil, err
	}
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: config.DefaultQueueWorkers}}
	maps.Copy(queues, collector.Queues())
	maps.Copy(queues, folder.Queues())
	maps.Copy(queues, reconciler.Queues())
	maps.Copy(queues, applier.Queues())
	legacy.register(workers, queues)
	periodic = append(periodic, legacy.periodic...)
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:       config.JobsLogger(log),
		Queues:       queues,
		Workers:      workers,
		PeriodicJobs: periodic,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create job client: %w", err)
	}
	client = c
	return c, collector, applier, nil
}

func stopJobs(c *river.Client[pgx.Tx], grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := c.Stop(ctx); err != nil && !errors.Is(err, context.Canceled) {
		slog.Error("stop job client", "err", err)
	}
}

// readiness reports the database reachable and the schema current. The
// migration check is cached briefly: probes arrive every few seconds.
func readiness(pool *pgxpool.Pool) httpserver.ReadyFunc {
	var (
		mu      sync.Mutex
		checked time.Time
		current bool
	)
	return func(ctx context.Context) error {
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("database unreachable: %w", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if time.Since(checked) > 30*time.Second || !current {
			st, err := migrations.Check(ctx, pool)
			if err != nil {
				return err
			}
			current, checked = st.Current(), time.Now()
		}
		if !current {
			return errors.New("database migrations pending")
		}
		return nil
	}
}
