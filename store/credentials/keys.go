package credentials

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// nsKey is an unwrapped namespace key.
type nsKey struct {
	id      uuid.UUID
	version int32
	kek     [keySize]byte
}

// activeKeySQL reads the key new data keys are wrapped with and holds it
// FOR SHARE: a rotation (which takes it FOR UPDATE to deactivate it) waits
// for the sealing transaction, and so does the shredding UPDATE of a purge.
const activeKeySQL = `
SELECT id, version, wrapped_key, root_key_uri
FROM namespace_encryption_keys
WHERE namespace_id = $1 AND active
FOR SHARE`

// namespaceStateSQL locks the namespace row FOR SHARE (a purge, an UPDATE
// of the row, waits until the transaction ends; a purge that committed
// first is seen) and tells whether the namespace is purged or holds a
// tombstone (namespace_encryption_keys_shredded_idx).
const namespaceStateSQL = `
SELECT n.purged_at IS NOT NULL,
       EXISTS (SELECT 1 FROM namespace_encryption_keys k WHERE k.namespace_id = $1 AND k.shredded_at IS NOT NULL)
FROM namespaces n
WHERE n.id = $1
FOR SHARE OF n`

// insertKeySQL adds a key version after the namespace's highest. Two
// first uses racing both insert version 1: the unique indexes (one active
// key, one row per version) make the second wait for the first and then
// do nothing.
const insertKeySQL = `
INSERT INTO namespace_encryption_keys (id, namespace_id, version, wrapped_key, root_key_uri, active)
SELECT $2, $1, COALESCE(max(version), 0) + 1, $3, $4, true
FROM namespace_encryption_keys WHERE namespace_id = $1
ON CONFLICT DO NOTHING`

const keyByIDSQL = `
SELECT wrapped_key, root_key_uri, shredded_at IS NOT NULL
FROM namespace_encryption_keys
WHERE namespace_id = $1 AND id = $2`

// checkNamespace refuses a namespace that is purged or shredded, locking
// its row FOR SHARE until the transaction ends.
func checkNamespace(ctx context.Context, tx pgx.Tx, ns uuid.UUID) error {
	var purged, shredded bool
	err := tx.QueryRow(ctx, namespaceStateSQL, ns).Scan(&purged, &shredded)
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.New(errs.NotFound, "namespace %s not found", ns)
	}
	if err != nil {
		return fmt.Errorf("credentials: namespace state: %w", err)
	}
	if purged || shredded {
		return errs.New(CodeShredded, "namespace %s was purged and its encryption keys destroyed", ns)
	}
	return nil
}

// activeKey returns the namespace's active key, locked FOR SHARE,
// creating version 1 when the namespace has none yet.
func (k *Keyring) activeKey(ctx context.Context, tx pgx.Tx, ns uuid.UUID) (*nsKey, error) {
	for attempt := 0; ; attempt++ {
		key, err := k.readActive(ctx, tx, ns)
		if err != nil || key != nil {
			return key, err
		}
		if attempt == 2 {
			// Only a transaction that cannot see a committed key (not READ
			// COMMITTED) or a key deactivated twice under us gets here.
			return nil, errs.New(errs.Retryable, "the encryption key of namespace %s changed concurrently; retry", ns)
		}
		if err := k.createKey(ctx, tx, ns); err != nil {
			return nil, err
		}
	}
}

// readActive reads and unwraps the active key (nil when there is none).
func (k *Keyring) readActive(ctx context.Context, tx pgx.Tx, ns uuid.UUID) (*nsKey, error) {
	var (
		key     nsKey
		wrapped []byte
		uri     string
	)
	err := tx.QueryRow(ctx, activeKeySQL, ns).Scan(&key.id, &key.version, &wrapped, &uri)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: read the active namespace key: %w", err)
	}
	if key.kek, err = k.unwrapCached(ctx, uri, ns, key.id, wrapped); err != nil {
		return nil, err
	}
	return &key, nil
}

// createKey inserts a first key for a namespace that has none (or loses
// the race to a concurrent first use, harmlessly).
func (k *Keyring) createKey(ctx context.Context, tx pgx.Tx, ns uuid.UUID) error {
	if err := checkNamespace(ctx, tx, ns); err != nil {
		return err
	}
	id := db.NewID()
	kek, err := randomKey()
	if err != nil {
		return err
	}
	defer clear(kek[:])
	wrapped, err := wrapKEK(ctx, k.root, ns, id, &kek)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, insertKeySQL, ns, id, wrapped, k.root.URI); err != nil {
		return fmt.Errorf("credentials: create namespace key: %w", err)
	}
	return nil
}

// keyByID reads a key row and unwraps it; a shredded key is refused
// before the cache is consulted.
func (k *Keyring) keyByID(ctx context.Context, q Queryer, ns, id uuid.UUID) ([keySize]byte, error) {
	var (
		wrapped  []byte
		uri      string
		shredded bool
	)
	err := q.QueryRow(ctx, keyByIDSQL, ns, id).Scan(&wrapped, &uri, &shredded)
	if errors.Is(err, pgx.ErrNoRows) {
		return [keySize]byte{}, fmt.Errorf("credentials: namespace key %s of namespace %s does not exist", id, ns)
	}
	if err != nil {
		return [keySize]byte{}, fmt.Errorf("credentials: read namespace key: %w", err)
	}
	if shredded {
		k.cache.Remove(keyRef{ns, id})
		return [keySize]byte{}, errs.New(CodeShredded, "the credentials of namespace %s were destroyed when it was purged", ns)
	}
	return k.unwrapCached(ctx, uri, ns, id, wrapped)
}

func (k *Keyring) unwrapCached(ctx context.Context, uri string, ns, id uuid.UUID, wrapped []byte) ([keySize]byte, error) {
	ref := keyRef{ns, id}
	if kek, ok := k.cache.Get(ref); ok {
		return kek, nil
	}
	kek, err := k.unwrapKEK(ctx, uri, ns, id, wrapped)
	if err != nil {
		return kek, err
	}
	k.cache.Add(ref, kek)
	return kek, nil
}
