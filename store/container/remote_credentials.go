package container

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// SealedCredentials is the credential unit of a container_remote_repositories
// row as stored: the row's data key wrapped by the namespace key, that
// key's identity, and the two ciphertexts.
type SealedCredentials struct {
	WrappedDEK []byte
	KeyID      uuid.UUID
	KeyVersion int32
	Username   []byte
	Password   []byte
}

// Keyring is the envelope encryption of remote credentials
// (docs/security/upstream-credentials.md): Seal runs inside the
// transaction that writes the row, Open reads with the pool. The
// ciphertexts are bound to (namespace, row), so a unit copied to another
// row does not open.
type Keyring interface {
	Seal(ctx context.Context, tx pgx.Tx, nsID, rowID uuid.UUID, c Credentials) (*SealedCredentials, error)
	Open(ctx context.Context, nsID, rowID uuid.UUID, sealed *SealedCredentials) (Credentials, error)
}

// CodeNoKeyring: credentials were given, or must be read, and this
// instance has no keyring to encrypt or decrypt them with.
var CodeNoKeyring = store.Code{Name: "REMOTE_CREDENTIALS_NO_KEY", Kind: store.KindUnavailable}

var errNoKeyring = errs.New(CodeNoKeyring,
	"upstream credentials cannot be stored: this instance has no key to encrypt them with (see --root-key-url)")

// SetKeyring gives the store the keyring that seals and opens remote
// credentials. Without one, settings with credentials are refused.
func (s *Store) SetKeyring(k Keyring) { s.keyring = k }

// sealCredentials encrypts c for the remote row id and stores the unit.
func (s *Store) sealCredentials(ctx context.Context, tx pgx.Tx, nsID, id uuid.UUID, c Credentials) error {
	if s.keyring == nil {
		return errNoKeyring
	}
	u, err := s.keyring.Seal(ctx, tx, nsID, id, c)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `
		UPDATE container_remote_repositories
		SET wrapped_dek = $3, ns_key_id = $4, ns_key_version = $5, encrypted_username = $6, encrypted_password = $7
		WHERE namespace_id = $1 AND id = $2`, nsID, id, u.WrappedDEK, u.KeyID, u.KeyVersion, u.Username, u.Password); err != nil {
		return fmt.Errorf("store: store remote credentials: %w", err)
	}
	return nil
}

// RemoteCredentials opens the credentials of a remote (nil when it has
// none). Only the protocol's upstream client asks, when it builds the
// client of a remote whose settings changed.
func (s *Store) RemoteCredentials(ctx context.Context, nsID, remoteID uuid.UUID) (*Credentials, error) {
	var u SealedCredentials
	var keyID *uuid.UUID
	var version *int32
	err := s.pool.QueryRow(ctx, `
		SELECT wrapped_dek, ns_key_id, ns_key_version, encrypted_username, encrypted_password
		FROM container_remote_repositories WHERE namespace_id = $1 AND id = $2`, nsID, remoteID).
		Scan(&u.WrappedDEK, &keyID, &version, &u.Username, &u.Password)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeNameUnknown, "container remote repository not found")
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote credentials: %w", err))
	}
	if u.WrappedDEK == nil {
		return nil, nil
	}
	if keyID == nil || version == nil || u.Username == nil || u.Password == nil {
		return nil, fmt.Errorf("store: remote %s holds a partial credential unit", remoteID)
	}
	u.KeyID, u.KeyVersion = *keyID, *version
	if s.keyring == nil {
		return nil, errNoKeyring
	}
	c, err := s.keyring.Open(ctx, nsID, remoteID, &u)
	if err != nil {
		return nil, err
	}
	return &c, nil
}
