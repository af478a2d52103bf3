// Package credentials encrypts the upstream credentials of remote
// repositories with the envelope scheme of docs/security/upstream-credentials.md:
// the deployment's root key (gocloud.dev/secrets) wraps one key-encryption
// key per namespace (a namespace_encryption_keys row), which wraps a fresh
// data key per credential row, which encrypts the row's credential columns
// with AES-256-GCM. Every ciphertext is bound to its row (table, namespace,
// row id and column) through the associated data, so ciphertext copied to
// another row, another column or another namespace does not decrypt.
//
// The remote-repository code calls Seal and Open inside its own
// transactions; the rotation jobs (package keyrotation) call
// RotateNamespaceKey, RewrapNamespace and RewrapRoot. Crypto-shred happens
// in the database when a namespace is purged (migration 00052); Open and
// Seal then refuse with CodeShredded.
package credentials

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"gocloud.dev/secrets"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Queryer is a pool or a transaction.
type Queryer = db.Queryer

// MaxPlaintextChars bounds every credential value (a user name, a password,
// a token) before it is encrypted; the database sees only ciphertext and
// has no length CHECK of its own.
const MaxPlaintextChars = 2048

// MaxRootKeyURI is the longest root_key_uri the schema stores.
const MaxRootKeyURI = 255

// Codes of the failures callers tell apart. GraphQL reports their Kind in
// extensions.code and the message as is; protocols answer per code.
var (
	// CodeRootKeyMissing: this instance has no root key (an external
	// database and no --root-key-url), so it can neither store nor read
	// credentials. A configuration problem: retrying does not help.
	CodeRootKeyMissing = errs.Code{Name: "ROOT_KEY_MISSING", Kind: errs.KindUnavailable}
	// CodeRootKeyUnknown: the namespace key is wrapped under a root key this
	// instance was not given (neither --root-key-url nor one of
	// --previous-root-key-urls).
	CodeRootKeyUnknown = errs.Code{Name: "ROOT_KEY_UNKNOWN", Kind: errs.KindUnavailable}
	// CodeShredded: the namespace was purged and its keys destroyed; its
	// credentials can never be read again and none can be stored.
	CodeShredded = errs.Code{Name: "CREDENTIALS_SHREDDED", Kind: errs.KindConflict}
	// CodeUndecryptable: the ciphertext, the wrapped data key or the
	// wrapped namespace key failed authentication: altered, or moved from
	// another row.
	CodeUndecryptable = errs.Code{Name: "CREDENTIALS_UNDECRYPTABLE", Kind: errs.KindConflict}
	// CodeNoNamespaceKey: a rotation of a namespace that has no key yet
	// (none of its remote repositories ever stored a credential).
	CodeNoNamespaceKey = errs.Code{Name: "NO_NAMESPACE_KEY", Kind: errs.KindNotFound}
)

// Table is a table holding credential units: wrapped_dek, ns_key_id,
// ns_key_version and its ciphertext columns, all set or all NULL (the
// tables' credentials_unit CHECK).
type Table struct {
	// Name is the partitioned parent table.
	Name string
	// Columns are the ciphertext columns, in the order Seal takes the
	// plaintexts and Open returns them.
	Columns []string
}

// The tables with credential units. Tables is what the namespace-key
// rotation walks: a new table with credentials is added here.
var (
	ContainerRemote = &Table{Name: "container_remote_repositories", Columns: []string{"encrypted_username", "encrypted_password"}}
	MavenRemote     = &Table{Name: "maven_remote_repositories", Columns: []string{"encrypted_username", "encrypted_password"}}
	NpmRemote       = &Table{Name: "npm_remote_repositories", Columns: []string{"encrypted_auth_token"}}
	Tables          = []*Table{ContainerRemote, MavenRemote, NpmRemote}
)

// UnitColumns is the column list of the unit, in the order of
// Columns.Args and Scan.Dest: "wrapped_dek, ns_key_id, ns_key_version,
// <ciphertext columns>".
func (t *Table) UnitColumns() string {
	return "wrapped_dek, ns_key_id, ns_key_version, " + strings.Join(t.Columns, ", ")
}

// Row names one credential row: its table, namespace and id. It is the
// associated data of every ciphertext of the row, so the row id must be
// the row's final id (generated before Seal, as every id is).
type Row struct {
	Table       *Table
	NamespaceID uuid.UUID
	ID          uuid.UUID
}

func (r Row) valid() error {
	if r.Table == nil || r.NamespaceID == uuid.Nil || r.ID == uuid.Nil {
		return fmt.Errorf("credentials: incomplete row identity %+v", r)
	}
	return nil
}

// Columns is a sealed credential unit as stored.
type Columns struct {
	WrappedDEK []byte
	KeyID      uuid.UUID
	KeyVersion int32
	// Ciphertexts: one per Table.Columns entry, in that order.
	Ciphertexts [][]byte
}

