package credentials

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"gocloud.dev/secrets/localsecrets"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// rootKey is a local root key with a random secret.
func rootKey(t testing.TB, uri string) *RootKey {
	t.Helper()
	sk, err := localsecrets.NewRandomKey()
	if err != nil {
		t.Fatal(err)
	}
	k := localsecrets.NewKeeper(sk)
	t.Cleanup(func() { _ = k.Close() })
	return &RootKey{URI: uri, Keeper: k}
}

func keyring(t testing.TB, st *store.Store, root *RootKey, previous ...*RootKey) *Keyring {
	t.Helper()
	k, err := New(st, Options{Root: root, Previous: previous})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

type fixture struct {
	t   *testing.T
	ctx context.Context
	st  *store.Store
}

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, ctx: context.Background(), st: testsupport.Store(t, testsupport.StoreOptions{Mem: true})}
}

func (f *fixture) namespace(slug string) uuid.UUID {
	f.t.Helper()
	return testsupport.Namespace(f.t, f.st, slug).ID
}

func (f *fixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.st.Pool().Exec(f.ctx, sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

// formats of the remote tables' repositories rows (enum.Format).
var tableFormat = map[*Table]int{ContainerRemote: 3, MavenRemote: 1, NpmRemote: 2}

// remoteRow inserts a remote repository (parent row and format row, no
// credentials) and returns the identity of its format row.
func (f *fixture) remoteRow(t *Table, ns uuid.UUID, name string) Row {
	f.t.Helper()
	repo, id := db.NewID(), db.NewID()
	f.exec(`INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, $3, $4, 2, 1)`,
		repo, ns, name, tableFormat[t])
	f.exec(`INSERT INTO `+t.Name+` (id, namespace_id, repository_id, url) VALUES ($1, $2, $3, 'https://upstream.test')`, id, ns, repo)
	return Row{Table: t, NamespaceID: ns, ID: id}
}

// seal seals plaintexts for row and writes them in one transaction, as
// the remote-repository code does.
func (f *fixture) seal(k *Keyring, row Row, plaintexts ...string) *Columns {
	f.t.Helper()
	c, err := f.trySeal(k, row, plaintexts...)
	if err != nil {
		f.t.Fatalf("seal %s: %v", row.Table.Name, err)
	}
	return c
}

func (f *fixture) trySeal(k *Keyring, row Row, plaintexts ...string) (*Columns, error) {
	var out *Columns
	err := f.st.WithTx(f.ctx, func(tx pgx.Tx) error {
		var err error
		out, err = k.Seal(f.ctx, tx, row, secretsOf(plaintexts...)...)
		if err != nil {
			return err
		}
		return write(f.ctx, tx, row, out)
	})
	return out, err
}

func secretsOf(s ...string) []Secret {
	out := make([]Secret, len(s))
	for i, v := range s {
		out[i] = NewSecret(v)
	}
	return out
}

func write(ctx context.Context, q Queryer, row Row, c *Columns) error {
	set := make([]string, 0, 5)
	for i, col := range strings.Split(row.Table.UnitColumns(), ", ") {
		set = append(set, fmt.Sprintf("%s = $%d", col, i+3))
	}
	_, err := q.Exec(ctx, `UPDATE `+row.Table.Name+` SET `+strings.Join(set, ", ")+` WHERE namespace_id = $1 AND id = $2`,
		append([]any{row.NamespaceID, row.ID}, c.Args()...)...)
	return err
}

// read reads the unit of row (nil when it holds none).
func (f *fixture) read(row Row) *Columns {
	f.t.Helper()
	s := row.Table.NewScan()
	if err := f.st.Pool().QueryRow(f.ctx, `SELECT `+row.Table.UnitColumns()+` FROM `+row.Table.Name+` WHERE namespace_id = $1 AND id = $2`,
		row.NamespaceID, row.ID).Scan(s.Dest()...); err != nil {
		f.t.Fatal(err)
	}
	c, err := s.Columns()
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) open(k *Keyring, row Row) ([]string, error) {
	c := f.read(row)
	if c == nil {
		return nil, fmt.Errorf("no credentials in %s row %s", row.Table.Name, row.ID)
	}
	got, err := k.Open(f.ctx, f.st.Pool(), row, c)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(got))
	for i, s := range got {
		out[i] = s.Reveal()
	}
	return out, nil
}

func (f *fixture) mustOpen(k *Keyring, row Row, want ...string) {
	f.t.Helper()
	got, err := f.open(k, row)
	if err != nil {
		f.t.Fatalf("open %s row: %v", row.Table.Name, err)
	}
	if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		f.t.Fatalf("open %s row: got %d values, not the sealed ones", row.Table.Name, len(got))
	}
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if !errs.Has(err, code) {
		t.Fatalf("error %v, want code %s", err, code)
	}
}

