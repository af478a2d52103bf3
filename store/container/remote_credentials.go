package container

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Upstream credentials of a container remote are a credential unit of
// its container_remote_repositories row, sealed by the keyring
// (docs/security/upstream-credentials.md): the row's data key wrapped by
// the namespace key, the two ciphertexts bound to the row. Sealed inside
// the transaction that writes the row; opened only when an upstream
// client is built.

// CodeNoKeyring: credentials were given, or must be read, and this
// store was given no keyring.
var CodeNoKeyring = store.Code{Name: "REMOTE_CREDENTIALS_NO_KEY", Kind: store.KindUnavailable}

var errNoKeyring = errs.New(CodeNoKeyring,
	"upstream credentials cannot be stored or read: this instance has no keyring (see --root-key-url)")

// Keyring is the keyring of upstream credentials.
type Keyring = *credentials.Keyring

// SetKeyring gives the store the keyring that seals and opens remote
// credentials. Without one, settings with credentials are refused.
func (s *Store) SetKeyring(k Keyring) { s.keyring = k }

func remoteRow(nsID, id uuid.UUID) credentials.Row {
	return credentials.Row{Table: credentials.ContainerRemote, NamespaceID: nsID, ID: id}
}

// sealCredentials encrypts c for the remote row id and stores the unit.
func (s *Store) sealCredentials(ctx context.Context, tx pgx.Tx, nsID, id uuid.UUID, c Credentials) error {
	if s.keyring == nil {
		return errNoKeyring
	}
	cols, err := s.keyring.Seal(ctx, tx, remoteRow(nsID, id), credentials.NewSecret(c.Username), credentials.NewSecret(c.Password))
	if err != nil {
		return err
	}
	args := append([]any{nsID, id}, cols.Args()...)
	if _, err := tx.Exec(ctx, `
		UPDATE container_remote_repositories
		SET (`+credentials.ContainerRemote.UnitColumns()+`) = ($3, $4, $5, $6, $7)
		WHERE namespace_id = $1 AND id = $2`, args...); err != nil {
		return fmt.Errorf("store: store remote credentials: %w", err)
	}
	return nil
}

// RemoteCredentials opens the credentials of a remote (nil when it has
// none). Only the protocol's upstream client asks, when it builds the
// client of a remote whose settings changed.
func (s *Store) RemoteCredentials(ctx context.Context, nsID, remoteID uuid.UUID) (*Credentials, error) {
	scan := credentials.ContainerRemote.NewScan()
	err := s.pool.QueryRow(ctx, `SELECT `+credentials.ContainerRemote.UnitColumns()+`
		FROM container_remote_repositories WHERE namespace_id = $1 AND id = $2`, nsID, remoteID).Scan(scan.Dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeNameUnknown, "container remote repository not found")
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: remote credentials: %w", err))
	}
	cols, err := scan.Columns()
	if err != nil || cols == nil {
		return nil, err
	}
	if s.keyring == nil {
		return nil, errNoKeyring
	}
	plain, err := s.keyring.Open(ctx, s.pool, remoteRow(nsID, remoteID), cols)
	if err != nil {
		return nil, err
	}
	return &Credentials{Username: plain[0].Reveal(), Password: plain[1].Reveal()}, nil
}
