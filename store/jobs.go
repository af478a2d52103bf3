package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/riverqueue/river/rivertype"
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