// Args returns the values of Table.UnitColumns, in that order, for an
// INSERT or UPDATE.
func (c *Columns) Args() []any {
	out := []any{c.WrappedDEK, c.KeyID, c.KeyVersion}
	for _, ct := range c.Ciphertexts {
		out = append(out, ct)
	}
	return out
}

// Scan receives a unit read with Table.UnitColumns, NULLs included.
type Scan struct {
	t          *Table
	wrappedDEK []byte
	keyID      *uuid.UUID
	keyVersion *int32
	cts        [][]byte
}

// NewScan returns a scan target for a unit of t.
func (t *Table) NewScan() *Scan { return &Scan{t: t, cts: make([][]byte, len(t.Columns))} }

// Dest is the Scan destinations, in Table.UnitColumns order.
func (s *Scan) Dest() []any {
	out := []any{&s.wrappedDEK, &s.keyID, &s.keyVersion}
	for i := range s.cts {
		out = append(out, &s.cts[i])
	}
	return out
}

// Columns returns the scanned unit, nil when the row holds no credentials.
// A partly set unit (which the CHECK forbids) is an error.
func (s *Scan) Columns() (*Columns, error) {
	set := 0
	for _, b := range []bool{s.wrappedDEK != nil, s.keyID != nil, s.keyVersion != nil} {
		if b {
			set++
		}
	}
	for _, ct := range s.cts {
		if ct != nil {
			set++
		}
	}
	switch set {
	case 0:
		return nil, nil
	case 3 + len(s.cts):
		return &Columns{WrappedDEK: s.wrappedDEK, KeyID: *s.keyID, KeyVersion: *s.keyVersion, Ciphertexts: s.cts}, nil
	}
	return nil, fmt.Errorf("credentials: %s row holds %d of the %d columns of its credential unit", s.t.Name, set, 3+len(s.cts))
}

// Secret is a credential in plaintext. Every way of printing, logging or
// marshalling it gives Mask; Reveal is the only way to the value.
type Secret struct{ s string }

// Mask is what a Secret prints as.
const Mask = "[REDACTED]"

// NewSecret wraps a plaintext credential.
func NewSecret(s string) Secret { return Secret{s} }

// Reveal returns the plaintext.
func (s Secret) Reveal() string { return s.s }

// String implements fmt.Stringer.
func (Secret) String() string { return Mask }

// GoString implements fmt.GoStringer (%#v).
func (Secret) GoString() string { return Mask }

// Format covers every fmt verb (%x, %q, %v, ...).
func (Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(Mask)) }

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(Mask) }

// MarshalText implements encoding.TextMarshaler (JSON and the rest).
func (Secret) MarshalText() ([]byte, error) { return []byte(Mask), nil }

// validPlaintext checks one credential value against the limits.
func validPlaintext(column string, s Secret) error {
	switch {
	case s.s == "":
		return errs.New(errs.InvalidInput, "%s must not be empty (a credential is set as a whole or not at all)", column)
	case !utf8.ValidString(s.s):
		return errs.New(errs.InvalidInput, "%s is not valid UTF-8", column)
	case utf8.RuneCountInString(s.s) > MaxPlaintextChars:
		return errs.New(errs.InvalidInput, "%s is longer than %d characters", column, MaxPlaintextChars)
	case strings.ContainsRune(s.s, 0):
		return errs.New(errs.InvalidInput, "%s contains a NUL character", column)
	}
	return nil
}

// RootKey is a deployment root key: the keeper that wraps and unwraps
// namespace keys, and the URI recorded with every key it wraps.
type RootKey struct {
	// URI names the key in namespace_encryption_keys.root_key_uri. It is
	// never key material (internal/rootkey replaces a base64key URL by a
	// fingerprint) and at most MaxRootKeyURI characters.
	URI    string
	Keeper *secrets.Keeper
}

// Options configure a Keyring.
type Options struct {
	// Root wraps new namespace keys. Nil: Seal and rotations refuse with
	// CodeRootKeyMissing (Open still works for keys under Previous).
	Root *RootKey
	// Previous are older root keys, used to unwrap namespace keys not yet
	// rewrapped by a root-key rotation.
	Previous []*RootKey
	// CacheSize bounds the unwrapped namespace keys kept in memory
	// (DefaultCacheSize when 0).
	CacheSize int
}

// DefaultCacheSize is Options.CacheSize's default: namespaces whose keys
// stay unwrapped in memory (32 bytes each).
const DefaultCacheSize = 4096

// Keyring seals and opens credential units and rotates the keys. It is
// safe for concurrent use; instances sharing a database share its keys.
type Keyring struct {
	st    *store.Store
	root  *RootKey
	roots map[string]*RootKey
	// cache holds unwrapped namespace keys by (namespace, key id). Key
	// material of a key id never changes (a root rotation rewraps the same
	// key, a namespace rotation makes a new id), and every use reads the
	// key row first, so a shredded key is refused whatever the cache holds:
	// the cache saves only the root-key unwrap (a KMS call in production).
	cache *lru.Cache[keyRef, [keySize]byte]
}

