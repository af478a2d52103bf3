package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/migrations"
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

	jobs, err := newJobClient(db.Pool, log)
	if err != nil {
		return err
	}
	if err := jobs.Start(ctx); err != nil {
		return fmt.Errorf("start job client: %w", err)
	}
	defer stopJobs(jobs, cfg.ShutdownTimeout)

	srv := httpserver.New(httpserver.Options{Logger: log, Ready: readiness(db.Pool)})
	log.Info("artifact registry starting", "version", versionString(), "listen", cfg.Listen,
		"storage", cfg.StorageURL, "public_url", cfg.PublicURL, "embedded_db", cfg.DatabaseURL == "",
		"startup", time.Since(start).Round(time.Millisecond))
	return srv.Serve(ctx, cfg.Listen, cfg.ShutdownTimeout)
}

// newJobClient wires River on the same pool; job kinds register their
// workers and periodic jobs here as they arrive.
func newJobClient(pool *pgxpool.Pool, log *slog.Logger) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:  log,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers: workers,
	})
	if err != nil {
		return nil, fmt.Errorf("create job client: %w", err)
	}
	return c, nil
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
