package legacy

import (
	"context"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Durations are the min / median / max of one pass's durations over
// the repositories that finished it (zero when none did).
type Durations struct {
	Count            int
	Min, Median, Max time.Duration
}

// Progress is the migration's progress (GraphQL and metrics).
type Progress struct {
	// ByStatus counts the inventory rows of each status (every status
	// present, zero included).
	ByStatus map[enum.LegacyStatus]int
	Total    int
	// PreImport and Final are the durations of the finished passes.
	PreImport Durations
	Final     Durations
	// OverTimeLimit counts repositories whose last final pass ran over the
	// time limit and that are not migrated since.
	OverTimeLimit int
	// MigratedLastHour and MigratedLastDay are the migration rate.
	MigratedLastHour int
	MigratedLastDay  int
}

// PercentDone is migrated / (total - skipped), in percent.
func (p *Progress) PercentDone() float64 {
	denom := p.Total - p.ByStatus[enum.LegacySkipped]
	if denom <= 0 {
		return 0
	}
	return 100 * float64(p.ByStatus[enum.LegacyMigrated]) / float64(denom)
}

// MigrationProgress reads the progress in one round trip.
func (s *Store) MigrationProgress(ctx context.Context) (*Progress, error) {
	p := &Progress{ByStatus: map[enum.LegacyStatus]int{}}
	for _, st := range enum.LegacyStatusValues() {
		p.ByStatus[st] = 0
	}
	var (
		counts                       []int64
		statuses                     []int16
		preN, finN                   int
		preMin, preMed, preMax       *float64
		finMin, finMed, finMax       *float64
		over, lastHour, lastDay, tot int
	)
	err := s.pool.QueryRow(ctx, `
WITH s AS (SELECT status, count(*) AS n FROM legacy_repositories GROUP BY status),
pre AS (SELECT extract(epoch FROM pre_import_finished_at - pre_import_started_at)::float8 AS d
        FROM legacy_repositories WHERE pre_import_finished_at IS NOT NULL AND pre_import_started_at IS NOT NULL),
fin AS (SELECT extract(epoch FROM import_finished_at - import_started_at)::float8 AS d
        FROM legacy_repositories WHERE import_finished_at IS NOT NULL AND import_started_at IS NOT NULL)
SELECT (SELECT COALESCE(array_agg(status ORDER BY status), '{}') FROM s),
       (SELECT COALESCE(array_agg(n ORDER BY status), '{}') FROM s),
       (SELECT count(*) FROM pre), (SELECT min(d) FROM pre),
       (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY d) FROM pre), (SELECT max(d) FROM pre),
       (SELECT count(*) FROM fin), (SELECT min(d) FROM fin),
       (SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY d) FROM fin), (SELECT max(d) FROM fin),
       (SELECT count(*) FROM legacy_repositories WHERE time_limit_exceeded_at IS NOT NULL AND status <> 4),
       (SELECT count(*) FROM legacy_repositories WHERE status = 4 AND import_finished_at > now() - interval '1 hour'),
       (SELECT count(*) FROM legacy_repositories WHERE status = 4 AND import_finished_at > now() - interval '1 day'),
       (SELECT count(*) FROM legacy_repositories)`).Scan(
		&statuses, &counts, &preN, &preMin, &preMed, &preMax, &finN, &finMin, &finMed, &finMax,
		&over, &lastHour, &lastDay, &tot)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: legacy migration progress: %w", err))
	}
	for i, st := range statuses {
		p.ByStatus[enum.LegacyStatus(st)] = int(counts[i])
	}
	p.Total, p.OverTimeLimit, p.MigratedLastHour, p.MigratedLastDay = tot, over, lastHour, lastDay
	p.PreImport = Durations{Count: preN, Min: secs(preMin), Median: secs(preMed), Max: secs(preMax)}
	p.Final = Durations{Count: finN, Min: secs(finMin), Median: secs(finMed), Max: secs(finMax)}
	return p, nil
}

func secs(f *float64) time.Duration {
	if f == nil {
		return 0
	}
	return time.Duration(*f * float64(time.Second))
}

// Controls is the legacy_migration_controls row.
type Controls struct {
	Paused              bool
	Concurrency         int
	Cadence             time.Duration
	PreImportSkipRecent time.Duration
	FinalTimeLimit      time.Duration
	ChangedBy           *string
	UpdatedAt           time.Time
}

// Controls reads the operator controls of the migration service.
func (s *Store) Controls(ctx context.Context) (*Controls, error) {
	c := &Controls{}
	var cadence, skip, limit float64
	err := s.pool.QueryRow(ctx, `
		SELECT paused, concurrency, extract(epoch FROM cadence)::float8, extract(epoch FROM pre_import_skip_recent)::float8,
		       extract(epoch FROM final_time_limit)::float8, changed_by, updated_at
		FROM legacy_migration_controls WHERE singleton`).Scan(
		&c.Paused, &c.Concurrency, &cadence, &skip, &limit, &c.ChangedBy, &c.UpdatedAt)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: legacy migration controls: %w", err))
	}
	c.Cadence, c.PreImportSkipRecent, c.FinalTimeLimit = secs(&cadence), secs(&skip), secs(&limit)
	return c, nil
}

// ControlsUpdate changes the fields that are not nil.
type ControlsUpdate struct {
	Paused              *bool
	Concurrency         *int
	Cadence             *time.Duration
	PreImportSkipRecent *time.Duration
	FinalTimeLimit      *time.Duration
	ChangedBy           string
}

// SetControls applies an update and returns the new controls. Out of
// range values (concurrency outside 1..64, negative durations, a zero time
// limit) are refused by the table's CHECKs and change nothing.
func (s *Store) SetControls(ctx context.Context, u ControlsUpdate) (*Controls, error) {
	dur := func(d *time.Duration) *float64 {
		if d == nil {
			return nil
		}
		v := d.Seconds()
		return &v
	}
	if u.Concurrency != nil && (*u.Concurrency < 1 || *u.Concurrency > 64) {
		return nil, fmt.Errorf("store: concurrency %d out of range 1..64", *u.Concurrency)
	}
	for name, d := range map[string]*time.Duration{"cadence": u.Cadence, "pre-import skip": u.PreImportSkipRecent} {
		if d != nil && *d < 0 {
			return nil, fmt.Errorf("store: %s %v is negative", name, *d)
		}
	}
	if u.FinalTimeLimit != nil && *u.FinalTimeLimit <= 0 {
		return nil, fmt.Errorf("store: final time limit %v must be positive", *u.FinalTimeLimit)
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE legacy_migration_controls SET
			paused = COALESCE($1, paused),
			concurrency = COALESCE($2, concurrency),
			cadence = COALESCE(make_interval(secs => $3::float8), cadence),
			pre_import_skip_recent = COALESCE(make_interval(secs => $4::float8), pre_import_skip_recent),
			final_time_limit = COALESCE(make_interval(secs => $5::float8), final_time_limit),
			changed_by = NULLIF($6, ''),
			updated_at = now()
		WHERE singleton`, u.Paused, u.Concurrency, dur(u.Cadence), dur(u.PreImportSkipRecent), dur(u.FinalTimeLimit),
		truncate(u.ChangedBy, 255))
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: set legacy migration controls: %w", err))
	}
	return s.Controls(ctx)
}
