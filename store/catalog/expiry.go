package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Trash expiry and purge (docs/schema.md, "Soft delete, trash and purge"):
// a soft-deleted row is eligible at soft_deleted_at + the namespace's
// trash retention. The expiry sweep, emptyTrash and purgeTrash all purge
// through the format packages' purge functions, one kind per transaction
// and at most a batch of rows per transaction, so a crash loses at most
// the batch in flight (rolled back whole) and the next run finishes.

// TrashContainerBlobLink counts purged blob links of container images
// (removed through the OCI blob API). They are not listed in the trash.
const TrashContainerBlobLink TrashKind = "CONTAINER_BLOB_LINK"

// TrashMavenFile counts purged Maven files that were soft-deleted on their
// own (old SNAPSHOT builds a lifecycle policy removed from a live
// version). They are not listed in the trash.
const TrashMavenFile TrashKind = "MAVEN_FILE"

// DefaultPurgeBatch bounds the rows of one kind purged per transaction.
const DefaultPurgeBatch = 500

// Purged is what a purge or an expiry run hard-deleted, by kind, and the
// attachments it released.
type Purged struct {
	Rows     map[TrashKind]int
	Released store.Released
}

func newPurged() *Purged { return &Purged{Rows: map[TrashKind]int{}} }

// Total is the number of rows purged, every kind.
func (p *Purged) Total() int {
	n := 0
	for _, v := range p.Rows {
		n += v
	}
	return n
}

func (p *Purged) add(o *Purged) {
	for k, v := range o.Rows {
		p.Rows[k] += v
	}
	p.Released = p.Released.Add(o.Released)
}

// Gate is asked before every batch; an error stops the run (the expiry
// sweep passes the GC kill switch).
type Gate func(ctx context.Context) error

// expiryOrder is the order kinds are drained in: whole images and
// packages before their rows, indexes before the manifests they list (an
// index is always deleted before its children), repositories last.
var expiryOrder = []TrashKind{
	TrashContainerImage, TrashContainerManifest, TrashContainerBlobLink,
	TrashNpmPackage, TrashNpmVersion, TrashMavenPackage, TrashMavenVersion, TrashMavenFile,
}

// expiredIDs lists up to limit trashed ids of a kind deleted at or before
// cutoff, oldest first.
func (s *Store) expiredIDs(ctx context.Context, kind TrashKind, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	switch kind {
	case TrashContainerImage:
		return s.container.Expired(ctx, s.pool, container.ExpiryImages, nsID, cutoff, limit)
	case TrashContainerManifest:
		return s.container.Expired(ctx, s.pool, container.ExpiryManifests, nsID, cutoff, limit)
	case TrashContainerBlobLink:
		return s.container.Expired(ctx, s.pool, container.ExpiryBlobLinks, nsID, cutoff, limit)
	case TrashNpmPackage:
		return s.npm.ExpiredPackages(ctx, s.pool, nsID, cutoff, limit)
	case TrashNpmVersion:
		return s.npm.ExpiredVersions(ctx, s.pool, nsID, cutoff, limit)
	case TrashMavenPackage:
		return s.maven.ExpiredPackages(ctx, s.pool, nsID, cutoff, limit)
	case TrashMavenVersion:
		return s.maven.ExpiredVersions(ctx, s.pool, nsID, cutoff, limit)
	case TrashMavenFile:
		return s.maven.ExpiredFiles(ctx, s.pool, nsID, cutoff, limit)
	case TrashRepository:
		return s.expiredRepositories(ctx, nsID, cutoff, limit)
	}
	return nil, fmt.Errorf("catalog: no expiry for kind %q", kind)
}

// purgeTx purges trashed rows of one kind by id in tx (deleted at or
// before cutoff when not nil). blocked lists manifests an index outside
// the set still lists.
func (s *Store) purgeTx(ctx context.Context, tx pgx.Tx, kind TrashKind, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) (out *Purged, blocked []uuid.UUID, err error) {
	out = newPurged()
	switch kind {
	case TrashContainerImage:
		purged, rel, err := s.container.PurgeImages(ctx, tx, nsID, ids, true, cutoff)
		if err != nil {
			return nil, nil, err
		}
		out.Rows[kind], out.Released = len(purged), rel
	case TrashContainerManifest:
		r, err := s.container.PurgeManifests(ctx, tx, nsID, ids, cutoff)
		if err != nil {
			return nil, nil, err
		}
		out.Rows[kind], out.Released, blocked = len(r.Purged), r.Released, r.Blocked
	case TrashContainerBlobLink:
		purged, rel, err := s.container.PurgeBlobLinks(ctx, tx, nsID, ids, cutoff)
		if err != nil {
			return nil, nil, err
		}
		out.Rows[kind], out.Released = len(purged), rel
	case TrashNpmPackage, TrashNpmVersion:
		purge := s.npm.PurgeVersions
		if kind == TrashNpmPackage {
			purge = func(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) (*npmPurge, error) {
				return s.npm.PurgePackages(ctx, tx, nsID, ids, true, cutoff)
			}
		}
		r, err := purge(ctx, tx, nsID, ids, cutoff)
		if err != nil {
			return nil, nil, err
		}
		out.Rows[TrashNpmVersion], out.Rows[TrashNpmPackage], out.Released = len(r.Versions), len(r.Packages), r.Released
	case TrashMavenPackage, TrashMavenVersion:
		purge := s.maven.PurgeVersions
		if kind == TrashMavenPackage {
			purge = func(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) (*mavenPurge, error) {
				return s.maven.PurgePackages(ctx, tx, nsID, ids, true, cutoff)
			}
		}
		r, err := purge(ctx, tx, nsID, ids, cutoff)
		if err != nil {
			return nil, nil, err
		}
		out.Rows[TrashMavenVersion], out.Rows[TrashMavenPackage], out.Released = len(r.Versions), len(r.Packages), r.Released
	case TrashMavenFile:
		r, err := s.maven.PurgeFiles(ctx, tx, nsID, ids, cutoff)
		if err != nil {
			return nil, nil, err
		}
		out.Rows[kind], out.Released = len(r.Files), r.Released
	default:
		return nil, nil, fmt.Errorf("catalog: no purge for kind %q", kind)
	}
	return out, blocked, nil
}

