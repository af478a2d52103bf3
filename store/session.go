package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Web UI sessions (migrations/00040_ui_sessions.sql). As with access
// tokens, the store never sees a secret: package auth mints the session
// secret and passes its SHA-256, and decides what a row is worth (expiry,
// the admin binding, the access token behind it).

// CodeUISessionNotFound: no session with that hash.
var CodeUISessionNotFound = Code{Name: "U_I_SESSION_NOT_FOUND", Kind: KindNotFound}

// UISession is a ui_sessions row. Exactly one of AdminBinding and
// AccessTokenID is set.
type UISession struct {
	AdminBinding           []byte
	AccessTokenNamespaceID uuid.UUID
	AccessTokenID          uuid.UUID
	CreatedAt              time.Time
	LastSeenAt             time.Time
	ExpiresAt              time.Time
}

// IsAdmin reports whether the session stands for the admin token.
func (s *UISession) IsAdmin() bool { return s.AdminBinding != nil }

// CreateUISession inserts a session under the hash of its secret.
func (s *Store) CreateUISession(ctx context.Context, sha [32]byte, in UISession) error {
	if (in.AdminBinding == nil) == (in.AccessTokenID == uuid.Nil) {
		return fmt.Errorf("store: create ui session: exactly one of the admin binding and the access token is needed")
	}
	var nsID, tokID *uuid.UUID
	if in.AccessTokenID != uuid.Nil {
		nsID, tokID = &in.AccessTokenNamespaceID, &in.AccessTokenID
	}
	_, err := s.pool.Exec(ctx, `
INSERT INTO ui_sessions (session_sha256, admin_binding, access_token_namespace_id, access_token_id,
                         created_at, last_seen_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $5, $6)`,
		sha[:], in.AdminBinding, nsID, tokID, in.CreatedAt, in.ExpiresAt)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: create ui session: %w", err))
	}
	return nil
}

// UISessionByHash loads a session (expired ones included: auth decides).
func (s *Store) UISessionByHash(ctx context.Context, sha [32]byte) (*UISession, error) {
	var (
		out         UISession
		nsID, tokID *uuid.UUID
	)
	err := s.pool.QueryRow(ctx, `
SELECT admin_binding, access_token_namespace_id, access_token_id, created_at, last_seen_at, expires_at
FROM ui_sessions WHERE session_sha256 = $1`, sha[:]).
		Scan(&out.AdminBinding, &nsID, &tokID, &out.CreatedAt, &out.LastSeenAt, &out.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeUISessionNotFound, "ui session not found")
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: load ui session: %w", err))
	}
	if tokID != nil {
		out.AccessTokenNamespaceID, out.AccessTokenID = *nsID, *tokID
	}
	return &out, nil
}

// TouchUISession moves last_seen_at forward to now (never back, so
// instances may touch in any order).
func (s *Store) TouchUISession(ctx context.Context, sha [32]byte, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE ui_sessions SET last_seen_at = $2 WHERE session_sha256 = $1 AND last_seen_at < $2`, sha[:], now)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: touch ui session: %w", err))
	}
	return nil
}

// DeleteUISession deletes a session; deleting a missing one is no error
// (sign-out is idempotent).
func (s *Store) DeleteUISession(ctx context.Context, sha [32]byte) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM ui_sessions WHERE session_sha256 = $1`, sha[:]); err != nil {
		return db.MapErr(fmt.Errorf("store: delete ui session: %w", err))
	}
	return nil
}

// DeleteExpiredUISessions deletes up to limit sessions past their absolute
// expiry or idle for idle or longer at now, and returns how many it
// deleted.
func (s *Store) DeleteExpiredUISessions(ctx context.Context, now time.Time, idle time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
DELETE FROM ui_sessions WHERE session_sha256 IN (
    SELECT session_sha256 FROM ui_sessions WHERE expires_at <= $1
    UNION
    SELECT session_sha256 FROM ui_sessions WHERE last_seen_at <= $2
    LIMIT $3)`, now, now.Add(-idle), limit)
	if err != nil {
		return 0, db.MapErr(fmt.Errorf("store: delete expired ui sessions: %w", err))
	}
	return tag.RowsAffected(), nil
}
