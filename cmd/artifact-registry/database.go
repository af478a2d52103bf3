package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgpool"

	"github.com/artifact-registry/artifact-registry/internal/config"
	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
)

// database is an open pool plus, when no DATABASE_URL was given, the
// private cluster behind it.
type database struct {
	Pool    *pgxpool.Pool
	cluster *pgcluster.Cluster
	// leaveAdopted: a one-shot command (migrate, import) that found the
	// cluster already running leaves it running, since a serve process
	// started it and still uses it.
	leaveAdopted bool
}

// role says who opens the database: the server owns the private cluster
// (it stops it on exit, even one it adopted after a crash); a one-shot
// command stops only a cluster it started itself.
type role int

const (
	roleServer role = iota
	roleCommand
)

func openDatabase(ctx context.Context, cfg *config.Config, log *slog.Logger, who role) (*database, error) {
	db := &database{leaveAdopted: who == roleCommand}
	url := cfg.DatabaseURL
	if url == "" {
		c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(cfg.DataDir, "postgres"), Logger: log})
		if err != nil {
			return nil, fmt.Errorf("start embedded postgresql: %w", err)
		}
		db.cluster = c
		url = c.URL("artifact_registry")
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		db.Close(context.Background())
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	// Larger than the job workers (GC cleanups hold a connection each),
	// so a draining garbage collector never starves requests.
	pc.MaxConns = cfg.PoolMaxConns()
	pgpool.Configure(pc)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		db.Close(context.Background())
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	db.Pool = pool
	return db, nil
}

// Close closes the pool and stops the private cluster, if any and ours
// to stop.
func (d *database) Close(ctx context.Context) {
	if d.Pool != nil {
		d.Pool.Close()
	}
	if d.cluster != nil && !(d.leaveAdopted && d.cluster.Adopted()) {
		if err := d.cluster.Stop(ctx); err != nil {
			slog.Error("stop embedded postgresql", "err", err)
		}
	}
}

// checkpointIfCreated starts a checkpoint in the background when the
// private cluster was created by this start: the first migrations write
// over 200 MB of WAL that the next checkpoint gives back (the cluster keeps
// 32 MB), and the timed one would come only minutes later.
func (d *database) checkpointIfCreated(ctx context.Context, log *slog.Logger) {
	if d.cluster == nil || !d.cluster.Created() {
		return
	}
	go func() {
		if _, err := d.Pool.Exec(ctx, "CHECKPOINT"); err != nil && ctx.Err() == nil {
			log.Warn("checkpoint after the first migrations", "err", err)
		}
	}()
}
