package catalog

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// CodeNotInTrash: a purge named an item that exists but is not in the
// trash.
var CodeNotInTrash = store.Code{Name: "NOT_IN_TRASH", Kind: store.KindConflict}

// CodeTrashItemUnknown: a purge named an id that is no trash item of the
// namespace.
var CodeTrashItemUnknown = store.Code{Name: "TRASH_ITEM_UNKNOWN", Kind: store.KindNotFound}

// MaxPurgeIDs bounds the ids of one PurgeTrash call.
const MaxPurgeIDs = 100

// trashItemsSQL finds ids in every table the trash lists (primary key
// lookups, pruned to the namespace's partition).
func trashItemsSQL() string {
	q := ""
	for _, k := range AllTrashKinds {
		if q != "" {
			q += " UNION ALL "
		}
		q += fmt.Sprintf(`SELECT '%s', id, soft_deleted_at FROM %s WHERE namespace_id = $1 AND id = ANY($2::uuid[])`, k, trashTables[k])
	}
	return q
}

// EmptyTrash purges everything in the namespace's trash that was deleted
// before the call, batch by batch (a huge trash is fine: each batch is
// its own transaction, and a failure leaves the remainder for a retry or
// the expiry sweep).
func (s *Store) EmptyTrash(ctx context.Context, nsID uuid.UUID) (*Purged, error) {
	// Soft deletes stamp the database's time or the store's clock (the
	// same in production, apart in tests with a fake clock): the later of
	// the two is after every delete made before the call.
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT greatest(now(), $1::timestamptz)`, s.core.Options().Clock.Now()).Scan(&now); err != nil {
		return nil, fmt.Errorf("empty trash: %w", err)
	}
	return s.PurgeTrashedBefore(ctx, nsID, now, ExpiryOptions{})
}

// PurgeTrash hard-deletes the named trash items now: every id must be an
// item of the namespace's trash (CodeTrashItemUnknown, CodeNotInTrash
// otherwise, and nothing is purged). A manifest listed by an index that
// stays in the trash is refused (CONFLICT): purge the index with it or
// first. Each kind is purged in its own transaction, repositories last
// with their contents (PurgeRepository).
func (s *Store) PurgeTrash(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) (*Purged, error) {
	if len(ids) == 0 {
		return nil, errs.New(store.CodeInvalidInput, "name at least one trash item")
	}
	if len(ids) > MaxPurgeIDs {
		return nil, errs.New(store.CodeInvalidInput, "at most %d trash items per purge, not %d", MaxPurgeIDs, len(ids))
	}
	byKind, err := s.trashItems(ctx, nsID, ids)
	if err != nil {
		return nil, err
	}
	total := newPurged()
	for _, kind := range expiryOrder {
		if len(byKind[kind]) == 0 {
			continue
		}
		p, blocked, err := s.purgeItems(ctx, kind, nsID, byKind[kind])
		if err != nil {
			return total, err
		}
		total.add(p)
		if len(blocked) > 0 {
			return total, errs.New(store.CodeConflict, "manifest %s is listed by an index in the trash: purge that index first or with it", blocked[0])
		}
	}
	for _, id := range byKind[TrashRepository] {
		err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
			if err := lockTrashedRepository(ctx, tx, nsID, id, nil); err != nil {
				return err
			}
			return s.checkBlockers(ctx, tx, nsID, id)
		})
		if err != nil {
			return total, err
		}
		p, err := s.purgeRepositoryByID(ctx, nsID, id, nil, ExpiryOptions{Batch: DefaultPurgeBatch})
		total.add(p)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// purgeItems purges named items of one kind in one transaction; a row
// that left the trash since trashItems read it is refused there.
func (s *Store) purgeItems(ctx context.Context, kind TrashKind, nsID uuid.UUID, ids []uuid.UUID) (*Purged, []uuid.UUID, error) {
	var (
		out     *Purged
		blocked []uuid.UUID
	)
	err := s.core.WithTx(ctx, func(tx pgx.Tx) error {
		var err error
		if out, blocked, err = s.purgeTx(ctx, tx, kind, nsID, ids, nil); err != nil {
			return err
		}
		if len(blocked) > 0 {
			return nil // rolled back below: nothing of the kind is purged
		}
		if out.Rows[kind] == len(ids) {
			return nil
		}
		// Short: some went with an item purged before (a package's
		// version), or left the trash since trashItems read them.
		var restored int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+trashTables[kind]+`
			WHERE namespace_id = $1 AND id = ANY($2::uuid[]) AND soft_deleted_at IS NULL`, nsID, ids).Scan(&restored); err != nil {
			return fmt.Errorf("recheck %s items: %w", kind, err)
		}
		if restored > 0 {
			return errs.New(CodeNotInTrash, "%d of the %s items left the trash meanwhile (restored)", restored, kind)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("purge %s items: %w", kind, err)
	}
	if len(blocked) > 0 {
		return newPurged(), blocked, nil
	}
	return out, nil, nil
}

// trashItems groups the ids by kind, refusing unknown ids and rows that
// are not in the trash.
func (s *Store) trashItems(ctx context.Context, nsID uuid.UUID, ids []uuid.UUID) (map[TrashKind][]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, trashItemsSQL(), nsID, ids)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("trash items: %w", err))
	}
	found := map[uuid.UUID]bool{}
	byKind := map[TrashKind][]uuid.UUID{}
	var (
		kind    string
		id      uuid.UUID
		deleted *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&kind, &id, &deleted}, func() error {
		if deleted == nil {
			return errs.New(CodeNotInTrash, "%s %s is not in the trash", kind, id)
		}
		found[id] = true
		if !slices.Contains(byKind[TrashKind(kind)], id) {
			byKind[TrashKind(kind)] = append(byKind[TrashKind(kind)], id)
		}
		return nil
	})
	if err != nil {
		return nil, db.MapErr(err)
	}
	for _, id := range ids {
		if !found[id] {
			return nil, errs.New(CodeTrashItemUnknown, "no trash item %s in the namespace", id)
		}
	}
	return byKind, nil
}
