// Package store is the one domain store over pgx/v5: every SQL statement of
// the service lives here, together with its object-storage side
// (store/objstore). Protocol handlers and GraphQL resolvers call one store
// operation per request and never touch SQL or object storage themselves.
//
// Transactions are explicit. Foreground transactions (the ones a client
// waits for) run with SET LOCAL lock_timeout (5 s by default); a lock timeout
// or a deadlock surfaces as CodeRetryable, which protocols map to 503 with
// Retry-After.
package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/lazytx"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// Clock tells the time wherever time decides something (review delay,
// upload TTLs and expiry). Tests inject a fake one and never sleep.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Defaults of Options.
const (
	DefaultReviewDelay         = 24 * time.Hour
	DefaultLockTimeout         = 5 * time.Second
	DefaultObjectCheckTimeout  = 2 * time.Second
	DefaultMonolithicUploadTTL = time.Hour
	DefaultResumableUploadTTL  = 24 * time.Hour
	// RetryAfter is what protocols put in Retry-After for CodeRetryable.
	RetryAfter = time.Second
)

// Options configures a Store. Zero values take the defaults above.
type Options struct {
	Clock Clock
	// ReviewDelay is how long a GC candidate waits after the last attachment
	// of its blob went (docs/garbage-collection.md, rule 3).
	ReviewDelay time.Duration
	// LockTimeout is the SET LOCAL lock_timeout of foreground transactions.
	LockTimeout time.Duration
	// ObjectCheckTimeout bounds the storage existence check a dedup skip
	// makes under the blob-row lock when a live GC candidate exists.
	ObjectCheckTimeout time.Duration
	// Upload session TTLs (expires_at = start + TTL) per upload type.
	MonolithicUploadTTL time.Duration
	ResumableUploadTTL  time.Duration
	// MaxBlobSize caps one upload (0: no cap).
	MaxBlobSize int64
	// MaxUploadSessionsPerRepository caps the unexpired upload sessions of
	// one repository, whatever the protocol (0: no cap). Open sessions hold
	// temporary storage until they expire; the cap bounds what one writer
	// can hold that way.
	MaxUploadSessionsPerRepository int
	// RedirectDownloads sends blob downloads to signed URLs of the object
	// store (DownloadURL) instead of through this process; the object
	// store must be able to sign them (objstore.Store.CanSign).
	RedirectDownloads bool
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.ReviewDelay <= 0 {
		o.ReviewDelay = DefaultReviewDelay
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.ObjectCheckTimeout <= 0 {
		o.ObjectCheckTimeout = DefaultObjectCheckTimeout
	}
	if o.MonolithicUploadTTL <= 0 {
		o.MonolithicUploadTTL = DefaultMonolithicUploadTTL
	}
	if o.ResumableUploadTTL <= 0 {
		o.ResumableUploadTTL = DefaultResumableUploadTTL
	}
	return o
}

// Store is the domain store. It is safe for concurrent use; several Store
// instances (replicas) may share one database and one bucket.
type Store struct {
	pool    *pgxpool.Pool
	objects *objstore.Store
	opts    Options
	// lockTimeout is the setting every foreground transaction begins with.
	lockTimeout lazytx.Setting
	// namespaceIDs caches slug -> id of the namespaces found (NamespaceID).
	namespaceIDs sync.Map
}

// New returns a Store over a database pool and an object store.
func New(pool *pgxpool.Pool, objects *objstore.Store, opts Options) *Store {
	opts = opts.withDefaults()
	return &Store{
		pool:        pool,
		objects:     objects,
		opts:        opts,
		lockTimeout: lazytx.Setting{Name: "lock_timeout", Value: fmt.Sprintf("%dms", opts.LockTimeout.Milliseconds())},
	}
}

// Pool returns the database pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Objects returns the object store.
func (s *Store) Objects() *objstore.Store { return s.objects }

// Options returns the effective options.
func (s *Store) Options() Options { return s.opts }

// WithTx runs fn in a foreground read-committed transaction with the lock
// timeout set: committed when fn returns nil, rolled back otherwise,
// including when fn panics (net/http, gqlgen, River and the protocol
// wrappers recover panics: without the deferred rollback the pooled
// connection would go back to work still holding fn's row locks). Lock
// timeouts and deadlocks, from fn or from the commit, come back as
// CodeRetryable. Format code calls Attach and Detach inside fn.
func (s *Store) WithTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.withTx(ctx, fn)
}

// withUnflushedTx is WithTx whose commit does not wait for its WAL to
// reach the disk (synchronous_commit off for this transaction alone), for
// rows a database crash may take back without harm: the commit returns
// sooner and holds its locks for less. A later commit that waits for the
// disk flushes this one's WAL with its own.
func (s *Store) withUnflushedTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.withTx(ctx, fn, lazytx.Setting{Name: "synchronous_commit", Value: "off"})
}

func (s *Store) withTx(ctx context.Context, fn func(tx pgx.Tx) error, settings ...lazytx.Setting) error {
	tx, err := s.begin(ctx, settings...)
	if err != nil {
		return err
	}
	// A no-op after Commit, as in pgx.BeginFunc.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return db.MapErr(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return db.MapErr(fmt.Errorf("store: commit: %w", err))
	}
	return nil
}

// begin opens a foreground transaction: read committed, with the lock
// timeout, the actor of ctx and settings, all sent with its first
// statement (lazytx).
func (s *Store) begin(ctx context.Context, settings ...lazytx.Setting) (pgx.Tx, error) {
	all := append(append([]lazytx.Setting{s.lockTimeout}, actorSetting(ctx)...), settings...)
	tx, err := lazytx.Begin(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, all...)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: begin: %w", err))
	}
	return tx, nil
}
