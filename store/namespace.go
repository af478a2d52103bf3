package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
)

// Standalone anchors. The schema gives namespaces an external anchor
// (platform, entity_type, entity_id) and a billing anchor, both NOT NULL
// without defaults. A standalone deployment has no external organization,
// so a namespace created through the management API anchors to itself:
// platform 'standalone', entity_type 'namespace', entity_id = the slug, and
// the same triple for billing. Slugs are unique and immutable, so the anchor
// is unique among unpurged rows as the partial index requires.
const (
	StandalonePlatform   = "standalone"
	StandaloneEntityType = "namespace"
)

// NamespaceStatus is the derived status, in priority order (docs/schema.md
// "Status columns and serving").
type NamespaceStatus string

const (
	NamespacePurged    NamespaceStatus = "PURGED"
	NamespaceDeleted   NamespaceStatus = "DELETED"
	NamespaceBlocked   NamespaceStatus = "BLOCKED"
	NamespaceDisabled  NamespaceStatus = "DISABLED"
	NamespaceSuspended NamespaceStatus = "SUSPENDED"
	NamespaceActive    NamespaceStatus = "ACTIVE"
)

// NamespaceCondition is one of the reversible service conditions.
type NamespaceCondition string

const (
	ConditionBlocked   NamespaceCondition = "BLOCKED"
	ConditionDisabled  NamespaceCondition = "DISABLED"
	ConditionSuspended NamespaceCondition = "SUSPENDED"
)

// Namespace is a namespaces row as the management API sees it.
type Namespace struct {
	ID          uuid.UUID
	Slug        string
	CreatedAt   time.Time
	DeletedAt   *time.Time
	PurgedAt    *time.Time
	BlockedAt   *time.Time
	DisabledAt  *time.Time
	SuspendedAt *time.Time
	// TrashRetentionDays: how long soft-deleted rows stay restorable
	// before the expiry sweep purges them (docs/schema.md, "Soft delete,
	// trash and purge").
	TrashRetentionDays int
}

// TrashRetention is the namespace's retention as a duration.
func (n *Namespace) TrashRetention() time.Duration {
	return time.Duration(n.TrashRetentionDays) * 24 * time.Hour
}

// Bounds of a namespace's trash retention, in days (the schema's CHECK).
const (
	DefaultTrashRetentionDays = 7
	MaxTrashRetentionDays     = 3650
)

// Status derives the status: purged, deleted, blocked, disabled,
// suspended, active — the first that holds.
func (n *Namespace) Status() NamespaceStatus {
	switch {
	case n.PurgedAt != nil:
		return NamespacePurged
	case n.DeletedAt != nil:
		return NamespaceDeleted
	case n.BlockedAt != nil:
		return NamespaceBlocked
	case n.DisabledAt != nil:
		return NamespaceDisabled
	case n.SuspendedAt != nil:
		return NamespaceSuspended
	}
	return NamespaceActive
}

// ServesReads is the read-serving predicate: not deleted, purged, blocked
// or disabled (a suspended namespace still serves reads).
func (n *Namespace) ServesReads() bool {
	return n.DeletedAt == nil && n.PurgedAt == nil && n.BlockedAt == nil && n.DisabledAt == nil
}

// ServesWrites is the write-serving predicate: all five columns NULL.
func (n *Namespace) ServesWrites() bool { return n.ServesReads() && n.SuspendedAt == nil }

// RequireWrites refuses changes to a namespace that does not serve writes.
func (n *Namespace) RequireWrites() error {
	if !n.ServesWrites() {
		return errs.New(CodeForbidden, "namespace %q is %s and accepts no changes", n.Slug, n.Status())
	}
	return nil
}

const namespaceColumns = `id, slug, created_at, deleted_at, purged_at, blocked_at, disabled_at, suspended_at, trash_retention_days`

