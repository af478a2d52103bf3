package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// GCReclaimSwitch is the operator kill switch (docs/garbage-collection.md
// "Operational controls"; the gc_controls
// singleton row): when Enabled is false the garbage collector deletes no
// object. A cleanup reads it before every delete and fails closed.
//
// A missing table or row fails (migrations/00030_gc_controls.sql creates
// both), and so GC deletes nothing.
type GCReclaimSwitch struct {
	Enabled   bool
	ChangedBy *string
	Reason    *string
	UpdatedAt time.Time
}

// ErrGCControlsMissing: the kill-switch row is missing (fail closed).
var ErrGCControlsMissing = errors.New("store: gc kill switch row missing")

// GCReclaimSwitch reads the kill switch. Any error (table or row missing,
// database unreachable) must be taken as "disabled" by the caller.
func (s *Store) GCReclaimSwitch(ctx context.Context) (*GCReclaimSwitch, error) {
	return readGCReclaimSwitch(ctx, s.pool)
}

// GCReclaimSwitchTx reads the kill switch on the connection of tx (the
// cleanup transaction reads it there, so that a busy pool can never make
// the read wait behind the very workers that need it). The read runs in a
// savepoint, sent with it as one simple-protocol query (one round trip,
// nothing prepared beforehand that could fail outside the savepoint): a
// failed read (fail-closed: no delete) leaves tx usable for what the
// cleanup already did.
func (s *Store) GCReclaimSwitchTx(ctx context.Context, tx pgx.Tx) (*GCReclaimSwitch, error) {
	res, err := tx.Conn().PgConn().Exec(ctx,
		"SAVEPOINT gc_kill_switch; "+gcReclaimSwitchSQL+"; RELEASE SAVEPOINT gc_kill_switch").ReadAll()
	if err != nil {
		if _, rerr := tx.Exec(context.WithoutCancel(ctx), `ROLLBACK TO SAVEPOINT gc_kill_switch`); rerr != nil {
			err = errors.Join(err, fmt.Errorf("roll back the read: %w", rerr))
		}
		return nil, fmt.Errorf("store: read gc kill switch: %w", err)
	}
	if len(res) != 3 || len(res[1].Rows) == 0 {
		return nil, ErrGCControlsMissing
	}
	row, fields := res[1].Rows[0], res[1].FieldDescriptions
	var sw GCReclaimSwitch
	dst := []any{&sw.Enabled, &sw.ChangedBy, &sw.Reason, &sw.UpdatedAt}
	if len(row) != len(dst) {
		return nil, fmt.Errorf("store: read gc kill switch: %d columns", len(row))
	}
	m := tx.Conn().TypeMap()
	for i, d := range dst {
		if err := m.Scan(fields[i].DataTypeOID, fields[i].Format, row[i], d); err != nil {
			return nil, fmt.Errorf("store: read gc kill switch: column %s: %w", fields[i].Name, err)
		}
	}
	return &sw, nil
}

const gcReclaimSwitchSQL = `SELECT reclaim_enabled, changed_by, reason, updated_at FROM gc_controls`

func readGCReclaimSwitch(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (*GCReclaimSwitch, error) {
	var sw GCReclaimSwitch
	err := q.QueryRow(ctx, gcReclaimSwitchSQL).Scan(&sw.Enabled, &sw.ChangedBy, &sw.Reason, &sw.UpdatedAt)
	return gcReclaimSwitch(&sw, err)
}

func gcReclaimSwitch(sw *GCReclaimSwitch, err error) (*GCReclaimSwitch, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrGCControlsMissing
	}
	if err != nil {
		return nil, fmt.Errorf("store: read gc kill switch: %w", err)
	}
	return sw, nil
}

// SetGCReclaim turns object deletion by the garbage collector on or off
// (GraphQL setGarbageCollection). by names the operator; reason is free
// text. It takes effect before the next delete of every worker.
func (s *Store) SetGCReclaim(ctx context.Context, enabled bool, by, reason string) (*GCReclaimSwitch, error) {
	if len(by) > 255 {
		by = by[:255]
	}
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	var sw GCReclaimSwitch
	err := s.pool.QueryRow(ctx, `
		UPDATE gc_controls SET reclaim_enabled = $1, changed_by = NULLIF($2, ''), reason = NULLIF($3, ''), updated_at = $4
		RETURNING reclaim_enabled, changed_by, reason, updated_at`,
		enabled, by, reason, s.opts.Clock.Now()).Scan(&sw.Enabled, &sw.ChangedBy, &sw.Reason, &sw.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrGCControlsMissing
	}
	if err != nil {
		return nil, fmt.Errorf("store: set gc kill switch: %w", err)
	}
	return &sw, nil
}
