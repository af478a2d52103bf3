// Package keyrotation rotates the keys that protect upstream credentials
// (store/credentials, docs/security/upstream-credentials.md) as River jobs:
//
//   - credentials:rewrap-namespace moves every credential row of a
//     namespace still wrapped under a superseded namespace key to the
//     active one. RotateNamespace makes the new key active and enqueues the
//     job in the same transaction.
//   - credentials:rewrap-root rewraps every live namespace key still under
//     an older root key with the current one. RotateRoot enqueues it; it
//     runs only on an instance whose current root key is the one the job
//     names (another is retried later), which also holds the older keys.
//
// Both work in batches, one transaction each, so an interrupted job
// resumes where it stopped; both are idempotent.
//
// Wiring (cmd/artifact-registry/serve.go):
//
//	r := keyrotation.New(keyring, keyrotation.Config{Logger: log})
//	r.Register(workers)
//
// The operator commands (`artifact-registry admin namespace-key rotate`,
// `admin root-key rotate`) call RotateNamespace and RotateRoot.
package keyrotation

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/credentials"
)

// Job kinds.
const (
	KindNamespace = "credentials:rewrap-namespace"
	KindRoot      = "credentials:rewrap-root"
)

// Defaults of Config.
const (
	DefaultTimeout = time.Hour
	// MaxAttempts: a root rewrap waiting for an instance with the new key
	// is retried with River's backoff (attempt⁴ seconds) for about 11 hours.
	MaxAttempts = 12
)

// Config configures the workers. Zero values take the defaults.
type Config struct {
	Batch   int           // rows per transaction (credentials.DefaultBatch)
	Timeout time.Duration // time budget of one run; a later attempt resumes
	Logger  *slog.Logger
}

// Rotator runs the rewrap jobs.
type Rotator struct {
	keys *credentials.Keyring
	cfg  Config
}

// New returns the workers over a keyring.
func New(keys *credentials.Keyring, cfg Config) *Rotator {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Rotator{keys: keys, cfg: cfg}
}

// Register adds the workers (River's default queue: the jobs are rare and
// short).
func (r *Rotator) Register(workers *river.Workers) {
	river.AddWorker(workers, &namespaceWorker{r: r})
	river.AddWorker(workers, &rootWorker{r: r})
}

// Inserter enqueues a job in a transaction (*river.Client[pgx.Tx]).
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// NamespaceArgs is credentials:rewrap-namespace. Version is the key version
// the rotation made active, for the record; the job rewraps to whichever
// key is active when it runs.
type NamespaceArgs struct {
	NamespaceID uuid.UUID `json:"namespace_id"`
	Version     int32     `json:"version"`
}

// Kind implements river.JobArgs.
func (NamespaceArgs) Kind() string { return KindNamespace }

// InsertOpts: no uniqueness. River's unique jobs count a running job as a
// duplicate, and a rotation committed while a rewrap runs must get a run
// of its own; two runs of a namespace at once serialize on the row locks.
func (NamespaceArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: river.QueueDefault, MaxAttempts: MaxAttempts}
}

// RootArgs is credentials:rewrap-root: rewrap every live namespace key not
// under the root key To with To.
type RootArgs struct {
	To string `json:"to"`
}

// Kind implements river.JobArgs.
func (RootArgs) Kind() string { return KindRoot }

// InsertOpts: as NamespaceArgs.
func (RootArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: river.QueueDefault, MaxAttempts: MaxAttempts}
}

// RotateNamespace makes a new key of the namespace slug active and, in the
// same transaction, enqueues the rewrap of its credential rows.
func RotateNamespace(ctx context.Context, st *store.Store, keys *credentials.Keyring, jobs Inserter, slug string) (*credentials.KeyVersion, error) {
	ns, err := st.NamespaceBySlug(ctx, slug)
	if err != nil {
		return nil, err
	}
	var v *credentials.KeyVersion
	err = st.WithTx(ctx, func(tx pgx.Tx) error {
		if v, err = keys.RotateNamespaceKey(ctx, tx, ns.ID); err != nil {
			return err
		}
		if _, err := jobs.InsertTx(ctx, tx, NamespaceArgs{NamespaceID: ns.ID, Version: v.Version}, nil); err != nil {
			return fmt.Errorf("enqueue %s: %w", KindNamespace, err)
		}
		return nil
	})
	return v, err
}

