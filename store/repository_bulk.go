package store

import (
	"context"
	"fmt"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
)

// CreateRepositoriesBulk creates many hosted repositories of one namespace
// in one transaction with COPY: parent rows, format child rows and
// default-collection links, as CreateRepository does one at a time. For
// imports and large fixtures (benchmarks); every input is validated first
// and a taken name fails the whole batch (ALREADY_EXISTS). It returns the
// new ids in input order.
func (s *Store) CreateRepositoriesBulk(ctx context.Context, namespace string, repos []NewRepository) ([]uuid.UUID, error) {
	type child struct {
		table string
		rows  [][]any
	}
	ids := make([]uuid.UUID, len(repos))
	parents := make([][]any, 0, len(repos))
	children := map[string]*child{}
	for i, in := range repos {
		if err := ValidateRepositoryName("repository", in.Name); err != nil {
			return nil, err
		}
		if in.Description != nil {
			if err := ValidateDescription(*in.Description); err != nil {
				return nil, err
			}
		}
		table, err := hostedChildTable(in.Format, in.Kind)
		if err != nil {
			return nil, err
		}
		id := db.NewID()
		childID := db.NewID()
		ids[i] = id
		parents = append(parents, []any{id, nil, in.Name, in.Description, int16(in.Format), int16(in.Kind), int16(in.Visibility)})
		c := children[table]
		if c == nil {
			c = &child{table: table}
			children[table] = c
		}
		c.rows = append(c.rows, []any{childID, nil, id})
	}
	if !db.Lookupable(namespace) {
		return nil, errs.New(CodeNotFound, "namespace %q not found", namespace)
	}
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		ns, err := namespaceBySlug(ctx, tx, namespace, "FOR KEY SHARE")
		if err != nil {
			return err
		}
		if err := ns.RequireWrites(); err != nil {
			return err
		}
		var collectionID uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT id FROM repository_collections WHERE namespace_id = $1 AND is_default`, ns.ID).
			Scan(&collectionID); err != nil {
			return fmt.Errorf("find default collection: %w", err)
		}
		for _, p := range parents {
			p[1] = ns.ID
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"repositories"},
			[]string{"id", "namespace_id", "name", "description", "format", "kind", "visibility"}, pgx.CopyFromRows(parents)); err != nil {
			if code, _ := db.PgCode(err); code == pgerrcode.UniqueViolation {
				return errs.New(CodeAlreadyExists, "a repository name of the batch already exists in namespace %q", namespace)
			}
			return fmt.Errorf("copy repositories: %w", err)
		}
		for _, c := range children {
			for _, r := range c.rows {
				r[1] = ns.ID
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, []string{"id", "namespace_id", "repository_id"}, pgx.CopyFromRows(c.rows)); err != nil {
				return fmt.Errorf("copy %s: %w", c.table, err)
			}
		}
		links := make([][]any, len(ids))
		for i, id := range ids {
			links[i] = []any{ns.ID, collectionID, id}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"repository_collection_repositories"},
			[]string{"namespace_id", "repository_collection_id", "repository_id"}, pgx.CopyFromRows(links)); err != nil {
			return fmt.Errorf("copy collection links: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
