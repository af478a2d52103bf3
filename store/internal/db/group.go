package db

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// GroupBy runs a query whose first column is a parent id and scan reads
// the rest, grouping rows by parent (the batched reads behind GraphQL's
// data loaders).
func GroupBy[T any](ctx context.Context, q Queryer, what, sql string, args []any, scan func(pgx.Row) (*T, error)) (map[uuid.UUID][]*T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", what, err)
	}
	defer rows.Close()
	out := map[uuid.UUID][]*T{}
	for rows.Next() {
		var parent uuid.UUID
		v, err := scan(&parentRow{rows: rows, parent: &parent})
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", what, err)
		}
		out[parent] = append(out[parent], v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %w", what, err)
	}
	return out, nil
}

// parentRow scans the leading parent-id column of a row, then hands the
// remaining destinations to the entity scanner.
type parentRow struct {
	rows   pgx.Rows
	parent *uuid.UUID
}

func (p *parentRow) Scan(dest ...any) error {
	return p.rows.Scan(append([]any{p.parent}, dest...)...)
}

// CountBy runs a query returning (id, count) rows.
func CountBy(ctx context.Context, q Queryer, what, sql string, args ...any) (map[uuid.UUID]int, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("count %s: %w", what, err)
	}
	defer rows.Close()
	out := map[uuid.UUID]int{}
	for rows.Next() {
		var id uuid.UUID
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("count %s: %w", what, err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count %s: %w", what, err)
	}
	return out, nil
}