// RotateRoot enqueues the rewrap of every live namespace key with the
// keyring's current root key.
func RotateRoot(ctx context.Context, st *store.Store, keys *credentials.Keyring, jobs Inserter) error {
	if !keys.Configured() {
		return fmt.Errorf("no root key is configured: set --root-key-url to the new root key and --previous-root-key-urls to the old ones")
	}
	return st.WithTx(ctx, func(tx pgx.Tx) error {
		if _, err := jobs.InsertTx(ctx, tx, RootArgs{To: keys.RootURI()}, nil); err != nil {
			return fmt.Errorf("enqueue %s: %w", KindRoot, err)
		}
		return nil
	})
}

type namespaceWorker struct {
	river.WorkerDefaults[NamespaceArgs]
	r *Rotator
}

func (w *namespaceWorker) Timeout(*river.Job[NamespaceArgs]) time.Duration { return w.r.cfg.Timeout }

func (w *namespaceWorker) Work(ctx context.Context, job *river.Job[NamespaceArgs]) error {
	res, err := w.r.keys.RewrapNamespace(ctx, job.Args.NamespaceID, w.r.cfg.Batch)
	if err != nil {
		return err
	}
	log := w.r.cfg.Logger.With("namespace_id", job.Args.NamespaceID, "rewrapped", res.Total())
	if res.Active == nil {
		log.Info("credentials: nothing to rewrap: the namespace has no active key (purged)")
		return nil
	}
	keys, err := w.r.keys.NamespaceKeys(ctx, job.Args.NamespaceID)
	if err != nil {
		return err
	}
	still := 0
	for _, k := range keys {
		if !k.Active {
			still += k.Rows
		}
	}
	if still > 0 {
		// Only a row written under an old key after this run passed it
		// could be left: a seal in flight during the rotation finishes
		// before the rotation commits, so this means a concurrent writer
		// the rotation did not wait for.
		return fmt.Errorf("credentials: %d credential rows of namespace %s are still under superseded keys", still, job.Args.NamespaceID)
	}
	log.Info("credentials: namespace key rotated; superseded versions wrap no row", "active_version", res.Active.Version)
	return nil
}

type rootWorker struct {
	river.WorkerDefaults[RootArgs]
	r *Rotator
}

func (w *rootWorker) Timeout(*river.Job[RootArgs]) time.Duration { return w.r.cfg.Timeout }

func (w *rootWorker) Work(ctx context.Context, job *river.Job[RootArgs]) error {
	if cur := w.r.keys.RootURI(); cur != job.Args.To {
		// Mid-deployment: this instance still has the old configuration.
		return fmt.Errorf("credentials: the rotation wraps with root key %s, this instance's is %q: left for an instance configured with it", job.Args.To, cur)
	}
	counts, err := w.r.keys.RootKeys(ctx)
	if err != nil {
		return err
	}
	var unknown []string
	for _, c := range counts {
		switch {
		case c.Current:
		case !c.Known:
			unknown = append(unknown, fmt.Sprintf("%s (%d keys)", c.URI, c.Keys))
		default:
			n, err := w.r.keys.RewrapRoot(ctx, c.URI, w.r.cfg.Batch)
			if err != nil {
				return err
			}
			w.r.cfg.Logger.Info("credentials: namespace keys rewrapped with the current root key", "from", c.URI, "to", job.Args.To, "keys", n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("credentials: namespace keys are wrapped under root keys this instance does not hold: %v; add them to --previous-root-key-urls", unknown)
	}
	w.r.cfg.Logger.Info("credentials: root key rotated: no live namespace key is wrapped under another root key; previous root keys may be retired", "root_key", job.Args.To)
	return nil
}
