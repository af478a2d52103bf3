package legacy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Inventory and state of the migration from a legacy registry:2
// (docs/registry2-migration.md): one legacy_repositories row per legacy
// repository, moved through pending -> pre_importing -> pre_imported -> importing -> migrated
// by the two passes (legacy/importer), failed or skipped otherwise. The
// status importing is the read-only window the proxy enforces.

// Typed errors of the legacy migration state.
var (
	// CodeRepositoryUnknown: no inventory row for that path or id.
	CodeRepositoryUnknown = store.Code{Name: "LEGACY_REPOSITORY_UNKNOWN", Kind: store.KindNotFound}
	// CodeState: the row's status does not allow the transition.
	CodeState = store.Code{Name: "LEGACY_STATE", Kind: store.KindConflict}
	// CodePreImportedRecently: pass 1 finished less than
	// pre_import_skip_recent ago; it is not run again.
	CodePreImportedRecently = store.Code{Name: "LEGACY_PRE_IMPORTED_RECENTLY", Kind: store.KindConflict}
	// CodeTargetTaken: another legacy path already maps to the same
	// (namespace, repository, image).
	CodeTargetTaken = store.Code{Name: "LEGACY_TARGET_TAKEN", Kind: store.KindAlreadyExists}
	// CodeNoWork: nothing to claim.
	CodeNoWork = store.Code{Name: "LEGACY_NO_WORK", Kind: store.KindNotFound}
)

// Pass is one of the two import passes.
type Pass int

const (
	// PassPre is pass 1: manifests and blobs, no tags, no read-only.
	PassPre Pass = 1
	// PassFinal is pass 2: the rest and every tag, read-only window.
	PassFinal Pass = 2
)

func (p Pass) String() string {
	switch p {
	case PassPre:
		return "pre"
	case PassFinal:
		return "final"
	}
	return fmt.Sprintf("Pass(%d)", int(p))
}

// PreImportLease is how long a claimed pass 1 may run before another
// worker may claim the repository again (its worker is presumed dead).
const PreImportLease = time.Hour

// Repository is a legacy_repositories row.
type Repository struct {
	ID             uuid.UUID
	LegacyPath     string
	NamespaceID    uuid.UUID
	RepositoryID   *uuid.UUID
	RepositoryName string
	ImageName      string
	TagCount       int
	Priority       int
	Status         enum.LegacyStatus

	PreImportStartedAt  *time.Time
	PreImportFinishedAt *time.Time
	ImportStartedAt     *time.Time
	ImportFinishedAt    *time.Time
	LeaseExpiresAt      *time.Time
	TimeLimitExceededAt *time.Time
	Attempts            int
	LastError           *string
	CreatedAt           time.Time
	UpdatedAt           time.Time
}

const legacyColumns = `id, legacy_path, namespace_id, repository_id, repository_name, image_name, tag_count,
	priority, status, pre_import_started_at, pre_import_finished_at, import_started_at, import_finished_at,
	lease_expires_at, time_limit_exceeded_at, attempts, last_error, created_at, updated_at`

func scanLegacy(row pgx.Row) (*Repository, error) {
	r := &Repository{}
	var status int16
	err := row.Scan(&r.ID, &r.LegacyPath, &r.NamespaceID, &r.RepositoryID, &r.RepositoryName, &r.ImageName,
		&r.TagCount, &r.Priority, &status, &r.PreImportStartedAt, &r.PreImportFinishedAt, &r.ImportStartedAt,
		&r.ImportFinishedAt, &r.LeaseExpiresAt, &r.TimeLimitExceededAt, &r.Attempts, &r.LastError,
		&r.CreatedAt, &r.UpdatedAt)
	if err != nil {
		return nil, err
	}
	r.Status = enum.LegacyStatus(status)
	return r, nil
}

