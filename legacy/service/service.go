// Package service is the migration service (docs/registry2-migration.md
// "Migration service"): River jobs that
// work through the legacy inventory by priority. A periodic legacy:tick
// (every TickInterval, leader only) starts `concurrency` legacy:migrate
// slot jobs; each slot claims the next repository and runs pass 1
// (pre-import, no read-only) and, right after it, pass 2 (the read-only
// window, bounded by the final-pass time limit), then, after `cadence`,
// the next repository, until there is no work or the migration is paused.
// Pending repositories go first; pre-imported ones left over (a restart
// between the passes) are finished after them.
//
// One source of truth: paused, concurrency, cadence and final_time_limit
// are the legacy_migration_controls row, which operators change at run
// time (GraphQL setLegacyMigrationControls, pause/resume). The service
// reads it on every tick and before every claim, so a change applies on
// the next tick (concurrency raised), after a slot's current repository
// (concurrency lowered: surplus slots stop), at the next claim (time limit)
// or the next pause (cadence). Config.MaxConcurrency is only the upper
// bound: the River queue's MaxWorkers, fixed at start; a larger
// concurrency in the table is clamped to it.
//
// A final pass over its time limit changes nothing on our side (the
// importer's one transaction rolls back): the repository goes back to
// pre_imported with time_limit_exceeded_at set and is then skipped, so it
// stays on the legacy registry until an operator retries it (it would only
// run over again). Attempts and the last error are recorded on the row.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"gocloud.dev/blob"

	"github.com/artifact-registry/artifact-registry/internal/jobstates"
	"github.com/artifact-registry/artifact-registry/legacy/importer"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// DefaultMaxConcurrency and DefaultTickInterval are the Config defaults.
const (
	DefaultMaxConcurrency = 8
	DefaultTickInterval   = 10 * time.Second
)

// Config of the service. The run-time settings are not here: they are the
// legacy_migration_controls row (legacy.Controls).
type Config struct {
	// MaxConcurrency is the most slots that can run at once whatever the
	// controls say: the River queue's MaxWorkers (minus the tick), fixed
	// at start. Default DefaultMaxConcurrency; at most 64 (the table's
	// own bound).
	MaxConcurrency int
	// TickInterval is how often the leader reads the controls and starts
	// the slots; default DefaultTickInterval.
	TickInterval time.Duration
	// PreImportLease bounds pass 1 before another worker may claim the
	// repository again; default legacy.PreImportLease.
	PreImportLease time.Duration
	Logger         *slog.Logger
}

// Service is the migration service.
type Service struct {
	st      *store.Store
	legacy  *legacy.Store
	src     *blob.Bucket
	cfg     Config
	metrics *Metrics
	log     *slog.Logger
	now     func() time.Time
}

// New builds the service.
func New(st *store.Store, src *blob.Bucket, m *Metrics, cfg Config) (*Service, error) {
	if cfg.MaxConcurrency == 0 {
		cfg.MaxConcurrency = DefaultMaxConcurrency
	}
	if cfg.TickInterval == 0 {
		cfg.TickInterval = DefaultTickInterval
	}
	if cfg.MaxConcurrency < 1 || cfg.MaxConcurrency > 64 || cfg.TickInterval < 0 {
		return nil, fmt.Errorf("legacy service: max concurrency must be 1..64 and the tick interval positive (%d, %s)",
			cfg.MaxConcurrency, cfg.TickInterval)
	}
	if cfg.PreImportLease <= 0 {
		cfg.PreImportLease = legacy.PreImportLease
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if m == nil {
		m = NewMetrics(st)
	}
	return &Service{st: st, legacy: legacy.New(st), src: src, cfg: cfg, metrics: m, log: cfg.Logger, now: time.Now}, nil
}

// Step migrates at most one repository: the next pending one (pass 1 then
// pass 2 right after it), else the next pre-imported one (pass 2). It
// reports whether it found work. A failed pass is recorded on the row by
// the importer, not returned: the error is the repository's, not the
// service's.
func (s *Service) Step(ctx context.Context) (bool, error) {
	c, err := s.controls(ctx)
	if err != nil || c.Paused {
		return false, err
	}
	return s.step(ctx, c)
}

// step is Step under controls c, read just before.
func (s *Service) step(ctx context.Context, c *legacy.Controls) (bool, error) {
	repo, err := s.legacy.ClaimNextRepositoryWithLease(ctx, legacy.PassPre, s.cfg.PreImportLease)
	switch {
	case err == nil:
		if !s.preImport(ctx, *repo) {
			return true, ctx.Err()
		}
	case store.HasCode(err, legacy.CodeNoWork):
		repo, err = s.legacy.ClaimNextRepositoryWithLease(ctx, legacy.PassFinal, c.FinalTimeLimit)
		if store.HasCode(err, legacy.CodeNoWork) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("legacy service: claim final pass: %w", err)
		}
	default:
		return false, fmt.Errorf("legacy service: claim pre-import: %w", err)
	}
	return true, s.finalImport(ctx, *repo, c.FinalTimeLimit)
}