func scanNamespace(row pgx.Row) (*Namespace, error) {
	var n Namespace
	err := row.Scan(&n.ID, &n.Slug, &n.CreatedAt, &n.DeletedAt, &n.PurgedAt, &n.BlockedAt, &n.DisabledAt, &n.SuspendedAt, &n.TrashRetentionDays)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// CreateNamespace creates a namespace and its default repository
// collection in one transaction; the namespace_statistics row comes from
// the AFTER INSERT trigger in the same transaction.
func (s *Store) CreateNamespace(ctx context.Context, slug string) (*Namespace, error) {
	if err := ValidateNamespaceSlug(slug); err != nil {
		return nil, err
	}
	id := db.NewID()
	collectionID := db.NewID()
	var ns *Namespace
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		var err error
		ns, err = scanNamespace(tx.QueryRow(ctx, `
			INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
			VALUES ($1, $2, $3, $4, $2, $3, $2)
			RETURNING `+namespaceColumns,
			id, slug, StandalonePlatform, StandaloneEntityType))
		if err != nil {
			if code, _ := db.PgCode(err); code == pgerrcode.UniqueViolation {
				return errs.New(CodeAlreadyExists, "namespace %q already exists (a purged namespace's slug is never reused)", slug)
			}
			return fmt.Errorf("insert namespace: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO repository_collections (id, namespace_id, name, is_default)
			VALUES ($1, $2, 'default', true)`, collectionID, id); err != nil {
			return fmt.Errorf("insert default collection: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ns, nil
}

// NamespaceBySlug finds a namespace by slug, whatever its status.
func (s *Store) NamespaceBySlug(ctx context.Context, slug string) (*Namespace, error) {
	if !db.Lookupable(slug) {
		return nil, errs.New(CodeNotFound, "namespace %q not found", slug)
	}
	return namespaceBySlug(ctx, s.pool, slug, "")
}

// NamespaceID returns the id of the namespace slug, whatever its status:
// CodeNotFound when there is none. Found ids are cached for the life of
// the store: slugs are immutable (a trigger refuses changes) and a purged
// namespace's slug is never reused, so an entry never goes stale on any
// instance. A namespace's state is not cached: callers read it with their
// target.
func (s *Store) NamespaceID(ctx context.Context, slug string) (uuid.UUID, error) {
	if id, ok := s.namespaceIDs.Load(slug); ok {
		return id.(uuid.UUID), nil
	}
	if !db.Lookupable(slug) {
		return uuid.Nil, errs.New(CodeNotFound, "namespace %q not found", slug)
	}
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT id FROM namespaces WHERE slug = $1`, slug).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, errs.New(CodeNotFound, "namespace %q not found", slug)
	}
	if err != nil {
		return uuid.Nil, db.MapErr(fmt.Errorf("store: namespace %s: %w", slug, err))
	}
	s.namespaceIDs.Store(slug, id)
	return id, nil
}

func namespaceBySlug(ctx context.Context, q db.Queryer, slug, lock string) (*Namespace, error) {
	ns, err := scanNamespace(q.QueryRow(ctx, `SELECT `+namespaceColumns+` FROM namespaces WHERE slug = $1 `+lock, slug))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeNotFound, "namespace %q not found", slug)
	}
	if err != nil {
		return nil, fmt.Errorf("load namespace %q: %w", slug, err)
	}
	return ns, nil
}