func collectLegacy(rows pgx.Rows) ([]*Repository, error) {
	defer rows.Close()
	var out []*Repository
	for rows.Next() {
		r, err := scanLegacy(rows)
		if err != nil {
			return nil, fmt.Errorf("store: scan legacy repository: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// InventoryEntry is what the inventory records for one legacy
// repository.
type InventoryEntry struct {
	LegacyPath     string
	NamespaceID    uuid.UUID
	RepositoryName string
	ImageName      string
	TagCount       int
	// Skip records the row as skipped with this reason (e.g. a blob-only
	// repository, which has nothing to migrate); "" records it pending.
	Skip string
}

// UpsertRepository records a legacy repository found by the
// inventory. A new row starts pending (or skipped with Skip as its
// last_error). An existing row gets the new tag count; its target and
// status change only while it is still pending or skipped (a repository
// already in a pass keeps the target the pass works on).
func (s *Store) UpsertRepository(ctx context.Context, e InventoryEntry) (*Repository, error) {
	id := db.NewID()
	status, lastErr := enum.LegacyPending, (*string)(nil)
	if e.Skip != "" {
		status, lastErr = enum.LegacySkipped, &e.Skip
	}
	row := s.pool.QueryRow(ctx, `
		INSERT INTO legacy_repositories AS l (id, legacy_path, namespace_id, repository_name, image_name, tag_count, status, last_error)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (legacy_path) DO UPDATE SET
			tag_count = EXCLUDED.tag_count,
			namespace_id = CASE WHEN l.status IN (0, 6) THEN EXCLUDED.namespace_id ELSE l.namespace_id END,
			repository_name = CASE WHEN l.status IN (0, 6) THEN EXCLUDED.repository_name ELSE l.repository_name END,
			image_name = CASE WHEN l.status IN (0, 6) THEN EXCLUDED.image_name ELSE l.image_name END,
			status = CASE WHEN l.status IN (0, 6) THEN EXCLUDED.status ELSE l.status END,
			last_error = CASE WHEN l.status IN (0, 6) THEN EXCLUDED.last_error ELSE l.last_error END,
			updated_at = now()
		RETURNING `+legacyColumns,
		id, e.LegacyPath, e.NamespaceID, e.RepositoryName, e.ImageName, e.TagCount, int16(status), lastErr)
	r, err := scanLegacy(row)
	if code, constraint := db.PgCode(err); code == pgerrcode.UniqueViolation && constraint == "legacy_repositories_target_key" {
		return nil, errs.New(CodeTargetTaken, "another legacy repository already maps to that target: %s -> %s/%s", e.LegacyPath, e.RepositoryName, e.ImageName)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: upsert legacy repository %s: %w", e.LegacyPath, err))
	}
	return r, nil
}

// RepositoryByPath returns the inventory row of a legacy path.
func (s *Store) RepositoryByPath(ctx context.Context, path string) (*Repository, error) {
	return s.legacyOne(ctx, `legacy_path = $1`, path)
}

// RepositoryByTarget returns the inventory row feeding a target
// (namespace id, repository name, image name): what the proxy asks to
// decide between local, legacy and read-only (status importing).
// CodeRepositoryUnknown when no legacy repository maps there.
func (s *Store) RepositoryByTarget(ctx context.Context, namespaceID uuid.UUID, repository, image string) (*Repository, error) {
	r, err := scanLegacy(s.pool.QueryRow(ctx, `SELECT `+legacyColumns+` FROM legacy_repositories
		WHERE namespace_id = $1 AND repository_name = $2 AND image_name = $3`, namespaceID, repository, image))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeRepositoryUnknown, "legacy repository unknown: %s/%s", repository, image)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: legacy repository of %s/%s: %w", repository, image, err))
	}
	return r, nil
}

// RepositoryByID returns the inventory row of an id.
func (s *Store) RepositoryByID(ctx context.Context, id uuid.UUID) (*Repository, error) {
	return s.legacyOne(ctx, `id = $1`, id)
}

func (s *Store) legacyOne(ctx context.Context, where string, arg any) (*Repository, error) {
	r, err := scanLegacy(s.pool.QueryRow(ctx, `SELECT `+legacyColumns+` FROM legacy_repositories WHERE `+where, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeRepositoryUnknown, "legacy repository unknown: %v", arg)
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: legacy repository %v: %w", arg, err))
	}
	return r, nil
}

// Filter narrows ListRepositories.
type Filter struct {
	// Statuses keeps rows in any of these (empty: all).
	Statuses []enum.LegacyStatus
	// PathPrefix keeps rows whose legacy path starts with it.
	PathPrefix string
}

// Page is a keyset page: rows after After (a legacy path, "" for the
// first page), at most Limit of them (default 100, at most 1000).
type Page struct {
	After string
	Limit int
}

// ListRepositories lists inventory rows in legacy path order, keyset
// paged by path; more reports whether rows follow the page.
func (s *Store) ListRepositories(ctx context.Context, f Filter, p Page) (rows []*Repository, more bool, err error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	statuses := make([]int16, len(f.Statuses))
	for i, st := range f.Statuses {
		statuses[i] = int16(st)
	}
	q, err := s.pool.Query(ctx, `
		SELECT `+legacyColumns+` FROM legacy_repositories
		WHERE legacy_path > $1
		  AND (cardinality($2::smallint[]) = 0 OR status = ANY($2::smallint[]))
		  AND starts_with(legacy_path, $3)
		ORDER BY legacy_path
		LIMIT $4`, p.After, statuses, f.PathPrefix, limit+1)
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list legacy repositories: %w", err))
	}
	rows, err = collectLegacy(q)
	if err != nil {
		return nil, false, db.MapErr(fmt.Errorf("store: list legacy repositories: %w", err))
	}
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// claimableSQL is, per pass, the statuses a claim may take: the pass's
// entry status, or its running status whose lease expired (dead worker).
func claimableSQL(pass Pass) (string, error) {
	switch pass {
	case PassPre:
		return `(status = 0 OR (status = 1 AND lease_expires_at < now()))`, nil
	case PassFinal:
		return `(status = 2 OR (status = 3 AND lease_expires_at < now()))`, nil
	}
	return "", fmt.Errorf("store: unknown legacy pass %d", pass)
}

// startPassSQL moves a claimed row into the pass's running status.
func startPassSQL(pass Pass) string {
	if pass == PassPre {
		return `status = 1, pre_import_started_at = now(), pre_import_finished_at = NULL,
			lease_expires_at = now() + make_interval(secs => $2::float8), attempts = attempts + 1, updated_at = now()`
	}
	return `status = 3, import_started_at = now(), import_finished_at = NULL,
		lease_expires_at = now() + make_interval(secs => $2::float8), attempts = attempts + 1, updated_at = now()`
}

// ClaimNextRepository claims the highest-priority repository ready
// for the pass (pass 1: pending; pass 2: pre-imported; either: its running
// status with an expired lease) and moves it into the pass's running
// status, under FOR UPDATE SKIP LOCKED so concurrent workers never claim
// the same row. The lease is PreImportLease for pass 1 and the
// controls' final_time_limit for pass 2. CodeNoWork when nothing is
// ready.
func (s *Store) ClaimNextRepository(ctx context.Context, pass Pass) (*Repository, error) {
	lease := PreImportLease
	if pass == PassFinal {
		c, err := s.Controls(ctx)
		if err != nil {
			return nil, err
		}
		lease = c.FinalTimeLimit
	}
	return s.ClaimNextRepositoryWithLease(ctx, pass, lease)
}

// ClaimNextRepositoryWithLease is ClaimNextRepository with an
// explicit lease.
func (s *Store) ClaimNextRepositoryWithLease(ctx context.Context, pass Pass, lease time.Duration) (*Repository, error) {
	cond, err := claimableSQL(pass)
	if err != nil {
		return nil, err
	}
	var r *Repository
	err = s.core.WithTx(ctx, func(tx pgx.Tx) error {
		var id uuid.UUID
		err := tx.QueryRow(ctx, `SELECT id FROM legacy_repositories WHERE `+cond+`
			ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeNoWork, "no legacy repository to claim")
		}
		if err != nil {
			return fmt.Errorf("store: claim legacy repository: %w", err)
		}
		r, err = scanLegacy(tx.QueryRow(ctx, `UPDATE legacy_repositories SET `+startPassSQL(pass)+`
			WHERE id = $1 RETURNING `+legacyColumns, id, lease.Seconds()))
		if err != nil {
			return fmt.Errorf("store: claim legacy repository: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// StartPass moves one repository into the pass's running status, as
// a claim does, for an operator-driven pass (`import pre|final`). Pass 1
// also restarts a failed or pre-imported repository, but not one
// pre-imported less than skipRecent ago (CodePreImportedRecently);
// pass 2 needs pre_imported. CodeState otherwise.
func (s *Store) StartPass(ctx context.Context, id uuid.UUID, pass Pass, lease, skipRecent time.Duration) (*Repository, error) {
	var r *Repository
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		cur, err := scanLegacy(tx.QueryRow(ctx, `SELECT `+legacyColumns+` FROM legacy_repositories WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeRepositoryUnknown, "legacy repository unknown: %s", id)
		}
		if err != nil {
			return fmt.Errorf("store: lock legacy repository: %w", err)
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return fmt.Errorf("store: now: %w", err)
		}
		if err := legacyStartAllowed(cur, pass, skipRecent, now); err != nil {
			return err
		}
		r, err = scanLegacy(tx.QueryRow(ctx, `UPDATE legacy_repositories SET `+startPassSQL(pass)+`
			WHERE id = $1 RETURNING `+legacyColumns, id, lease.Seconds()))
		if err != nil {
			return fmt.Errorf("store: start legacy pass: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func legacyStartAllowed(cur *Repository, pass Pass, skipRecent time.Duration, now time.Time) error {
	leaseOver := cur.LeaseExpiresAt == nil || cur.LeaseExpiresAt.Before(now)
	switch pass {
	case PassPre:
		switch cur.Status {
		case enum.LegacyPending, enum.LegacyFailed:
			return nil
		case enum.LegacyPreImporting:
			if leaseOver {
				return nil
			}
		case enum.LegacyPreImported:
			if cur.PreImportFinishedAt != nil && now.Sub(*cur.PreImportFinishedAt) < skipRecent {
				return errs.New(CodePreImportedRecently, "legacy repository was pre-imported recently: %s at %s", cur.LegacyPath, cur.PreImportFinishedAt.Format(time.RFC3339))
			}
			return nil
		}
	case PassFinal:
		if cur.Status == enum.LegacyPreImported || (cur.Status == enum.LegacyImporting && leaseOver) {
			return nil
		}
	default:
		return fmt.Errorf("store: unknown legacy pass %d", pass)
	}
	return errs.New(CodeState, "legacy repository is not in a state that allows this: %s is %s, cannot start pass %s", cur.LegacyPath, cur.Status, pass)
}

// SetRepositoryTarget records the hosted repository pass 1 created or
// found for the row.
func (s *Store) SetRepositoryTarget(ctx context.Context, id, repositoryID uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `UPDATE legacy_repositories SET repository_id = $2, updated_at = now() WHERE id = $1`, id, repositoryID)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: set legacy repository target: %w", err))
	}
	return nil
}

// FinishPreImport marks pass 1 done (pre_imported) with the tag count
// it saw; lastError keeps the report's summary of skipped items ("" none).
func (s *Store) FinishPreImport(ctx context.Context, id uuid.UUID, tagCount int, lastError string) error {
	return s.legacyTransition(ctx, id, enum.LegacyPreImporting, `status = 2, pre_import_finished_at = now(),
		lease_expires_at = NULL, tag_count = $3, last_error = NULLIF($4, ''), updated_at = now()`, tagCount, truncate(lastError, 4096))
}

// FailPass marks the running pass failed with the error. A final pass
// that failed leaves nothing changed on our side and the repository served
// by the legacy registry.
func (s *Store) FailPass(ctx context.Context, id uuid.UUID, pass Pass, cause error) error {
	from := enum.LegacyPreImporting
	if pass == PassFinal {
		from = enum.LegacyImporting
	}
	return s.legacyTransition(ctx, id, from, `status = 5, lease_expires_at = NULL, last_error = $3, updated_at = now()`,
		truncate(cause.Error(), 4096))
}

// AbortFinal ends a final pass that ran over its time limit: back to
// pre_imported (served by the legacy registry, eligible for another final
// pass), time_limit_exceeded_at set.
func (s *Store) AbortFinal(ctx context.Context, id uuid.UUID, reason string) error {
	return s.legacyTransition(ctx, id, enum.LegacyImporting, `status = 2, lease_expires_at = NULL,
		time_limit_exceeded_at = now(), last_error = $3, updated_at = now()`, truncate(reason, 4096))
}

// legacyTransition applies set to the row while it is in status from;
// CodeState otherwise. set may use $3.. for args.
func (s *Store) legacyTransition(ctx context.Context, id uuid.UUID, from enum.LegacyStatus, set string, args ...any) error {
	tag, err := s.pool.Exec(ctx, `UPDATE legacy_repositories SET `+set+` WHERE id = $1 AND status = $2`,
		append([]any{id, int16(from)}, args...)...)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: legacy transition: %w", err))
	}
	if tag.RowsAffected() == 0 {
		return errs.New(CodeState, "legacy repository is not in a state that allows this: %s is not %s", id, from)
	}
	return nil
}

// SetPriority sets the priority of a repository (higher first).
func (s *Store) SetPriority(ctx context.Context, id uuid.UUID, priority int) (*Repository, error) {
	return s.legacyUpdate(ctx, id, `priority = $2, updated_at = now()`, `true`, priority)
}

// SkipRepository takes a repository out of the migration (skipped,
// with the reason). Refused (CodeState) while a pass runs on it or once
// it is migrated.
func (s *Store) SkipRepository(ctx context.Context, id uuid.UUID, reason string) (*Repository, error) {
	return s.legacyUpdate(ctx, id, `status = 6, last_error = NULLIF($2, ''), lease_expires_at = NULL, updated_at = now()`,
		`status IN (0, 2, 5, 6)`, truncate(reason, 4096))
}

// RetryRepository puts a failed or skipped repository back to
// pending (attempts kept).
func (s *Store) RetryRepository(ctx context.Context, id uuid.UUID) (*Repository, error) {
	return s.legacyUpdate(ctx, id, `status = 0, lease_expires_at = NULL, updated_at = now()`, `status IN (5, 6)`)
}

func (s *Store) legacyUpdate(ctx context.Context, id uuid.UUID, set, allowed string, args ...any) (*Repository, error) {
	var r *Repository
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		var ok bool
		err := tx.QueryRow(ctx, `SELECT `+allowed+` FROM legacy_repositories WHERE id = $1 FOR UPDATE`, id).Scan(&ok)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(CodeRepositoryUnknown, "legacy repository unknown: %s", id)
		}
		if err != nil {
			return fmt.Errorf("store: lock legacy repository: %w", err)
		}
		if !ok {
			return errs.New(CodeState, "legacy repository is not in a state that allows this: %s", id)
		}
		r, err = scanLegacy(tx.QueryRow(ctx, `UPDATE legacy_repositories SET `+set+` WHERE id = $1 RETURNING `+legacyColumns,
			append([]any{id}, args...)...))
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
