package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
)

// purgeBlockersSQL names the first reason a trashed repository cannot be
// hard deleted once its artifacts are gone: an upstream reference from a
// virtual repository of any format (NO ACTION; removing it would change
// another repository), upload sessions (their temporary objects are
// purged by gc:staging-sweep, which needs the row), or a lifecycle
// override (NO ACTION). Each probe is an index lookup in the namespace's
// partition.
const purgeBlockersSQL = `
	SELECT CASE
	  WHEN EXISTS (SELECT 1 FROM container_virtual_repository_upstreams u WHERE u.namespace_id = $1 AND u.upstream_repository_id = $2)
	    OR EXISTS (SELECT 1 FROM maven_virtual_repository_upstreams u WHERE u.namespace_id = $1 AND u.upstream_repository_id = $2)
	    OR EXISTS (SELECT 1 FROM npm_virtual_repository_upstreams u WHERE u.namespace_id = $1 AND u.upstream_repository_id = $2)
	    THEN 'it is an upstream of a virtual repository'
	  WHEN EXISTS (SELECT 1 FROM upload_sessions us WHERE us.namespace_id = $1 AND us.repository_id = $2)
	    THEN 'it has upload sessions in progress'
	  WHEN EXISTS (SELECT 1 FROM container_repository_lifecycle_policy_settings p WHERE p.namespace_id = $1 AND p.repository_id = $2)
	    OR EXISTS (SELECT 1 FROM maven_repository_lifecycle_policy_settings p WHERE p.namespace_id = $1 AND p.repository_id = $2)
	    OR EXISTS (SELECT 1 FROM npm_repository_lifecycle_policy_settings p WHERE p.namespace_id = $1 AND p.repository_id = $2)
	    THEN 'it has a lifecycle policy override'
	  ELSE '' END`

// PurgeRepository hard-deletes a repository from the trash with
// everything it holds (docs/schema.md, "Soft delete, trash and purge").
// It is refused while a virtual repository lists it as an upstream, while
// it has upload sessions or a lifecycle override; the check runs first, so
// nothing is purged then. The contents go in batches, one transaction
// each (images or packages, with their rows and attachments, through the
// format packages), each re-checking under the repository lock that the
// repository is still in the trash; a restore between two batches keeps
// what is left. The last transaction deletes the repository row, which
// cascades to its format child row and collection links.
func (s *Store) PurgeRepository(ctx context.Context, ref store.RepositoryRef) (*store.Repository, *Purged, error) {
	var (
		ns   *store.Namespace
		repo *store.Repository
	)
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		var err error
		if ns, repo, err = store.LockRepository(ctx, tx, ref, "FOR UPDATE"); err != nil {
			return err
		}
		if repo.SoftDeletedAt == nil {
			return errs.New(store.CodeConflict, "repository %s is not in the trash: delete it first", ref)
		}
		return s.checkBlockers(ctx, tx, ns.ID, repo.ID)
	})
	if err != nil {
		return nil, nil, err
	}
	p, err := s.purgeRepositoryByID(ctx, ns.ID, repo.ID, nil, ExpiryOptions{Batch: DefaultPurgeBatch})
	if err != nil {
		return nil, p, err
	}
	return repo, p, nil
}

// checkBlockers refuses the purge of a repository for the reasons of
// purgeBlockersSQL.
func (s *Store) checkBlockers(ctx context.Context, tx pgx.Tx, nsID, repoID uuid.UUID) error {
	var reason string
	if err := tx.QueryRow(ctx, purgeBlockersSQL, nsID, repoID).Scan(&reason); err != nil {
		return fmt.Errorf("check repository %s before purge: %w", repoID, err)
	}
	if reason != "" {
		return errs.New(store.CodeConflict, "repository %s cannot be purged: %s", repoID, reason)
	}
	return nil
}

// errNotTrashed ends a repository purge whose repository left the trash.
var errNotTrashed = errs.New(store.CodeConflict, "the repository is no longer in the trash")

// lockTrashedRepository locks a repository row FOR UPDATE (every writer
// of the repository holds at least FOR KEY SHARE, and restore FOR NO KEY
// UPDATE, so both wait for the batch) and checks it is still in the trash,
// deleted at or before cutoff when not nil.
func lockTrashedRepository(ctx context.Context, tx pgx.Tx, nsID, repoID uuid.UUID, cutoff *time.Time) error {
	var deleted *time.Time
	err := tx.QueryRow(ctx, `SELECT soft_deleted_at FROM repositories WHERE namespace_id = $1 AND id = $2 FOR UPDATE`,
		nsID, repoID).Scan(&deleted)
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.New(store.CodeNotFound, "repository %s not found", repoID)
	}
	if err != nil {
		return db.MapErr(fmt.Errorf("lock repository %s: %w", repoID, err))
	}
	if deleted == nil || (cutoff != nil && deleted.After(*cutoff)) {
		return errNotTrashed
	}
	return nil
}