type keyRow struct {
	ID         uuid.UUID
	Version    int32
	Active     bool
	Wrapped    []byte
	RootKeyURI string
	Shredded   bool
}

func (f *fixture) keys(ns uuid.UUID) []keyRow {
	f.t.Helper()
	rows, err := f.st.Pool().Query(f.ctx, `SELECT id, version, active, wrapped_key, root_key_uri, shredded_at IS NOT NULL
		FROM namespace_encryption_keys WHERE namespace_id = $1 ORDER BY version`, ns)
	if err != nil {
		f.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[keyRow])
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// TestRoundTrip: a container and an npm credential sealed and written in
// their rows open to the same values with another keyring over the same
// root key (another instance); the namespace key is created on first use
// as version 1 under the root key's URI, and reused by the second row.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("acme")
	root := rootKey(t, "base64key://sha256:test-a")
	k := keyring(t, f.st, root)

	hub := f.remoteRow(ContainerRemote, ns, "hub")
	npmjs := f.remoteRow(NpmRemote, ns, "npmjs")
	if c := f.read(hub); c != nil {
		t.Fatalf("a row without credentials scans as %+v", c)
	}
	user, pass := "robot$ci", strings.Repeat("p", MaxPlaintextChars)
	c := f.seal(k, hub, user, pass)
	f.seal(k, npmjs, "npm_tokenvalue")
	if c.KeyVersion != 1 || len(c.Ciphertexts) != 2 || len(c.WrappedDEK) != Overhead+keySize {
		t.Fatalf("sealed unit: version %d, %d ciphertexts, wrapped key of %d bytes", c.KeyVersion, len(c.Ciphertexts), len(c.WrappedDEK))
	}
	keys := f.keys(ns)
	if len(keys) != 1 || !keys[0].Active || keys[0].Version != 1 || keys[0].RootKeyURI != root.URI || keys[0].ID != c.KeyID {
		t.Fatalf("namespace keys after two seals: %+v", keys)
	}

	other := keyring(t, f.st, root)
	f.mustOpen(other, hub, user, pass)
	f.mustOpen(other, npmjs, "npm_tokenvalue")
	f.mustOpen(k, hub, user, pass) // from the cache this time

	// The plaintext ends in the database only as ciphertext.
	if got := f.read(hub); !bytes.Equal(got.Ciphertexts[0], c.Ciphertexts[0]) || got.KeyID != c.KeyID {
		t.Fatal("the stored unit is not the sealed one")
	}
}