// NamespacesByIDs loads namespaces by id (missing ids are left out).
func (s *Store) NamespacesByIDs(ctx context.Context, ids []uuid.UUID) ([]*Namespace, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+namespaceColumns+` FROM namespaces WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("load namespaces: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Namespace, error) { return scanNamespace(r) })
	if err != nil {
		return nil, fmt.Errorf("load namespaces: %w", err)
	}
	return out, nil
}

// NamespaceOrder is a sort of the admin's namespace list. Each has its
// index: namespaces_slug_c_idx (slug in byte order) and
// namespaces_created_at_idx (created_at, id).
type NamespaceOrder string

const (
	NamespacesBySlug      NamespaceOrder = "SLUG"
	NamespacesByCreatedAt NamespaceOrder = "CREATED_AT"
)

// NamespaceKey is the keyset position of a namespace in one order: the
// slug (unique, a key on its own) or the creation time and id.
type NamespaceKey struct {
	Order NamespaceOrder `json:"o,omitempty"`
	Desc  bool           `json:"d,omitempty"`
	Slug  string         `json:"s,omitempty"`
	Time  time.Time      `json:"t,omitzero"`
	ID    uuid.UUID      `json:"i,omitzero"`
}

// KeyOf is the position of ns in the order.
func (o NamespaceOrder) KeyOf(ns *Namespace, desc bool) NamespaceKey {
	if o == NamespacesByCreatedAt {
		return NamespaceKey{Order: o, Desc: desc, Time: ns.CreatedAt, ID: ns.ID}
	}
	return NamespaceKey{Order: NamespacesBySlug, Desc: desc, Slug: ns.Slug}
}

// MaxNamespaceSearch bounds the search text (slugs are at most 63
// characters; older rows up to 255).
const MaxNamespaceSearch = 255

// NamespaceListQuery selects a page of namespaces.
type NamespaceListQuery struct {
	Order NamespaceOrder // "" is NamespacesBySlug
	Desc  bool
	// Search keeps the namespaces whose slug starts with it (slugs are
	// lowercase; callers lowercase it). "" keeps all.
	Search string
	After  *NamespaceKey
	Limit  int
}

// slugC is the slug compared byte by byte: the order of the
// namespaces_slug_c_idx index, whatever the database's default collation,
// so that a prefix is one contiguous range of it.
const slugC = `(slug COLLATE "C")`

// namespaceSearch is the WHERE condition of a slug prefix as a range of
// slugC (no LIKE, so no wildcard in the text needs escaping): every slug
// starting with p sorts at or after p and before p followed by U+FFFF.
func namespaceSearch(search string, args *[]any) string {
	if search == "" {
		return ""
	}
	*args = append(*args, search, search+"\uffff")
	n := len(*args)
	return fmt.Sprintf(`%s >= $%d AND %s < $%d`, slugC, n-1, slugC, n)
}

// ListNamespaces returns one page of namespaces in the order, after the key
// (keyset on the order's index, never OFFSET), and whether more follow.
func (s *Store) ListNamespaces(ctx context.Context, q NamespaceListQuery) ([]*Namespace, bool, error) {
	sql, args, err := namespaceListSQL(q)
	if err != nil {
		return nil, false, err
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list namespaces: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Namespace, error) { return scanNamespace(r) })
	if err != nil {
		return nil, false, fmt.Errorf("list namespaces: %w", err)
	}
	more := len(out) > q.Limit
	if more {
		out = out[:q.Limit]
	}
	return out, more, nil
}

// namespaceListSQL builds the page query (limit+1 rows).
func namespaceListSQL(q NamespaceListQuery) (string, []any, error) {
	if q.Limit < 1 {
		return "", nil, errs.New(CodeInvalidInput, "page size must be positive")
	}
	if q.Order == "" {
		q.Order = NamespacesBySlug
	}
	var args []any
	var conds []string
	if c := namespaceSearch(q.Search, &args); c != "" {
		conds = append(conds, c)
	}
	cmp, dir := ">", "ASC"
	if q.Desc {
		cmp, dir = "<", "DESC"
	}
	var order string
	switch q.Order {
	case NamespacesBySlug:
		order = slugC + " " + dir
	case NamespacesByCreatedAt:
		order = "created_at " + dir + ", id " + dir
	default:
		return "", nil, errs.New(CodeInvalidInput, "unknown namespace order %q", q.Order)
	}
	if q.After != nil {
		k := *q.After
		if k.Order == "" {
			k.Order = NamespacesBySlug // cursors from before orders existed
		}
		if k.Order != q.Order || k.Desc != q.Desc {
			return "", nil, errs.New(CodeInvalidInput, "cursor belongs to another order: pass the same orderBy as the page it came from")
		}
		if q.Order == NamespacesBySlug {
			args = append(args, k.Slug)
			conds = append(conds, fmt.Sprintf("%s %s $%d", slugC, cmp, len(args)))
		} else {
			args = append(args, k.Time, k.ID)
			conds = append(conds, fmt.Sprintf("ROW(created_at, id) %s ROW($%d, $%d)", cmp, len(args)-1, len(args)))
		}
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	args = append(args, q.Limit+1)
	return `SELECT ` + namespaceColumns + ` FROM namespaces` + where +
		` ORDER BY ` + order + fmt.Sprintf(` LIMIT $%d`, len(args)), args, nil
}

// CountNamespaces counts the namespaces whose slug starts with search
// ("" counts every namespace row).
func (s *Store) CountNamespaces(ctx context.Context, search string) (int, error) {
	var args []any
	where := ""
	if c := namespaceSearch(search, &args); c != "" {
		where = " WHERE " + c
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM namespaces`+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count namespaces: %w", err)
	}
	return n, nil
}