// purgeRepositoryByID empties a trashed repository batch by batch, then
// deletes its row (see PurgeRepository).
func (s *Store) purgeRepositoryByID(ctx context.Context, nsID, repoID uuid.UUID, cutoff *time.Time, opts ExpiryOptions) (*Purged, error) {
	total := newPurged()
	for {
		if opts.Gate != nil {
			if err := opts.Gate(ctx); err != nil {
				return total, err
			}
		}
		var p *Purged
		err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
			if err := lockTrashedRepository(ctx, tx, nsID, repoID, cutoff); err != nil {
				return err
			}
			var err error
			p, err = s.purgeRepositoryContents(ctx, tx, nsID, repoID, opts.Batch)
			if err == nil && s.beforeCommit != nil {
				err = s.beforeCommit(ctx, TrashRepository)
			}
			return err
		})
		if err != nil {
			return total, fmt.Errorf("purge repository %s: %w", repoID, err)
		}
		total.add(p)
		if p.Total() == 0 {
			break
		}
	}
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		if err := lockTrashedRepository(ctx, tx, nsID, repoID, cutoff); err != nil {
			return err
		}
		if err := s.checkBlockers(ctx, tx, nsID, repoID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM repositories WHERE namespace_id = $1 AND id = $2`, nsID, repoID); err != nil {
			if code, _ := db.PgCode(err); code == pgerrcode.ForeignKeyViolation {
				return errs.New(store.CodeConflict, "repository %s cannot be purged: other rows still reference it", repoID)
			}
			return fmt.Errorf("delete repository %s: %w", repoID, err)
		}
		return nil
	})
	if err != nil {
		return total, err
	}
	total.Rows[TrashRepository]++
	return total, nil
}

// purgeRepositoryContents purges some images, npm packages or Maven
// packages of a locked repository (of whichever format it is). An image or
// a package brings all its rows, so a batch takes a fiftieth of the row
// batch of them.
func (s *Store) purgeRepositoryContents(ctx context.Context, tx pgx.Tx, nsID, repoID uuid.UUID, batch int) (*Purged, error) {
	out := newPurged()
	limit := max(1, batch/50)
	images, err := s.container.ImagesOfRepository(ctx, tx, nsID, repoID, limit)
	if err != nil {
		return nil, err
	}
	if len(images) > 0 {
		purged, rel, err := s.container.PurgeImages(ctx, tx, nsID, images, false, nil)
		if err != nil {
			return nil, err
		}
		out.Rows[TrashContainerImage], out.Released = len(purged), rel
		return out, nil
	}
	cached, err := s.container.RemoteImagesOfRepository(ctx, tx, nsID, repoID, limit)
	if err != nil {
		return nil, err
	}
	if len(cached) > 0 {
		evicted, rel, err := s.container.EvictRemoteImages(ctx, tx, nsID, cached)
		if err != nil {
			return nil, err
		}
		out.Rows[TrashContainerImage], out.Released = len(evicted), rel
		return out, nil
	}
	remotePkgs, err := s.npm.RemotePackagesOfRepository(ctx, tx, nsID, repoID, limit)
	if err != nil {
		return nil, err
	}
	if len(remotePkgs) > 0 {
		evicted, rel, err := s.npm.EvictRemotePackages(ctx, tx, nsID, remotePkgs)
		if err != nil {
			return nil, err
		}
		out.Rows[TrashNpmPackage], out.Released = len(evicted), rel
		return out, nil
	}
	pkgs, err := s.npm.PackagesOfRepository(ctx, tx, nsID, repoID, limit)
	if err != nil {
		return nil, err
	}
	if len(pkgs) > 0 {
		r, err := s.npm.PurgePackages(ctx, tx, nsID, pkgs, false, nil)
		if err != nil {
			return nil, err
		}
		out.Rows[TrashNpmPackage], out.Rows[TrashNpmVersion], out.Released = len(r.Packages), len(r.Versions), r.Released
		return out, nil
	}
	pkgs, err = s.maven.PackagesOfRepository(ctx, tx, nsID, repoID, limit)
	if err != nil {
		return nil, err
	}
	if len(pkgs) > 0 {
		r, err := s.maven.PurgePackages(ctx, tx, nsID, pkgs, false, nil)
		if err != nil {
			return nil, err
		}
		out.Rows[TrashMavenPackage], out.Rows[TrashMavenVersion], out.Released = len(r.Packages), len(r.Versions), r.Released
	}
	return out, nil
}

// expiredRepositories lists up to limit trashed repositories deleted at
// or before cutoff, oldest first (the repositories trash index).
func (s *Store) expiredRepositories(ctx context.Context, nsID uuid.UUID, cutoff time.Time, limit int) ([]uuid.UUID, error) {
	ids, err := db.CollectIDs(s.pool.Query(ctx, db.ExpiredSQL("repositories"), nsID, cutoff, limit))
	if err != nil {
		return nil, fmt.Errorf("expired repositories: %w", err)
	}
	return ids, nil
}
