package credentials

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// DefaultBatch is how many rows one rewrap transaction changes.
const DefaultBatch = 200

// KeyVersion names a namespace key.
type KeyVersion struct {
	ID      uuid.UUID
	Version int32
}

// RotateNamespaceKey makes a new namespace key active and deactivates the
// current one, in tx. Rows stay wrapped under the old key (which keeps its
// material) until RewrapNamespace moves them: enqueue that job in the same
// transaction. Sealing transactions in flight finish first (the active key
// is taken FOR UPDATE), so none can write a row under the old key after
// the rotation commits.
func (k *Keyring) RotateNamespaceKey(ctx context.Context, tx pgx.Tx, ns uuid.UUID) (*KeyVersion, error) {
	if err := k.requireRoot(); err != nil {
		return nil, err
	}
	if err := checkNamespace(ctx, tx, ns); err != nil {
		return nil, err
	}
	var old KeyVersion
	err := tx.QueryRow(ctx, `SELECT id, version FROM namespace_encryption_keys WHERE namespace_id = $1 AND active FOR UPDATE`, ns).
		Scan(&old.ID, &old.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(CodeNoNamespaceKey, "namespace %s has no encryption key to rotate: none of its remote repositories has stored credentials", ns)
	}
	if err != nil {
		return nil, fmt.Errorf("credentials: lock the active namespace key: %w", err)
	}
	id := db.NewID()
	kek, err := randomKey()
	if err != nil {
		return nil, err
	}
	defer clear(kek[:])
	wrapped, err := wrapKEK(ctx, k.root, ns, id, &kek)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE namespace_encryption_keys SET active = false WHERE namespace_id = $1 AND id = $2`, ns, old.ID); err != nil {
		return nil, fmt.Errorf("credentials: deactivate namespace key: %w", err)
	}
	out := KeyVersion{ID: id}
	if err := tx.QueryRow(ctx, `
		INSERT INTO namespace_encryption_keys (id, namespace_id, version, wrapped_key, root_key_uri, active)
		SELECT $2, $1, max(version) + 1, $3, $4, true FROM namespace_encryption_keys WHERE namespace_id = $1
		RETURNING version`, ns, id, wrapped, k.root.URI).Scan(&out.Version); err != nil {
		return nil, fmt.Errorf("credentials: insert namespace key: %w", err)
	}
	return &out, nil
}

// RewrapResult is what RewrapNamespace did.
type RewrapResult struct {
	// Active is the key every row is now wrapped under (nil: the
	// namespace has no key, or was shredded meanwhile).
	Active *KeyVersion
	// Rewrapped counts the rows moved, by table.
	Rewrapped map[string]int
}

// Total is the number of rows moved.
func (r *RewrapResult) Total() int {
	n := 0
	for _, v := range r.Rewrapped {
		n += v
	}
	return n
}

// RewrapNamespace moves every credential row of the namespace still under
// an older key version to the active key: its data key is unwrapped with
// the old key and wrapped with the active one; ciphertext columns do not
// change. It runs one transaction per batch of rows of a table until none
// is left; a later call after an interruption carries on.
func (k *Keyring) RewrapNamespace(ctx context.Context, ns uuid.UUID, batch int) (*RewrapResult, error) {
	if batch <= 0 {
		batch = DefaultBatch
	}
	res := &RewrapResult{Rewrapped: map[string]int{}}
	for _, t := range Tables {
		for {
			var n int
			err := k.st.WithTx(ctx, func(tx pgx.Tx) error {
				var err error
				res.Active, n, err = k.rewrapBatch(ctx, tx, t, ns, batch)
				return err
			})
			if err != nil {
				return res, fmt.Errorf("credentials: rewrap %s of namespace %s: %w", t.Name, ns, err)
			}
			res.Rewrapped[t.Name] += n
			if res.Active == nil || n < batch {
				break
			}
		}
		if res.Active == nil {
			break
		}
	}
	return res, nil
}

// rewrapBatch moves up to limit rows of t. The rows are picked by
// ns_key_version (below the active version), over the (namespace_id,
// ns_key_id) index: the namespace prefix prunes to one partition and a
// namespace has one row per remote repository.
func (k *Keyring) rewrapBatch(ctx context.Context, tx pgx.Tx, t *Table, ns uuid.UUID, limit int) (*KeyVersion, int, error) {
	active, err := k.readActive(ctx, tx, ns)
	if err != nil || active == nil {
		return nil, 0, err
	}
	defer clear(active.kek[:])
	rows, err := tx.Query(ctx, `SELECT id, wrapped_dek, ns_key_id FROM `+t.Name+`
		WHERE namespace_id = $1 AND ns_key_id IS NOT NULL AND ns_key_version < $2
		ORDER BY id LIMIT $3 FOR UPDATE`, ns, active.version, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("select rows: %w", err)
	}
	type stale struct {
		id, key uuid.UUID
		dek     []byte
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stale, error) {
		var s stale
		err := r.Scan(&s.id, &s.dek, &s.key)
		return s, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("select rows: %w", err)
	}
	b := &pgx.Batch{}
	for _, s := range list {
		row := Row{Table: t, NamespaceID: ns, ID: s.id}
		old, err := k.keyByID(ctx, tx, ns, s.key)
		if err != nil {
			return nil, 0, err
		}
		dek, err := decrypt(old[:], s.dek, dekAAD(row, s.key))
		if err != nil {
			return nil, 0, undecryptable(row, "data key")
		}
		wrapped, err := encrypt(active.kek[:], dek, dekAAD(row, active.id))
		clear(dek)
		if err != nil {
			return nil, 0, err
		}
		b.Queue(`UPDATE `+t.Name+` SET wrapped_dek = $3, ns_key_id = $4, ns_key_version = $5
			WHERE namespace_id = $1 AND id = $2`, ns, s.id, wrapped, active.id, active.version)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, 0, fmt.Errorf("update rows: %w", err)
		}
	}
	return &KeyVersion{ID: active.id, Version: active.version}, len(list), nil
}

// NamespaceKey is one namespace_encryption_keys row as the status shows it
// (never its material).
type NamespaceKey struct {
	ID         uuid.UUID
	Version    int32
	Active     bool
	RootKeyURI string
	CreatedAt  time.Time
	ShreddedAt *time.Time
	// Rows counts the credential rows wrapped under the key, all tables.
	Rows int
}

// NamespaceKeys lists the namespace's keys, oldest version first, with the
// credential rows each still wraps. A superseded key that wraps no row is
// left deactivated, never deleted: the schema keeps every version
// (credential rows resolve keys by ns_key_id, ON DELETE RESTRICT).
func (k *Keyring) NamespaceKeys(ctx context.Context, ns uuid.UUID) ([]NamespaceKey, error) {
	rows, err := k.st.Pool().Query(ctx, `
		SELECT id, version, active, root_key_uri, created_at, shredded_at
		FROM namespace_encryption_keys WHERE namespace_id = $1 ORDER BY version`, ns)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("credentials: list namespace keys: %w", err))
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (NamespaceKey, error) {
		var k NamespaceKey
		err := r.Scan(&k.ID, &k.Version, &k.Active, &k.RootKeyURI, &k.CreatedAt, &k.ShreddedAt)
		return k, err
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("credentials: list namespace keys: %w", err))
	}
	byID := map[uuid.UUID]int{}
	for i, key := range keys {
		byID[key.ID] = i
	}
	for _, t := range Tables {
		rows, err := k.st.Pool().Query(ctx, `SELECT ns_key_id, count(*) FROM `+t.Name+`
			WHERE namespace_id = $1 AND ns_key_id IS NOT NULL GROUP BY ns_key_id`, ns)
		if err != nil {
			return nil, db.MapErr(fmt.Errorf("credentials: count %s rows: %w", t.Name, err))
		}
		var (
			id uuid.UUID
			n  int
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
			if i, ok := byID[id]; ok {
				keys[i].Rows += n
			}
			return nil
		})
		if err != nil {
			return nil, db.MapErr(fmt.Errorf("credentials: count %s rows: %w", t.Name, err))
		}
	}
	return keys, nil
}

// RootKeyCount is how many live (unshredded) namespace keys a root key
// wraps.
type RootKeyCount struct {
	URI  string
	Keys int
	// Known: this instance holds the root key (current or previous).
	Known   bool
	Current bool
}

// RootKeys counts the live namespace keys per root key, the current one
// first. It scans the live rows of every partition (a status and a
// background job's completion check, never a request).
func (k *Keyring) RootKeys(ctx context.Context) ([]RootKeyCount, error) {
	rows, err := k.st.Pool().Query(ctx, `SELECT root_key_uri, count(*) FROM namespace_encryption_keys
		WHERE shredded_at IS NULL GROUP BY root_key_uri ORDER BY root_key_uri`)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("credentials: count keys per root key: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RootKeyCount, error) {
		var c RootKeyCount
		err := r.Scan(&c.URI, &c.Keys)
		_, c.Known = k.roots[c.URI]
		c.Current = c.URI == k.RootURI()
		return c, err
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("credentials: count keys per root key: %w", err))
	}
	for i := range out {
		if out[i].Current {
			out[0], out[i] = out[i], out[0]
		}
	}
	return out, nil
}

// RewrapRoot rewraps, with the current root key, every live namespace key
// still wrapped under the root key from (which this instance must hold),
// one batch per transaction, and returns how many it rewrapped. Rows are
// found by root_key_uri over the partial index of live rows
// (namespace_encryption_keys_root_key_uri_live_idx), which fans out to
// every partition: background work only. Shredded rows are never touched:
// they keep the root_key_uri they had.
func (k *Keyring) RewrapRoot(ctx context.Context, from string, batch int) (int, error) {
	if err := k.requireRoot(); err != nil {
		return 0, err
	}
	if from == k.root.URI {
		return 0, nil
	}
	old, ok := k.roots[from]
	if !ok {
		return 0, errs.New(CodeRootKeyUnknown, "root key %s is not one this instance was given (--previous-root-key-urls)", from)
	}
	if batch <= 0 {
		batch = DefaultBatch
	}
	total := 0
	for {
		var n int
		err := k.st.WithTx(ctx, func(tx pgx.Tx) error {
			var err error
			n, err = k.rewrapRootBatch(ctx, tx, old, batch)
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("credentials: rewrap namespace keys of root key %s: %w", from, err)
		}
		if n < batch {
			return total, nil
		}
	}
}

func (k *Keyring) rewrapRootBatch(ctx context.Context, tx pgx.Tx, old *RootKey, limit int) (int, error) {
	// FOR NO KEY UPDATE: a sealing transaction holding the active key FOR
	// SHARE finishes first; no other writer changes these rows but a purge.
	rows, err := tx.Query(ctx, `SELECT namespace_id, id, wrapped_key FROM namespace_encryption_keys
		WHERE root_key_uri = $1 AND shredded_at IS NULL LIMIT $2 FOR NO KEY UPDATE`, old.URI, limit)
	if err != nil {
		return 0, fmt.Errorf("select keys: %w", err)
	}
	type live struct {
		ns, id  uuid.UUID
		wrapped []byte
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (live, error) {
		var l live
		err := r.Scan(&l.ns, &l.id, &l.wrapped)
		return l, err
	})
	if err != nil {
		return 0, fmt.Errorf("select keys: %w", err)
	}
	b := &pgx.Batch{}
	for _, l := range list {
		kek, err := k.unwrapKEK(ctx, old.URI, l.ns, l.id, l.wrapped)
		if err != nil {
			return 0, err
		}
		wrapped, err := wrapKEK(ctx, k.root, l.ns, l.id, &kek)
		clear(kek[:])
		if err != nil {
			return 0, err
		}
		b.Queue(`UPDATE namespace_encryption_keys SET wrapped_key = $3, root_key_uri = $4
			WHERE namespace_id = $1 AND id = $2 AND shredded_at IS NULL`, l.ns, l.id, wrapped, k.root.URI)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return 0, fmt.Errorf("update keys: %w", err)
		}
	}
	return len(list), nil
}

// PreviousRoots are the URIs of the older root keys this instance holds.
func (k *Keyring) PreviousRoots() []string {
	var out []string
	for uri := range k.roots {
		if uri != k.RootURI() {
			out = append(out, uri)
		}
	}
	slices.Sort(out)
	return out
}