// controls reads the operator controls, concurrency clamped to
// MaxConcurrency.
func (s *Service) controls(ctx context.Context) (*legacy.Controls, error) {
	c, err := s.legacy.Controls(ctx)
	if err != nil {
		return nil, fmt.Errorf("legacy service: read controls: %w", err)
	}
	if c.Concurrency > s.cfg.MaxConcurrency {
		c.Concurrency = s.cfg.MaxConcurrency
	}
	return c, nil
}

// preImport runs pass 1 of a claimed repository; false when it failed.
func (s *Service) preImport(ctx context.Context, repo legacy.Repository) bool {
	start := s.now()
	rep, err := importer.PreImportWith(ctx, s.st, s.src, repo, importer.Options{Lease: s.cfg.PreImportLease})
	d := s.now().Sub(start)
	if rep != nil {
		s.metrics.bytes.Add(float64(rep.BytesCopied))
	}
	if err != nil {
		s.metrics.pass(legacy.PassPre, "failed", d)
		s.log.Warn("legacy pre-import failed", "path", repo.LegacyPath, "attempt", repo.Attempts, "err", err)
		return false
	}
	s.metrics.pass(legacy.PassPre, "done", d)
	s.log.Info("legacy pre-import done", "path", repo.LegacyPath, "tags", rep.TagsSeen,
		"bytes", rep.BytesCopied, "left_behind", len(rep.Items), "took", d)
	return true
}

// finalImport runs pass 2 (the read-only window). repo is claimed
// (importing) or pre-imported (the importer starts the pass).
func (s *Service) finalImport(ctx context.Context, repo legacy.Repository, limit time.Duration) error {
	start := s.now()
	deadline := start.Add(limit)
	rep, err := importer.FinalImport(ctx, s.st, s.src, repo, deadline)
	d := s.now().Sub(start)
	if rep != nil {
		s.metrics.bytes.Add(float64(rep.BytesCopied))
	}
	switch {
	case err == nil:
		s.metrics.pass(legacy.PassFinal, "done", d)
		s.log.Info("legacy repository migrated", "path", repo.LegacyPath, "tags", rep.TagsImported, "read_only", d)
		return nil
	case errors.Is(err, importer.ErrTimeLimit):
		// The importer put it back to pre_imported, nothing changed here.
		// Skip it, so it is not claimed again (it would only run over
		// again): it stays on the legacy registry until an operator
		// retries it, e.g. in an arranged longer window.
		s.metrics.pass(legacy.PassFinal, "over_time_limit", d)
		s.log.Warn("legacy final pass over the time limit", "path", repo.LegacyPath, "tags", repo.TagCount, "limit", limit)
		reason := fmt.Sprintf("final pass ran over its time limit of %s; it stays on the legacy registry until retried", limit)
		if _, err := s.legacy.SkipRepository(context.WithoutCancel(ctx), repo.ID, reason); err != nil {
			return fmt.Errorf("legacy service: skip %s over the time limit: %w", repo.LegacyPath, err)
		}
		return nil
	default:
		s.metrics.pass(legacy.PassFinal, "failed", d)
		s.log.Warn("legacy final pass failed", "path", repo.LegacyPath, "attempt", repo.Attempts, "err", err)
		return ctx.Err() // shutdown stops the slot; a repository's failure does not
	}
}

