package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/jackc/pgx/v5"
)

// Token signing keys (migrations/00039_token_signing_keys.sql): the HMAC
// keys of the OCI bearer tokens, shared by every instance through the
// database. The store creates and rotates them; package auth caches them
// and decides what a token signed with one is worth.

// SigningKeySize is the length of every signing key (HMAC-SHA256 key of
// the hash's own size).
const SigningKeySize = 32

// SigningKey is a token_signing_keys row.
type SigningKey struct {
	ID        int64
	Key       []byte
	CreatedAt time.Time
	// RetiredAt is nil for the current key, the one that signs.
	RetiredAt *time.Time
}

// Current reports whether the key signs new tokens.
func (k *SigningKey) Current() bool { return k.RetiredAt == nil }

func newSigningKeyBytes() ([]byte, error) {
	key := make([]byte, SigningKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	return key, nil
}

// SigningKeys returns every stored signing key, the current one first,
// then the retired ones newest first. When no key is current (a fresh
// database) it creates one first: concurrent callers on any instance end
// with the same single current key (the partial unique index turns the
// losers' inserts into no-ops).
func (s *Store) SigningKeys(ctx context.Context) ([]SigningKey, error) {
	keys, err := s.signingKeys(ctx)
	if err != nil || (len(keys) > 0 && keys[0].Current()) {
		return keys, err
	}
	key, err := newSigningKeyBytes()
	if err != nil {
		return nil, err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO token_signing_keys (key, created_at) VALUES ($1, $2)
		ON CONFLICT DO NOTHING`, key, s.opts.Clock.Now()); err != nil {
		return nil, db.MapErr(fmt.Errorf("create signing key: %w", err))
	}
	keys, err = s.signingKeys(ctx)
	if err == nil && (len(keys) == 0 || !keys[0].Current()) {
		err = errors.New("store: no current signing key after creating one")
	}
	return keys, err
}

func (s *Store) signingKeys(ctx context.Context) ([]SigningKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, key, created_at, retired_at FROM token_signing_keys
		ORDER BY retired_at DESC NULLS FIRST, id DESC`)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("read signing keys: %w", err))
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SigningKey, error) {
		var k SigningKey
		err := r.Scan(&k.ID, &k.Key, &k.CreatedAt, &k.RetiredAt)
		return k, err
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("read signing keys: %w", err))
	}
	return keys, nil
}

// RotateSigningKey makes a new random key current and retires the
// previous one, which keeps verifying the tokens it signed; keys retired
// more than retention ago (the longest a token they signed can live) are
// deleted. It returns the new key. Rotations, and the first-key creation
// of SigningKeys, are serialized by a table lock, so two concurrent
// rotations retire one key each in turn.
func (s *Store) RotateSigningKey(ctx context.Context, retention time.Duration) (*SigningKey, error) {
	key, err := newSigningKeyBytes()
	if err != nil {
		return nil, err
	}
	now := s.opts.Clock.Now()
	k := &SigningKey{Key: key}
	err = s.WithTx(ctx, func(tx pgx.Tx) error {
		// SHARE ROW EXCLUSIVE conflicts with itself and with the inserts
		// of SigningKeys, not with the readers of the request path.
		if _, err := tx.Exec(ctx, `LOCK TABLE token_signing_keys IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("lock signing keys: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE token_signing_keys SET retired_at = greatest($1, created_at)
			WHERE retired_at IS NULL`, now); err != nil {
			return fmt.Errorf("retire signing key: %w", err)
		}
		if err := tx.QueryRow(ctx, `INSERT INTO token_signing_keys (key, created_at) VALUES ($1, $2)
			RETURNING id, created_at`, key, now).Scan(&k.ID, &k.CreatedAt); err != nil {
			return fmt.Errorf("insert signing key: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM token_signing_keys WHERE retired_at < $1`, now.Add(-retention)); err != nil {
			return fmt.Errorf("delete expired signing keys: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rotate signing key: %w", err)
	}
	return k, nil
}

// DeleteRetiredSigningKeys deletes the keys retired before the given
// time and returns how many went.
func (s *Store) DeleteRetiredSigningKeys(ctx context.Context, retiredBefore time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM token_signing_keys WHERE retired_at < $1`, retiredBefore)
	if err != nil {
		return 0, db.MapErr(fmt.Errorf("delete expired signing keys: %w", err))
	}
	return tag.RowsAffected(), nil
}
