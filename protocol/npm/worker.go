package npm

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/store"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// RebuildPackumentArgs is the River job that rebuilds a package's metadata
// files after a write. It is inserted in the write transaction (InsertTx);
// the worker does nothing when the files are fresh already (a reader
// rebuilt them, or an earlier job did), so several jobs for one package
// cost one rebuild.
type RebuildPackumentArgs struct {
	NamespaceID     uuid.UUID `json:"namespace_id"`
	NpmRepositoryID uuid.UUID `json:"npm_repository_id"`
	PackageID       uuid.UUID `json:"package_id"`
	Name            string    `json:"name"`
}

// Kind is the River job kind.
func (RebuildPackumentArgs) Kind() string { return "npm_rebuild_packument" }

// InsertOpts: a few attempts; a rebuild that keeps failing is left to the
// read path.
func (RebuildPackumentArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5}
}

type rebuildWorker struct {
	river.WorkerDefaults[RebuildPackumentArgs]
	h *handler
}

// Timeout bounds one rebuild.
func (w *rebuildWorker) Timeout(*river.Job[RebuildPackumentArgs]) time.Duration {
	return rebuildTimeout
}

// Work rebuilds the package's metadata files, unless a later write's
// rebuild is still waiting to run: that one runs after its write, hence
// after this job's write too, and reads the newer state, so building now
// would only make files the later write has expired already. A burst of
// publishes thus costs one rebuild, not one per version. The outcome is
// recorded on the job ("superseded", "rebuilt", or "fresh" when the files
// needed nothing).
func (w *rebuildWorker) Work(ctx context.Context, job *river.Job[RebuildPackumentArgs]) error {
	if w.h.opts.PublicURL == "" {
		// The files hold absolute tarball URLs, which without a public
		// URL come from each request: only readers can build them.
		return nil
	}
	later, err := w.h.st.JobWaitingAfter(ctx, job.JobRow, rebuildMatch{job.Args.NamespaceID, job.Args.PackageID})
	if err != nil {
		return err
	}
	outcome := "superseded"
	if !later {
		outcome, err = w.h.rebuildInBackground(ctx, job.Args)
	}
	if err == nil {
		err = river.RecordOutput(ctx, rebuildOutput{Outcome: outcome})
	}
	return err
}

// rebuildMatch selects the rebuild jobs of one package (JSON containment
// in river_job.args).
type rebuildMatch struct {
	NamespaceID uuid.UUID `json:"namespace_id"`
	PackageID   uuid.UUID `json:"package_id"`
}

// rebuildOutput is what a rebuild job records (river.RecordOutput).
type rebuildOutput struct {
	Outcome string `json:"outcome"`
}

// rebuildInBackground is the worker's rebuild: unless the files are fresh,
// load, build, store and swap (npmstore.RebuildMetadata). The outcome is
// "rebuilt" or "fresh" (nothing to do: the files were fresh, or the
// package or repository went away).
func (h *handler) rebuildInBackground(ctx context.Context, a RebuildPackumentArgs) (string, error) {
	repo, err := h.npm.RepositoryByID(ctx, a.NamespaceID, a.NpmRepositoryID)
	if store.HasCode(err, npmstore.CodeRepositoryUnknown) {
		return "fresh", nil // the repository went away
	}
	if err != nil {
		return "", err
	}
	pkg := npmstore.PackageRef{NamespaceID: a.NamespaceID, NpmRepositoryID: a.NpmRepositoryID, PackageID: a.PackageID, Name: a.Name}
	res, err := h.rebuild(ctx, nil, repo, pkg, false)
	switch {
	case store.HasCode(err, npmstore.CodePackageUnknown):
		return "fresh", nil // unpublished meanwhile
	case err != nil:
		return "", err
	case res.Rebuilt:
		return "rebuilt", nil
	}
	return "fresh", nil
}

// RegisterWorkers adds the npm packument rebuild worker to a River worker
// set. Pass the Options given to Mount (PublicURL and PackumentTTL matter
// here); Jobs is not used by the worker.
func RegisterWorkers(workers *river.Workers, st *store.Store, opts Options) error {
	if err := river.AddWorkerSafely(workers, &rebuildWorker{h: newHandler(st, opts)}); err != nil {
		return fmt.Errorf("npm: register workers: %w", err)
	}
	return nil
}

// writeHook enqueues the rebuild job inside the write transaction.
func (h *handler) writeHook(*npmstore.Repository) npmstore.WriteHook {
	return WriteHook(h.opts)
}

// WriteHook is the npmstore.WriteHook that queues the background packument
// rebuild (RebuildPackumentArgs, after o.RebuildDelay) inside a write
// transaction. Other writers of npm data (the GraphQL API) pass it to the
// store so their writes queue the rebuild the protocol's writes queue.
// Nil when o.Jobs is nil: the next read rebuilds.
func WriteHook(o Options) npmstore.WriteHook {
	if o.Jobs == nil {
		return nil
	}
	delay := o.RebuildDelay
	if delay == 0 {
		delay = DefaultRebuildDelay
	}
	return func(ctx context.Context, tx pgx.Tx, pkg npmstore.PackageRef) error {
		// A rebuild of this package that has not started yet will read
		// this write: a burst of publishes queues one job, not one each
		// (each cost about as much database time as the publish itself).
		waiting, err := store.HoldWaitingJob(ctx, tx, RebuildPackumentArgs{}.Kind(), rebuildMatch{pkg.NamespaceID, pkg.PackageID})
		if err != nil || waiting {
			return err
		}
		opts := &river.InsertOpts{MaxAttempts: 5}
		if delay > 0 {
			opts.ScheduledAt = time.Now().Add(delay)
		}
		_, err = o.Jobs.InsertTx(ctx, tx, RebuildPackumentArgs{
			NamespaceID: pkg.NamespaceID, NpmRepositoryID: pkg.NpmRepositoryID, PackageID: pkg.PackageID, Name: pkg.Name,
		}, opts)
		return err
	}
}
