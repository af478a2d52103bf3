package auth

import (
	"context"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/jobstates"
	"github.com/riverqueue/river"
)

// KindSessionSweep is the River kind of the periodic deletion of ended UI
// sessions. A session that ended is also deleted when it is next
// presented; the sweep removes those nobody presents again.
const KindSessionSweep = "auth:session-sweep"

// SessionSweepInterval is how often the elected leader runs the sweep.
const SessionSweepInterval = 10 * time.Minute

// SessionSweepArgs is auth:session-sweep.
type SessionSweepArgs struct{}

// Kind implements river.JobArgs.
func (SessionSweepArgs) Kind() string { return KindSessionSweep }

// InsertOpts: one sweep in flight at a time.
func (SessionSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: jobstates.InFlight()}}
}

type sessionSweepWorker struct {
	river.WorkerDefaults[SessionSweepArgs]
	a *Authenticator
}

func (w *sessionSweepWorker) Work(ctx context.Context, _ *river.Job[SessionSweepArgs]) error {
	n, err := w.a.SweepSessions(ctx)
	if n > 0 || err != nil {
		w.a.opts.Logger.InfoContext(ctx, "auth: swept ended ui sessions", "deleted", n, "err", err)
	}
	return err
}

// RegisterSessionSweep adds the sweep's worker and returns its periodic
// job (run by River's elected leader, also at start), on the default
// queue.
func (a *Authenticator) RegisterSessionSweep(workers *river.Workers) []*river.PeriodicJob {
	river.AddWorker(workers, &sessionSweepWorker{a: a})
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(SessionSweepInterval),
			func() (river.JobArgs, *river.InsertOpts) { return SessionSweepArgs{}, nil },
			&river.PeriodicJobOpts{ID: KindSessionSweep, RunOnStart: true}),
	}
}