// purgeBatch purges one batch of a kind in its own transaction.
func (s *Store) purgeBatch(ctx context.Context, kind TrashKind, nsID uuid.UUID, ids []uuid.UUID, cutoff *time.Time) (*Purged, []uuid.UUID, error) {
	var (
		out     *Purged
		blocked []uuid.UUID
	)
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		var err error
		if out, blocked, err = s.purgeTx(ctx, tx, kind, nsID, ids, cutoff); err != nil {
			return err
		}
		if s.beforeCommit != nil {
			return s.beforeCommit(ctx, kind)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("purge %s rows: %w", kind, err)
	}
	return out, blocked, nil
}

// ExpiryOptions bound one run over a namespace.
type ExpiryOptions struct {
	// Batch: rows of one kind per transaction (DefaultPurgeBatch when 0).
	Batch int
	// Gate is asked before every batch (nil: always go on).
	Gate Gate
}

// PurgeTrashedBefore purges every trashed row of the namespace deleted at
// or before cutoff, kind by kind in expiryOrder and batch by batch, then
// the trashed repositories (with their contents). It stops at the first
// error (the rows of the failed batch are all still there) and reports
// what the committed batches purged.
func (s *Store) PurgeTrashedBefore(ctx context.Context, nsID uuid.UUID, cutoff time.Time, opts ExpiryOptions) (*Purged, error) {
	if opts.Batch <= 0 {
		opts.Batch = DefaultPurgeBatch
	}
	total := newPurged()
	for _, kind := range expiryOrder {
		if err := s.drainKind(ctx, kind, nsID, cutoff, opts, total); err != nil {
			return total, err
		}
	}
	repos, err := s.expiredRepositories(ctx, nsID, cutoff, opts.Batch)
	if err != nil {
		return total, err
	}
	for _, id := range repos {
		p, err := s.purgeRepositoryByID(ctx, nsID, id, &cutoff, opts)
		total.add(p)
		var se *store.Error
		if errors.As(err, &se) && se.Code == store.CodeConflict {
			// Still an upstream of a virtual repository, or an upload
			// in progress: it stays in the trash until that is gone.
			continue
		}
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// drainKind purges batches of one kind until none is left. A batch that
// purges nothing while rows remain (manifests waiting for their index)
// ends the kind: the rows stay for the next run.
func (s *Store) drainKind(ctx context.Context, kind TrashKind, nsID uuid.UUID, cutoff time.Time, opts ExpiryOptions, total *Purged) error {
	for {
		if opts.Gate != nil {
			if err := opts.Gate(ctx); err != nil {
				return err
			}
		}
		ids, err := s.expiredIDs(ctx, kind, nsID, cutoff, opts.Batch)
		if err != nil || len(ids) == 0 {
			return err
		}
		p, _, err := s.purgeBatch(ctx, kind, nsID, ids, &cutoff)
		if err != nil {
			return err
		}
		total.add(p)
		if p.Total() == 0 || len(ids) < opts.Batch {
			return nil
		}
	}
}

type (
	npmPurge   = npmstore.Purge
	mavenPurge = maven.Purge
)

// ErrGateClosed wraps a Gate's refusal: the run stopped before a batch.
var ErrGateClosed = errors.New("catalog: expiry stopped by its gate")

// ExpireAll is one expiry run over every namespace that is not purged:
// each namespace's trash rows deleted more than its retention before now
// are purged (PurgeTrashedBefore). A namespace that fails is logged by the
// caller through the returned error (the first one) and the run goes on
// with the next; a closed gate stops the run at once.
func (s *Store) ExpireAll(ctx context.Context, now time.Time, opts ExpiryOptions) (*Purged, error) {
	total := newPurged()
	var (
		after    uuid.UUID
		firstErr error
	)
	gate := opts.Gate
	if gate != nil {
		opts.Gate = func(ctx context.Context) error {
			if err := gate(ctx); err != nil {
				return fmt.Errorf("%w: %w", ErrGateClosed, err)
			}
			return nil
		}
	}
	for {
		page, err := s.retentionPage(ctx, after, 500)
		if err != nil {
			return total, err
		}
		for _, ns := range page {
			cutoff := now.Add(-time.Duration(ns.days) * 24 * time.Hour)
			p, err := s.PurgeTrashedBefore(ctx, ns.id, cutoff, opts)
			total.add(p)
			if errors.Is(err, ErrGateClosed) || ctx.Err() != nil {
				return total, err
			}
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("namespace %s: %w", ns.id, err)
			}
		}
		if len(page) < 500 {
			return total, firstErr
		}
		after = page[len(page)-1].id
	}
}

type nsRetention struct {
	id   uuid.UUID
	days int
}

// retentionPage lists unpurged namespaces by id after a key, with their
// retention (namespaces is small and unpartitioned).
func (s *Store) retentionPage(ctx context.Context, after uuid.UUID, limit int) ([]nsRetention, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, trash_retention_days FROM namespaces
		WHERE purged_at IS NULL AND id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("namespaces for expiry: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (nsRetention, error) {
		var n nsRetention
		err := r.Scan(&n.id, &n.days)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("namespaces for expiry: %w", err)
	}
	return out, nil
}