// ---------------------------------------------------------------- River

// Job kinds and queue.
const (
	KindTick    = "legacy:tick"
	KindMigrate = "legacy:migrate"
	Queue       = "legacy_migration"
)

// TickArgs is legacy:tick.
type TickArgs struct{}

// Kind implements river.JobArgs.
func (TickArgs) Kind() string { return KindTick }

// InsertOpts: one tick in flight.
func (TickArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByState: jobstates.InFlight()}}
}

// MigrateArgs is legacy:migrate, one slot.
type MigrateArgs struct {
	Slot int `json:"slot" river:"unique"`
}

// Kind implements river.JobArgs.
func (MigrateArgs) Kind() string { return KindMigrate }

// InsertOpts: one job per slot in flight, so at most concurrency run.
func (MigrateArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: jobstates.InFlight()}}
}

// Register adds the workers and returns the periodic tick (pass it in
// river.Config.PeriodicJobs; River runs it on the elected leader).
func (s *Service) Register(workers *river.Workers) []*river.PeriodicJob {
	river.AddWorker(workers, &tickWorker{s: s})
	river.AddWorker(workers, &migrateWorker{s: s})
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(s.cfg.TickInterval),
		func() (river.JobArgs, *river.InsertOpts) { return TickArgs{}, nil },
		&river.PeriodicJobOpts{ID: KindTick, RunOnStart: true})}
}

// Queues returns the service's River queue: the slots and the tick. Its
// MaxWorkers is the hard upper bound of the controls' concurrency.
func (s *Service) Queues() map[string]river.QueueConfig {
	return map[string]river.QueueConfig{Queue: {MaxWorkers: s.cfg.MaxConcurrency + 1}}
}

type tickWorker struct {
	river.WorkerDefaults[TickArgs]
	s *Service
}

func (w *tickWorker) Timeout(*river.Job[TickArgs]) time.Duration { return time.Minute }

// Work starts the controls' concurrency of slots unless paused; slots
// already in flight are kept (unique by slot).
func (w *tickWorker) Work(ctx context.Context, _ *river.Job[TickArgs]) error {
	c, err := w.s.controls(ctx)
	if err != nil || c.Paused {
		return err
	}
	client := river.ClientFromContext[pgx.Tx](ctx)
	params := make([]river.InsertManyParams, c.Concurrency)
	for i := range params {
		params[i] = river.InsertManyParams{Args: MigrateArgs{Slot: i}}
	}
	if _, err := client.InsertMany(ctx, params); err != nil {
		return fmt.Errorf("legacy service: start slots: %w", err)
	}
	return nil
}

type migrateWorker struct {
	river.WorkerDefaults[MigrateArgs]
	s *Service
}

// Timeout: none; a slot runs as long as there is work (pass 1 of a large
// repository takes hours), and stops at shutdown through its context.
func (w *migrateWorker) Timeout(*river.Job[MigrateArgs]) time.Duration { return -1 }

// Work runs repositories one after the other. It rereads the controls
// before each: a slot stops when paused, when there is no work, or when
// the concurrency was lowered below its number.
func (w *migrateWorker) Work(ctx context.Context, job *river.Job[MigrateArgs]) error {
	for {
		c, err := w.s.controls(ctx)
		if err != nil || c.Paused || job.Args.Slot >= c.Concurrency {
			return err
		}
		found, err := w.s.step(ctx, c)
		if err != nil || !found {
			return err
		}
		if err := w.pause(ctx); err != nil {
			return err
		}
	}
}

// pause waits the controls' cadence, read now so a change applies to the
// next pause.
func (w *migrateWorker) pause(ctx context.Context) error {
	c, err := w.s.controls(ctx)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(c.Cadence):
		return nil
	}
}