type keyRef struct{ ns, id uuid.UUID }

// New returns a Keyring over the store's database.
func New(st *store.Store, o Options) (*Keyring, error) {
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	cache, err := lru.New[keyRef, [keySize]byte](o.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("credentials: key cache: %w", err)
	}
	k := &Keyring{st: st, root: o.Root, roots: map[string]*RootKey{}, cache: cache}
	for _, r := range append([]*RootKey{o.Root}, o.Previous...) {
		if r == nil {
			continue
		}
		if r.URI == "" || utf8.RuneCountInString(r.URI) > MaxRootKeyURI || r.Keeper == nil {
			return nil, fmt.Errorf("credentials: a root key needs a keeper and a URI of 1 to %d characters", MaxRootKeyURI)
		}
		if _, dup := k.roots[r.URI]; dup {
			return nil, fmt.Errorf("credentials: root key %s given twice", r.URI)
		}
		k.roots[r.URI] = r
	}
	return k, nil
}

// Configured reports whether the keyring can seal (it has a root key).
func (k *Keyring) Configured() bool { return k.root != nil }

// RootURI is the URI of the current root key ("" without one).
func (k *Keyring) RootURI() string {
	if k.root == nil {
		return ""
	}
	return k.root.URI
}

func (k *Keyring) requireRoot() error {
	if k.root == nil {
		return errs.New(CodeRootKeyMissing, "no root key is configured, so upstream credentials cannot be stored or read: "+
			"set --root-key-url (ARTIFACT_REGISTRY_ROOT_KEY_URL) on every instance")
	}
	return nil
}

// Seal encrypts plaintexts (one per row.Table.Columns entry, in order) for
// row under a fresh data key wrapped by the namespace's active key, which
// is created on first use. Call it inside the transaction that writes the
// row (a READ COMMITTED one, as store.WithTx opens), and write all of the
// returned Columns or none: the active key stays locked (FOR SHARE) until
// that transaction ends, so a concurrent rotation cannot leave the row
// behind under a superseded key.
func (k *Keyring) Seal(ctx context.Context, tx pgx.Tx, row Row, plaintexts ...Secret) (*Columns, error) {
	if err := row.valid(); err != nil {
		return nil, err
	}
	if err := k.requireRoot(); err != nil {
		return nil, err
	}
	if len(plaintexts) != len(row.Table.Columns) {
		return nil, fmt.Errorf("credentials: %s takes %d values, got %d", row.Table.Name, len(row.Table.Columns), len(plaintexts))
	}
	for i, p := range plaintexts {
		if err := validPlaintext(row.Table.Columns[i], p); err != nil {
			return nil, err
		}
	}
	key, err := k.activeKey(ctx, tx, row.NamespaceID)
	if err != nil {
		return nil, err
	}
	dek, err := randomKey()
	if err != nil {
		return nil, err
	}
	out := &Columns{KeyID: key.id, KeyVersion: key.version}
	for i, p := range plaintexts {
		ct, err := encrypt(dek[:], []byte(p.s), columnAAD(row, row.Table.Columns[i]))
		if err != nil {
			return nil, err
		}
		out.Ciphertexts = append(out.Ciphertexts, ct)
	}
	if out.WrappedDEK, err = encrypt(key.kek[:], dek[:], dekAAD(row, key.id)); err != nil {
		return nil, err
	}
	return out, nil
}

// Open decrypts the unit c of row and returns its plaintexts in
// row.Table.Columns order. q is the pool or the caller's transaction.
func (k *Keyring) Open(ctx context.Context, q Queryer, row Row, c *Columns) ([]Secret, error) {
	if err := row.valid(); err != nil {
		return nil, err
	}
	if c == nil || len(c.Ciphertexts) != len(row.Table.Columns) {
		return nil, fmt.Errorf("credentials: %s unit needs %d ciphertexts", row.Table.Name, len(row.Table.Columns))
	}
	kek, err := k.keyByID(ctx, q, row.NamespaceID, c.KeyID)
	if err != nil {
		return nil, err
	}
	dek, err := decrypt(kek[:], c.WrappedDEK, dekAAD(row, c.KeyID))
	if err != nil || len(dek) != keySize {
		return nil, undecryptable(row, "data key")
	}
	out := make([]Secret, len(c.Ciphertexts))
	for i, ct := range c.Ciphertexts {
		p, err := decrypt(dek, ct, columnAAD(row, row.Table.Columns[i]))
		if err != nil {
			return nil, undecryptable(row, row.Table.Columns[i])
		}
		out[i] = Secret{string(p)}
	}
	return out, nil
}

func undecryptable(row Row, what string) error {
	return errs.New(CodeUndecryptable, "the %s of %s row %s does not decrypt: altered, or copied from another row", what, row.Table.Name, row.ID)
}