// TestPlaintextNeverStored scans every byte of the credential rows and of
// the key rows, as text and as raw column values: neither the credentials
// (plain, hex or base64) nor the unwrapped namespace key appear.
func TestPlaintextNeverStored(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("acme")
	k := keyring(t, f.st, rootKey(t, "base64key://sha256:test-a"))
	user, pass, token := "user-7f3a9c1e", "password-5d2b8e4f6a", "npm_token-c0ffee1234"
	f.seal(k, f.remoteRow(ContainerRemote, ns, "hub"), user, pass)
	f.seal(k, f.remoteRow(MavenRemote, ns, "central"), user, pass)
	f.seal(k, f.remoteRow(NpmRemote, ns, "npmjs"), token)

	var kek [keySize]byte
	for _, ref := range k.cache.Keys() {
		kek, _ = k.cache.Peek(ref)
	}
	if kek == ([keySize]byte{}) {
		t.Fatal("no namespace key in the cache")
	}
	needles := [][]byte{kek[:], []byte(hex.EncodeToString(kek[:])), []byte(base64.StdEncoding.EncodeToString(kek[:]))}
	for _, s := range []string{user, pass, token} {
		needles = append(needles, []byte(s), []byte(hex.EncodeToString([]byte(s))), []byte(base64.StdEncoding.EncodeToString([]byte(s))))
	}
	scanned := 0
	for _, table := range []string{ContainerRemote.Name, MavenRemote.Name, NpmRemote.Name, "namespace_encryption_keys"} {
		rows, err := f.st.Pool().Query(f.ctx, `SELECT row_to_json(t)::text, t.* FROM `+table+` t`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				var b []byte
				switch x := v.(type) {
				case []byte:
					b = x
				case string:
					b = []byte(x)
				default:
					b = []byte(fmt.Sprint(x))
				}
				scanned += len(b)
				for _, n := range needles {
					if bytes.Contains(b, n) {
						t.Fatalf("%s stores a secret in the clear", table)
					}
				}
			}
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	if scanned < 500 {
		t.Fatalf("scanned only %d bytes", scanned)
	}
}

// TestWrongRootKey: a keyring whose root key has the recorded URI but
// other key material cannot unwrap the namespace key; one that does not
// hold the recorded URI says which root key is missing; one without any
// root key refuses to seal.
func TestWrongRootKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("acme")
	uri := "base64key://sha256:test-a"
	hub := f.remoteRow(ContainerRemote, ns, "hub")
	f.seal(keyring(t, f.st, rootKey(t, uri)), hub, "u", "p")

	_, err := f.open(keyring(t, f.st, rootKey(t, uri)), hub)
	wantCode(t, err, CodeUndecryptable)
	_, err = f.open(keyring(t, f.st, rootKey(t, "base64key://sha256:test-b")), hub)
	wantCode(t, err, CodeRootKeyUnknown)
	if !strings.Contains(err.Error(), uri) || !strings.Contains(err.Error(), "--previous-root-key-urls") {
		t.Fatalf("unknown root key message: %v", err)
	}
	none := keyring(t, f.st, nil)
	_, err = f.trySeal(none, f.remoteRow(NpmRemote, ns, "npmjs"), "t")
	wantCode(t, err, CodeRootKeyMissing)
	if errs.KindOf(err) != errs.KindUnavailable || !strings.Contains(err.Error(), "--root-key-url") {
		t.Fatalf("missing root key: kind %s, %v", errs.KindOf(err), err)
	}
}

// TestMovedCiphertext: a unit copied to another row of the same table and
// namespace, ciphertexts swapped between the columns of a row, a unit
// opened as a row of another table or namespace, and a wrapped namespace
// key copied to another namespace's key row: none decrypts.
func TestMovedCiphertext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns, other := f.namespace("acme"), f.namespace("other")
	root := rootKey(t, "base64key://sha256:test-a")
	k := keyring(t, f.st, root)
	a, b := f.remoteRow(ContainerRemote, ns, "a"), f.remoteRow(ContainerRemote, ns, "b")
	ca := f.seal(k, a, "alice", "alice-password")
	f.seal(k, b, "bob", "bob-password")

	if err := write(f.ctx, f.st.Pool(), b, ca); err != nil {
		t.Fatal(err)
	}
	_, err := f.open(k, b)
	wantCode(t, err, CodeUndecryptable)

	swapped := *ca
	swapped.Ciphertexts = [][]byte{ca.Ciphertexts[1], ca.Ciphertexts[0]}
	_, err = k.Open(f.ctx, f.st.Pool(), a, &swapped)
	wantCode(t, err, CodeUndecryptable)

	asMaven := Row{Table: MavenRemote, NamespaceID: ns, ID: a.ID}
	_, err = k.Open(f.ctx, f.st.Pool(), asMaven, ca)
	wantCode(t, err, CodeUndecryptable)

	f.mustOpen(k, a, "alice", "alice-password")

	// The other namespace gets its own key; its wrapped_key replaced by
	// acme's does not unwrap (the root-wrapped plaintext names its row).
	f.seal(k, f.remoteRow(NpmRemote, other, "npmjs"), "t")
	acmeKey, otherKey := f.keys(ns)[0], f.keys(other)[0]
	f.exec(`UPDATE namespace_encryption_keys SET wrapped_key = $3 WHERE namespace_id = $1 AND id = $2`, other, otherKey.ID, acmeKey.Wrapped)
	fresh := keyring(t, f.st, root)
	_, err = fresh.keyByID(f.ctx, f.st.Pool(), other, otherKey.ID)
	wantCode(t, err, CodeUndecryptable)
}

