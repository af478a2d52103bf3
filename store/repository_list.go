package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// RepositoryOrder is a sort of the landing-page list. Each has its index
// over active rows (docs/schema.md "Repositories and collections"): (namespace_id, name) for NAME — and
// (namespace_id, format, name) when filtered by format — and
// (namespace_id, <key> DESC, id DESC) for the others.
type RepositoryOrder string

const (
	OrderByName        RepositoryOrder = "NAME"
	OrderByLastUpdated RepositoryOrder = "LAST_UPDATED"
	OrderBySize        RepositoryOrder = "SIZE"
	OrderByDownloads   RepositoryOrder = "DOWNLOADS"
	OrderByArtifacts   RepositoryOrder = "ARTIFACTS"
)

// sortExpr is the indexed sort expression (it must match the index text).
func (o RepositoryOrder) sortExpr() (string, bool) {
	switch o {
	case OrderByName:
		return "r.name", true
	case OrderByLastUpdated:
		return "COALESCE(r.last_updated_at, r.created_at)", true
	case OrderBySize:
		return "r.size_bytes", true
	case OrderByDownloads:
		return "r.downloads_count", true
	case OrderByArtifacts:
		return "r.artifacts_count", true
	}
	return "", false
}

// RepositoryKey is the keyset position of a repository in one order: the
// sort value (Name, Time or Count, by order) and the id tie-breaker.
type RepositoryKey struct {
	Order RepositoryOrder `json:"o"`
	Desc  bool            `json:"d,omitempty"`
	Name  string          `json:"n,omitempty"`
	Time  time.Time       `json:"t,omitzero"`
	Count int64           `json:"c,omitempty"`
	ID    uuid.UUID       `json:"i"`
}

// KeyOf is the position of r in the order.
func (o RepositoryOrder) KeyOf(r *Repository, desc bool) RepositoryKey {
	k := RepositoryKey{Order: o, Desc: desc, ID: r.ID}
	switch o {
	case OrderByName:
		k.Name = r.Name
	case OrderByLastUpdated:
		k.Time = r.CreatedAt
		if r.LastUpdatedAt != nil {
			k.Time = *r.LastUpdatedAt
		}
	case OrderBySize:
		k.Count = r.SizeBytes
	case OrderByDownloads:
		k.Count = r.DownloadsCount
	case OrderByArtifacts:
		k.Count = r.ArtifactsCount
	}
	return k
}

// RepositoryFilter narrows the list; nil fields do not filter.
type RepositoryFilter struct {
	Format     *enum.Format
	Kind       *enum.Kind
	Visibility *enum.Visibility
	Collection *string // collection name
	// Readable, when set, keeps only the repositories the caller may read
	// (auth.ReadableRepositories of a principal that may not read all).
	Readable *ReadableFilter
}

// ReadableFilter admits a repository whose visibility is listed or whose
// id is listed; the zero value admits none.
type ReadableFilter struct {
	Visibilities []enum.Visibility
	IDs          []uuid.UUID
}

// RepositoryListQuery selects a page of active repositories.
type RepositoryListQuery struct {
	NamespaceID uuid.UUID
	Order       RepositoryOrder
	Desc        bool
	Filter      RepositoryFilter
	After       *RepositoryKey
	Limit       int
}