// RepositoryCountsOfNamespaces counts the active repositories of each
// namespace: one count per namespace (namespace_id = $1, so each prunes to
// its partition and reads the active-rows index), all sent as one batch.
func (s *Store) RepositoryCountsOfNamespaces(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int, error) {
	out := make(map[uuid.UUID]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	b := &pgx.Batch{}
	for _, id := range ids {
		b.Queue(`SELECT count(*) FROM repositories WHERE namespace_id = $1 AND soft_deleted_at IS NULL`, id).
			QueryRow(func(row pgx.Row) error {
				var n int
				if err := row.Scan(&n); err != nil {
					return err
				}
				out[id] = n
				return nil
			})
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("count repositories of namespaces: %w", err)
	}
	return out, nil
}

// SoftDeleteNamespace sets deleted_at (idempotent); a purged namespace is
// refused.
func (s *Store) SoftDeleteNamespace(ctx context.Context, slug string) (*Namespace, error) {
	return s.updateNamespace(ctx, slug, func(ns *Namespace) (string, error) {
		if ns.PurgedAt != nil {
			return "", errs.New(CodeConflict, "namespace %q is purged", slug)
		}
		return `deleted_at = COALESCE(deleted_at, now())`, nil
	})
}

// RestoreNamespace clears deleted_at of a soft-deleted, unpurged namespace.
func (s *Store) RestoreNamespace(ctx context.Context, slug string) (*Namespace, error) {
	return s.updateNamespace(ctx, slug, func(ns *Namespace) (string, error) {
		if ns.PurgedAt != nil {
			return "", errs.New(CodeConflict, "namespace %q is purged and cannot be restored", slug)
		}
		if ns.DeletedAt == nil {
			return "", errs.New(CodeConflict, "namespace %q is not deleted", slug)
		}
		return `deleted_at = NULL`, nil
	})
}

// SetNamespaceCondition imposes (active) or lifts a service condition. The
// timestamp records when the condition was first imposed; imposing it again
// keeps it, lifting clears it. Conditions are independent of each other.
func (s *Store) SetNamespaceCondition(ctx context.Context, slug string, cond NamespaceCondition, active bool) (*Namespace, error) {
	var col string
	switch cond {
	case ConditionBlocked:
		col = "blocked_at"
	case ConditionDisabled:
		col = "disabled_at"
	case ConditionSuspended:
		col = "suspended_at"
	default:
		return nil, errs.New(CodeInvalidInput, "unknown namespace condition %q", cond)
	}
	return s.updateNamespace(ctx, slug, func(ns *Namespace) (string, error) {
		if ns.PurgedAt != nil {
			return "", errs.New(CodeConflict, "namespace %q is purged", slug)
		}
		if active {
			return col + ` = COALESCE(` + col + `, now())`, nil
		}
		return col + ` = NULL`, nil
	})
}

// SetTrashRetention sets how many days soft-deleted rows of the namespace
// stay in the trash (0 to MaxTrashRetentionDays). The expiry sweep reads
// it at every run, so a shorter retention applies to items already in the
// trash.
func (s *Store) SetTrashRetention(ctx context.Context, slug string, days int) (*Namespace, error) {
	if days < 0 || days > MaxTrashRetentionDays {
		return nil, errs.New(CodeInvalidInput, "trash retention must be between 0 and %d days, not %d", MaxTrashRetentionDays, days)
	}
	return s.updateNamespace(ctx, slug, func(ns *Namespace) (string, error) {
		if err := ns.RequireWrites(); err != nil {
			return "", err
		}
		return fmt.Sprintf("trash_retention_days = %d", days), nil
	})
}

// updateNamespace locks the namespace row, lets set decide the SET clause
// (or refuse), and returns the updated row.
func (s *Store) updateNamespace(ctx context.Context, slug string, set func(*Namespace) (string, error)) (*Namespace, error) {
	if !db.Lookupable(slug) {
		return nil, errs.New(CodeNotFound, "namespace %q not found", slug)
	}
	var out *Namespace
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		ns, err := namespaceBySlug(ctx, tx, slug, "FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		clause, err := set(ns)
		if err != nil {
			return err
		}
		out, err = scanNamespace(tx.QueryRow(ctx, `UPDATE namespaces SET `+clause+` WHERE id = $1 RETURNING `+namespaceColumns, ns.ID))
		if err != nil {
			return fmt.Errorf("update namespace %q: %w", slug, err)
		}
		return nil
	})
	return out, err
}

// NamespaceStatistics are the buffered namespace counters.
type NamespaceStatistics struct {
	NamespaceID           uuid.UUID
	DeduplicatedSizeBytes int64
	ComponentsCount       int64
	// LastReconciledAt: when counters:reconcile last completed a pass of
	// the namespace; nil while it never has (the 'epoch' default).
	LastReconciledAt *time.Time
}