// TestInputLimits: the plaintext limits are checked before anything is
// encrypted or written.
func TestInputLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("acme")
	k := keyring(t, f.st, rootKey(t, "base64key://sha256:test-a"))
	hub := f.remoteRow(ContainerRemote, ns, "hub")
	for _, in := range [][]string{
		{"", "p"}, {"u", ""}, {"u", strings.Repeat("é", MaxPlaintextChars+1)}, {"u", "p\xff"}, {"u\x00", "p"},
	} {
		_, err := f.trySeal(k, hub, in...)
		wantCode(t, err, errs.InvalidInput)
	}
	if _, err := f.trySeal(k, hub, "only-one"); err == nil {
		t.Fatal("a container unit sealed from one value")
	}
	if n := len(f.keys(ns)); n != 0 {
		t.Fatalf("refused input created %d namespace keys", n)
	}
	if c := f.read(hub); c != nil {
		t.Fatal("refused input wrote credentials")
	}
	// At the limit, in characters rather than bytes.
	f.seal(k, hub, "u", strings.Repeat("é", MaxPlaintextChars))
}

// TestSecretNeverPrinted: every way a Secret can reach a log or a
// response shows the mask.
func TestSecretNeverPrinted(t *testing.T) {
	t.Parallel()
	s := NewSecret("hunter2-the-password")
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "secret", s, "list", []Secret{s})
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "secret", s)
	j, err := json.Marshal(map[string]any{"s": s, "p": &s})
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf("%v %+v %#v %s %q %x %X %d", s, s, s, s, s, s, s, s) + fmt.Sprint(s, []Secret{s}, struct{ S Secret }{s}) +
		logged.String() + string(j)
	if strings.Contains(out, "hunter2") || strings.Contains(out, hex.EncodeToString([]byte("hunter2"))) || !strings.Contains(out, Mask) {
		t.Fatalf("a secret printed: %s", out)
	}
	if s.Reveal() != "hunter2-the-password" {
		t.Fatal("Reveal")
	}
}

// TestConcurrentFirstUse: eight instances seal a first credential of one
// namespace at the same moment: exactly one namespace key is created and
// every row is wrapped under it and opens.
func TestConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("acme")
	root := rootKey(t, "base64key://sha256:test-a")
	const instances = 8
	rows := make([]Row, instances)
	for i := range rows {
		rows[i] = f.remoteRow(ContainerRemote, ns, fmt.Sprintf("r%d", i))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errc := make(chan error, instances)
	for i := range instances {
		k := keyring(t, f.st, root) // one per instance: no shared cache
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := f.trySeal(k, rows[i], fmt.Sprintf("user%d", i), fmt.Sprintf("pass%d", i)); err != nil {
				errc <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	keys := f.keys(ns)
	if len(keys) != 1 || !keys[0].Active || keys[0].Version != 1 {
		t.Fatalf("keys after %d concurrent first uses: %+v", instances, keys)
	}
	k := keyring(t, f.st, root)
	for i, r := range rows {
		if c := f.read(r); c.KeyID != keys[0].ID {
			t.Fatalf("row %d under key %s, not %s", i, c.KeyID, keys[0].ID)
		}
		f.mustOpen(k, r, fmt.Sprintf("user%d", i), fmt.Sprintf("pass%d", i))
	}
}
