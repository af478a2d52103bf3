package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
)

// RepositoryCollection is a repository_collections row.
type RepositoryCollection struct {
	ID          uuid.UUID
	NamespaceID uuid.UUID
	Name        string
	IsDefault   bool
	CreatedAt   time.Time
}

const collectionColumns = `rc.id, rc.namespace_id, rc.name, rc.is_default, rc.created_at`

func scanCollection(row pgx.Row) (*RepositoryCollection, error) {
	var c RepositoryCollection
	if err := row.Scan(&c.ID, &c.NamespaceID, &c.Name, &c.IsDefault, &c.CreatedAt); err != nil {
		return nil, err
	}
	return &c, nil
}

// CreateRepositoryCollection creates a (non-default) collection.
func (s *Store) CreateRepositoryCollection(ctx context.Context, namespace, name string) (*RepositoryCollection, error) {
	if err := ValidateRepositoryName("collection", name); err != nil {
		return nil, err
	}
	if !db.Lookupable(namespace) {
		return nil, errs.New(CodeNotFound, "namespace %q not found", namespace)
	}
	id := db.NewID()
	var out *RepositoryCollection
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		ns, err := namespaceBySlug(ctx, tx, namespace, "FOR KEY SHARE")
		if err != nil {
			return err
		}
		if err := ns.RequireWrites(); err != nil {
			return err
		}
		out, err = scanCollection(tx.QueryRow(ctx, `
			INSERT INTO repository_collections AS rc (id, namespace_id, name) VALUES ($1, $2, $3)
			RETURNING `+collectionColumns, id, ns.ID, name))
		if err != nil {
			if code, _ := db.PgCode(err); code == pgerrcode.UniqueViolation {
				return errs.New(CodeAlreadyExists, "repository collection %q already exists in namespace %q", name, namespace)
			}
			return fmt.Errorf("insert collection: %w", err)
		}
		return nil
	})
	return out, err
}

func collectionByName(ctx context.Context, q db.Queryer, nsID uuid.UUID, name string) (*RepositoryCollection, error) {
	c, err := scanCollection(q.QueryRow(ctx, `SELECT `+collectionColumns+` FROM repository_collections rc
		WHERE rc.namespace_id = $1 AND rc.name = $2`, nsID, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeNotFound, "repository collection %q not found", name)
	}
	if err != nil {
		return nil, fmt.Errorf("load collection %q: %w", name, err)
	}
	return c, nil
}

// LinkRepositoryToCollection adds a repository to a collection
// (idempotent).
func (s *Store) LinkRepositoryToCollection(ctx context.Context, ref RepositoryRef, collection string) (*Repository, error) {
	return s.changeCollectionLink(ctx, ref, collection, true)
}

// UnlinkRepositoryFromCollection removes a repository from a collection;
// a repository always keeps at least one collection (docs/schema.md
// "Repositories and collections"), so removing
// the last link is refused.
func (s *Store) UnlinkRepositoryFromCollection(ctx context.Context, ref RepositoryRef, collection string) (*Repository, error) {
	return s.changeCollectionLink(ctx, ref, collection, false)
}

func (s *Store) changeCollectionLink(ctx context.Context, ref RepositoryRef, collection string, link bool) (*Repository, error) {
	if !db.Lookupable(collection) {
		return nil, errs.New(CodeNotFound, "repository collection %q not found", collection)
	}
	var out *Repository
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		// The repository row lock serializes link changes of one
		// repository, so the "last link" check cannot race.
		ns, repo, err := resolveRepository(ctx, tx, ref, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		if err := ns.RequireWrites(); err != nil {
			return err
		}
		c, err := collectionByName(ctx, tx, ns.ID, collection)
		if err != nil {
			return err
		}
		if link {
			_, err = tx.Exec(ctx, `
				INSERT INTO repository_collection_repositories (namespace_id, repository_collection_id, repository_id)
				VALUES ($1, $2, $3)
				ON CONFLICT (namespace_id, repository_collection_id, repository_id) DO NOTHING`, ns.ID, c.ID, repo.ID)
			if err != nil {
				return fmt.Errorf("link repository: %w", err)
			}
		} else {
			var linked, total int
			err = tx.QueryRow(ctx, `
				SELECT count(*) FILTER (WHERE repository_collection_id = $3), count(*)
				FROM repository_collection_repositories
				WHERE namespace_id = $1 AND repository_id = $2`, ns.ID, repo.ID, c.ID).Scan(&linked, &total)
			if err != nil {
				return fmt.Errorf("count repository links: %w", err)
			}
			if linked == 0 {
				return errs.New(CodeNotFound, "repository %s is not in collection %q", ref, collection)
			}
			if total == 1 {
				return errs.New(CodeConflict, "collection %q is the last collection of repository %s: link it elsewhere first", collection, ref)
			}
			if _, err := tx.Exec(ctx, `DELETE FROM repository_collection_repositories
				WHERE namespace_id = $1 AND repository_collection_id = $2 AND repository_id = $3`, ns.ID, c.ID, repo.ID); err != nil {
				return fmt.Errorf("unlink repository: %w", err)
			}
		}
		out = repo
		return nil
	})
	return out, err
}

// CollectionKey is the keyset position of a collection (by name).
type CollectionKey struct {
	Name string `json:"n"`
}

// ListRepositoryCollections pages the collections of a namespace by name.
func (s *Store) ListRepositoryCollections(ctx context.Context, nsID uuid.UUID, after *CollectionKey, limit int) ([]*RepositoryCollection, bool, error) {
	args := []any{nsID, limit + 1}
	where := ""
	if after != nil {
		args = append(args, after.Name)
		where = " AND rc.name > $3"
	}
	rows, err := s.pool.Query(ctx, `SELECT `+collectionColumns+` FROM repository_collections rc
		WHERE rc.namespace_id = $1`+where+` ORDER BY rc.name LIMIT $2`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list collections: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*RepositoryCollection, error) { return scanCollection(r) })
	if err != nil {
		return nil, false, fmt.Errorf("list collections: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// CountRepositoryCollections counts a namespace's collections.
func (s *Store) CountRepositoryCollections(ctx context.Context, nsID uuid.UUID) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM repository_collections WHERE namespace_id = $1`, nsID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count collections: %w", err)
	}
	return n, nil
}

// CollectionsOfRepositories returns, per repository id, the collections
// it belongs to (by name), in one query for all the ids.
func (s *Store) CollectionsOfRepositories(ctx context.Context, nsID uuid.UUID, repoIDs []uuid.UUID) (map[uuid.UUID][]*RepositoryCollection, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT rcr.repository_id, `+collectionColumns+`
		FROM repository_collection_repositories rcr
		JOIN repository_collections rc ON rc.namespace_id = rcr.namespace_id AND rc.id = rcr.repository_collection_id
		WHERE rcr.namespace_id = $1 AND rc.namespace_id = $1 AND rcr.repository_id = ANY($2)
		ORDER BY rc.name`, nsID, repoIDs)
	if err != nil {
		return nil, fmt.Errorf("load repository collections: %w", err)
	}
	defer rows.Close()
	out := make(map[uuid.UUID][]*RepositoryCollection, len(repoIDs))
	for rows.Next() {
		var repoID uuid.UUID
		var c RepositoryCollection
		if err := rows.Scan(&repoID, &c.ID, &c.NamespaceID, &c.Name, &c.IsDefault, &c.CreatedAt); err != nil {
			return nil, fmt.Errorf("load repository collections: %w", err)
		}
		out[repoID] = append(out[repoID], &c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load repository collections: %w", err)
	}
	return out, nil
}