// where builds the shared WHERE clause (without keyset) and its args;
// $1 is always the namespace id. A collection filter resolves the
// collection id first, so an unknown name is a NOT_FOUND error.
func (s *Store) repositoryWhere(ctx context.Context, q RepositoryListQuery) (string, []any, error) {
	conds := []string{"r.namespace_id = $1", "r.soft_deleted_at IS NULL"}
	args := []any{q.NamespaceID}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	f := q.Filter
	if f.Format != nil {
		add("r.format = $%d", int16(*f.Format))
	}
	if f.Kind != nil {
		add("r.kind = $%d", int16(*f.Kind))
	}
	if f.Visibility != nil {
		add("r.visibility = $%d", int16(*f.Visibility))
	}
	if f.Collection != nil {
		notFound := errs.New(CodeNotFound, "repository collection %q not found", *f.Collection)
		if !db.Lookupable(*f.Collection) {
			return "", nil, notFound
		}
		var collectionID uuid.UUID
		err := s.pool.QueryRow(ctx, `SELECT id FROM repository_collections WHERE namespace_id = $1 AND name = $2`,
			q.NamespaceID, *f.Collection).Scan(&collectionID)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", nil, notFound
		}
		if err != nil {
			return "", nil, fmt.Errorf("find collection %q: %w", *f.Collection, err)
		}
		add(`EXISTS (SELECT 1 FROM repository_collection_repositories rcr
			WHERE rcr.namespace_id = $1 AND rcr.repository_collection_id = $%d AND rcr.repository_id = r.id)`, collectionID)
	}
	if rf := f.Readable; rf != nil {
		vis := make([]int16, len(rf.Visibilities))
		for i, v := range rf.Visibilities {
			vis[i] = int16(v)
		}
		ids := rf.IDs
		if ids == nil {
			ids = []uuid.UUID{}
		}
		args = append(args, vis, ids)
		conds = append(conds, fmt.Sprintf("(r.visibility = ANY($%d) OR r.id = ANY($%d))", len(args)-1, len(args)))
	}
	return strings.Join(conds, " AND "), args, nil
}

// ListRepositories returns one page of active repositories in the order,
// after the key (keyset: ROW(sort, id) beyond ROW($k, $id), never OFFSET),
// and whether more rows follow.
func (s *Store) ListRepositories(ctx context.Context, q RepositoryListQuery) ([]*Repository, bool, error) {
	sql, args, err := s.repositoryListSQL(ctx, q)
	if err != nil {
		return nil, false, err
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list repositories: %w", err)
	}
	out, err := collectRepositories(rows)
	if err != nil {
		return nil, false, fmt.Errorf("list repositories: %w", err)
	}
	more := len(out) > q.Limit
	if more {
		out = out[:q.Limit]
	}
	return out, more, nil
}

// repositoryListSQL builds the page query (limit+1 rows).
func (s *Store) repositoryListSQL(ctx context.Context, q RepositoryListQuery) (string, []any, error) {
	expr, ok := q.Order.sortExpr()
	if !ok {
		return "", nil, errs.New(CodeInvalidInput, "unknown repository order %q", q.Order)
	}
	if q.Limit < 1 {
		return "", nil, errs.New(CodeInvalidInput, "page size must be positive")
	}
	where, args, err := s.repositoryWhere(ctx, q)
	if err != nil {
		return "", nil, err
	}
	cmp, dir := ">", "ASC"
	if q.Desc {
		cmp, dir = "<", "DESC"
	}
	if k := q.After; k != nil {
		if k.Order != q.Order || k.Desc != q.Desc {
			return "", nil, errs.New(CodeInvalidInput, "cursor belongs to another order: pass the same orderBy as the page it came from")
		}
		var v any
		switch q.Order {
		case OrderByName:
			v = k.Name
		case OrderByLastUpdated:
			v = k.Time
		default:
			v = k.Count
		}
		if q.Order == OrderByName {
			// Names are unique in the namespace: the name alone is a
			// deterministic keyset on the (namespace_id[, format], name) index.
			args = append(args, v)
			where += fmt.Sprintf(" AND r.name %s $%d", cmp, len(args))
		} else {
			args = append(args, v, k.ID)
			where += fmt.Sprintf(" AND ROW(%s, r.id) %s ROW($%d, $%d)", expr, cmp, len(args)-1, len(args))
		}
	}
	order := expr + " " + dir
	if q.Order != OrderByName {
		order += ", r.id " + dir
	}
	args = append(args, q.Limit+1)
	return `SELECT ` + repositoryColumns + ` FROM repositories r WHERE ` + where +
		` ORDER BY ` + order + fmt.Sprintf(` LIMIT $%d`, len(args)), args, nil
}

// CountRepositories counts the active repositories matching the filter.
func (s *Store) CountRepositories(ctx context.Context, q RepositoryListQuery) (int, error) {
	where, args, err := s.repositoryWhere(ctx, q)
	if err != nil {
		return 0, err
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM repositories r WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count repositories: %w", err)
	}
	return n, nil
}
