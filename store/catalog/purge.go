package catalog

import (
	"context"
	"fmt"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
)

// purgeBlockersSQL names the first reason a repository cannot be hard
// deleted: artifacts of any format (the artifact -> format child keys are
// NO ACTION), an upstream reference from a virtual repository of any format
// (NO ACTION), upload sessions, or a lifecycle override (NO ACTION).
// Each probe is an index lookup in the namespace's partition.
const purgeBlockersSQL = `
	SELECT CASE
	  WHEN EXISTS (SELECT 1 FROM container_images a JOIN container_repositories c
	                 ON c.namespace_id = a.namespace_id AND c.id = a.container_repository_id
	               WHERE a.namespace_id = $1 AND c.namespace_id = $1 AND c.repository_id = $2)
	    THEN 'it still holds container images (soft-deleted ones included)'
	  WHEN EXISTS (SELECT 1 FROM maven_packages a JOIN maven_repositories c
	                 ON c.namespace_id = a.namespace_id AND c.id = a.maven_repository_id
	               WHERE a.namespace_id = $1 AND c.namespace_id = $1 AND c.repository_id = $2)
	    THEN 'it still holds Maven packages (soft-deleted ones included)'
	  WHEN EXISTS (SELECT 1 FROM npm_packages a JOIN npm_repositories c
	                 ON c.namespace_id = a.namespace_id AND c.id = a.npm_repository_id
	               WHERE a.namespace_id = $1 AND c.namespace_id = $1 AND c.repository_id = $2)
	    THEN 'it still holds npm packages (soft-deleted ones included)'
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

// PurgeRepository hard-deletes a repository from the trash (here because
// what keeps a repository alive is the rows of every format): one DELETE of
// the parent row cascades to the format child row and collection links.
// It is refused while the repository holds artifacts (soft-deleted ones
// included), upload sessions or a lifecycle override, or while a virtual
// repository lists it as an upstream; the checks run first so the caller
// gets a clear reason, and the NO ACTION foreign keys stay the backstop.
func (s *Store) PurgeRepository(ctx context.Context, ref store.RepositoryRef) (*store.Repository, error) {
	var out *store.Repository
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		ns, repo, err := store.LockRepository(ctx, tx, ref, "FOR UPDATE")
		if err != nil {
			return err
		}
		if repo.SoftDeletedAt == nil {
			return errs.New(store.CodeConflict, "repository %s is not in the trash: delete it first", ref)
		}
		var reason string
		err = tx.QueryRow(ctx, purgeBlockersSQL, ns.ID, repo.ID).Scan(&reason)
		if err != nil {
			return fmt.Errorf("check repository %s before purge: %w", ref, err)
		}
		if reason != "" {
			return errs.New(store.CodeConflict, "repository %s cannot be purged: %s", ref, reason)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM repositories WHERE namespace_id = $1 AND id = $2`, ns.ID, repo.ID); err != nil {
			if code, _ := db.PgCode(err); code == pgerrcode.ForeignKeyViolation {
				return errs.New(store.CodeConflict, "repository %s cannot be purged: other rows still reference it", ref)
			}
			return fmt.Errorf("delete repository %s: %w", ref, err)
		}
		out = repo
		return nil
	})
	return out, err
}
