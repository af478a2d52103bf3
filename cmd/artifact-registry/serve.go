package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/gc"
	"github.com/artifact-registry/artifact-registry/graph"
	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/migrations"
	"github.com/artifact-registry/artifact-registry/protocol/maven"
	"github.com/artifact-registry/artifact-registry/protocol/npm"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/objstore"
	"github.com/artifact-registry/artifact-registry/web"
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

	db, err := openDatabase(ctx, &cfg, log)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if !cfg.NoMigrate {
		if err := migrations.Up(ctx, db.Pool); err != nil {
			return err
		}
	}
	objects, err := objstore.Open(ctx, cfg.StorageURL)
	if err != nil {
		return fmt.Errorf("open object storage: %w", err)
	}
	defer objects.Close()
	st := store.New(db.Pool, objects, store.Options{ReviewDelay: cfg.GCReviewDelay})

	npmOpts := npm.Options{AdminToken: cfg.AdminToken, PublicURL: cfg.PublicURL, Logger: log}
	jobs, collector, err := newJobClient(db.Pool, st, &cfg, npmOpts, log)
	if err != nil {
		return err
	}
	if err := jobs.Start(ctx); err != nil {
		return fmt.Errorf("start job client: %w", err)
	}
	defer stopJobs(jobs, cfg.ShutdownTimeout)
	npmOpts.Jobs = jobs

	srv := httpserver.New(httpserver.Options{Logger: log, Ready: readiness(db.Pool)})
	srv.Registry().MustRegister(collector.Collectors()...)
	r := srv.Router()
	oci.Mount(r, st, oci.Options{AdminToken: cfg.AdminToken, Logger: log})
	npm.Mount(r, st, npmOpts)
	maven.Mount(r, st, maven.Options{AdminToken: cfg.AdminToken, Logger: log})
	// One authenticator for the process (its token cache and buffered
	// last-used times); Run flushes the buffer until shutdown.
	authn := auth.New(st, auth.Options{AdminToken: cfg.AdminToken, Logger: log})
	go authn.Run(ctx)
	graph.Mount(r, st, graph.Options{Auth: authn, Logger: log})
	r.PathPrefix("/").Handler(web.Handler()) // last: every other route wins

	log.Info("artifact registry starting", "version", versionString(), "listen", cfg.Listen, "db_max_conns", db.Pool.Config().MaxConns,
		"storage", cfg.StorageURL, "public_url", cfg.PublicURL, "embedded_db", cfg.DatabaseURL == "",
		"startup", time.Since(start).Round(time.Millisecond))
	return srv.Serve(ctx, cfg.Listen, cfg.ShutdownTimeout)
}

// newJobClient wires River on the same pool with every job kind: the GC
// family (periodic, leader-elected) and the npm packument rebuild.
func newJobClient(pool *pgxpool.Pool, st *store.Store, cfg *config.Config, npmOpts npm.Options, log *slog.Logger) (*river.Client[pgx.Tx], *gc.GC, error) {
	workers := river.NewWorkers()
	collector, err := gc.New(st, gc.Config{Phase: gc.Phase(cfg.GCPhase), CleanupWorkers: cfg.GCCleanupWorkers, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("configure garbage collection: %w", err)
	}
	periodic := collector.Register(workers)
	if err := npm.RegisterWorkers(workers, st, npmOpts); err != nil {
		return nil, nil, err
	}
	queues := map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: config.DefaultQueueWorkers}}
	maps.Copy(queues, collector.Queues())
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:       log,
		Queues:       queues,
		Workers:      workers,
		PeriodicJobs: periodic,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create job client: %w", err)
	}
	return c, collector, nil
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
