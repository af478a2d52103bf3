package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// jobWaitingAfterSQL: is a job of the kind, inserted after the given one
// (a larger id) and with args containing $3, still waiting to run? The
// states are River's not-yet-running ones; a running job may have read
// its data before the given job's write committed, so it does not count.
// river_job_args_index (GIN) serves the containment.
const jobWaitingAfterSQL = `
SELECT EXISTS (
	SELECT 1 FROM river_job
	WHERE kind = $1 AND id > $2 AND args @> $3::jsonb
	  AND state = ANY($4::river_job_state[]))`

// jobWaitingStates are the River states of a job that has not run yet.
var jobWaitingStates = []string{
	string(rivertype.JobStateAvailable), string(rivertype.JobStateScheduled),
	string(rivertype.JobStateRetryable), string(rivertype.JobStatePending),
}

// JobWaitingAfter reports whether a River job of job's kind, inserted
// after it and with args containing match (marshalled to JSON), has yet
// to run: work that the later job will do anyway can then be skipped.
func (s *Store) JobWaitingAfter(ctx context.Context, job *rivertype.JobRow, match any) (bool, error) {
	m, err := json.Marshal(match)
	if err != nil {
		return false, fmt.Errorf("store: job args: %w", err)
	}
	var waiting bool
	if err := s.pool.QueryRow(ctx, jobWaitingAfterSQL, job.Kind, job.ID, m, jobWaitingStates).Scan(&waiting); err != nil {
		return false, db.MapErr(fmt.Errorf("store: later %s jobs: %w", job.Kind, err))
	}
	return waiting, nil
}

// holdWaitingJobSQL locks a job of the kind with args containing $2 that
// River has not started yet. River's fetch and scheduler lock jobs with
// SKIP LOCKED or wait, so the held job cannot start before the locking
// transaction ends; SKIP LOCKED here means a job being fetched right now
// does not count (it may read the data before the caller's commit).
const holdWaitingJobSQL = `
SELECT id FROM river_job
WHERE kind = $1 AND args @> $2::jsonb
  AND state IN ('available', 'scheduled')
LIMIT 1
FOR UPDATE SKIP LOCKED`

// HoldWaitingJob looks, inside tx, for a River job of kind with args
// containing match (marshalled to JSON) that has not started, and locks it
// until tx ends. When it reports true, that job runs after tx commits and
// sees tx's writes: a writer that would queue the same work can rely on it
// instead of queueing another job, so a burst of writes costs one job.
func HoldWaitingJob(ctx context.Context, tx pgx.Tx, kind string, match any) (bool, error) {
	m, err := json.Marshal(match)
	if err != nil {
		return false, fmt.Errorf("store: job args: %w", err)
	}
	var id int64
	err = tx.QueryRow(ctx, holdWaitingJobSQL, kind, m).Scan(&id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, db.MapErr(fmt.Errorf("store: waiting %s jobs: %w", kind, err))
	}
	return true, nil
}
