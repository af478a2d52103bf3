package credentials

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

func (f *fixture) rotate(k *Keyring, row Row) *KeyVersion {
	f.t.Helper()
	var v *KeyVersion
	if err := f.st.WithTx(f.ctx, func(tx pgx.Tx) error {
		var err error
		v, err = k.RotateNamespaceKey(f.ctx, tx, row.NamespaceID)
		return err
	}); err != nil {
		f.t.Fatalf("rotate: %v", err)
	}
	return v
}

// tryDelete deletes a key row in a transaction it rolls back, and returns
// the error: ON DELETE RESTRICT refuses while a credential row references
// the key.
func (f *fixture) tryDelete(row Row, id any) error {
	tx, err := f.st.Pool().Begin(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(f.ctx) }()
	_, err = tx.Exec(f.ctx, `DELETE FROM namespace_encryption_keys WHERE namespace_id = $1 AND id = $2`, row.NamespaceID, id)
	return err
}

// TestNamespaceKeyRotation: rows of the three tables under version 1; a
// rotation makes version 2 active and leaves them under version 1 (which
// cannot be deleted while they reference it); the rewrap, in batches of
// two, moves their data keys to version 2 without touching their
// ciphertext; version 1 stays, deactivated and unreferenced. A second
// rotation does the same again.
func TestNamespaceKeyRotation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("acme")
	k := keyring(t, f.st, rootKey(t, "base64key://sha256:test-a"))
	type sealed struct {
		row  Row
		vals []string
		c    *Columns
	}
	var all []sealed
	for i, tbl := range []*Table{ContainerRemote, ContainerRemote, ContainerRemote, MavenRemote, NpmRemote} {
		row := f.remoteRow(tbl, ns, "r"+string(rune('a'+i)))
		vals := []string{"user-" + row.ID.String(), "pass-" + row.ID.String()}[:len(tbl.Columns)]
		all = append(all, sealed{row, vals, f.seal(k, row, vals...)})
	}
	f.remoteRow(ContainerRemote, ns, "anonymous") // no credentials: left alone

	v1 := f.keys(ns)[0]
	v2 := f.rotate(k, all[0].row)
	if v2.Version != 2 {
		t.Fatalf("rotation made version %d", v2.Version)
	}
	keys := f.keys(ns)
	if len(keys) != 2 || keys[0].Active || !keys[1].Active || keys[1].ID != v2.ID {
		t.Fatalf("keys after the rotation: %+v", keys)
	}
	if err := f.tryDelete(all[0].row, v1.ID); !db.IsPgCode(err, pgerrcode.ForeignKeyViolation, "") {
		t.Fatalf("deleting a referenced key version: %v", err)
	}
	status, err := k.NamespaceKeys(f.ctx, ns)
	if err != nil || len(status) != 2 || status[0].Rows != len(all) || status[1].Rows != 0 {
		t.Fatalf("status before the rewrap: %+v %v", status, err)
	}

	res, err := k.RewrapNamespace(f.ctx, ns, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Total() != len(all) || res.Rewrapped[ContainerRemote.Name] != 3 || res.Active.ID != v2.ID {
		t.Fatalf("rewrap: %+v", res)
	}
	for _, s := range all {
		got := f.read(s.row)
		if got.KeyID != v2.ID || got.KeyVersion != 2 || bytes.Equal(got.WrappedDEK, s.c.WrappedDEK) {
			t.Fatalf("%s row after the rewrap: key %s v%d", s.row.Table.Name, got.KeyID, got.KeyVersion)
		}
		for i := range got.Ciphertexts {
			if !bytes.Equal(got.Ciphertexts[i], s.c.Ciphertexts[i]) {
				t.Fatalf("%s row: the rewrap changed ciphertext %d", s.row.Table.Name, i)
			}
		}
		f.mustOpen(keyring(t, f.st, k.root), s.row, s.vals...)
	}
	status, err = k.NamespaceKeys(f.ctx, ns)
	if err != nil || status[0].Rows != 0 || status[0].Active || status[1].Rows != len(all) {
		t.Fatalf("status after the rewrap: %+v %v", status, err)
	}
	if err := f.tryDelete(all[0].row, v1.ID); err != nil {
		t.Fatalf("version 1 is no longer referenced, yet: %v", err)
	}
	if again, err := k.RewrapNamespace(f.ctx, ns, 2); err != nil || again.Total() != 0 {
		t.Fatalf("a second rewrap: %+v %v", again, err)
	}

	v3 := f.rotate(k, all[0].row)
	if res, err := k.RewrapNamespace(f.ctx, ns, 100); err != nil || res.Total() != len(all) || v3.Version != 3 {
		t.Fatalf("second rotation: v%d, %+v %v", v3.Version, res, err)
	}
	if keys := f.keys(ns); len(keys) != 3 || keys[0].Active || keys[1].Active || !keys[2].Active || len(keys[0].Wrapped) == 0 {
		t.Fatalf("keys after two rotations: %+v", keys)
	}
	for _, s := range all {
		f.mustOpen(k, s.row, s.vals...)
	}
}

// TestRotationWaitsForSeal: a rotation that starts while a credential is
// being sealed under version 1 waits for that transaction, so the row it
// wrote is found by the rewrap and ends under version 2.
func TestRotationWaitsForSeal(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("acme")
	k := keyring(t, f.st, rootKey(t, "base64key://sha256:test-a"))
	first := f.remoteRow(ContainerRemote, ns, "first")
	f.seal(k, first, "u", "p")
	late := f.remoteRow(ContainerRemote, ns, "late")

	tx, err := f.st.Pool().Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(f.ctx) }()
	c, err := k.Seal(f.ctx, tx, late, secretsOf("late-user", "late-pass")...)
	if err != nil || c.KeyVersion != 1 {
		t.Fatalf("seal: v%v %v", c, err)
	}
	rotated := make(chan *KeyVersion, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := f.st.WithTx(f.ctx, func(tx pgx.Tx) error {
			v, err := k.RotateNamespaceKey(f.ctx, tx, ns)
			rotated <- v
			return err
		})
		if err != nil {
			t.Error(err)
		}
	}()
	select {
	case v := <-rotated:
		t.Fatalf("the rotation (v%d) did not wait for the sealing transaction", v.Version)
	case <-time.After(300 * time.Millisecond):
	}
	if err := write(f.ctx, tx, late, c); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	v2 := <-rotated
	if res, err := k.RewrapNamespace(f.ctx, ns, 10); err != nil || res.Total() != 2 {
		t.Fatalf("rewrap: %+v %v", res, err)
	}
	if got := f.read(late); got.KeyID != v2.ID {
		t.Fatalf("the late row is under key v%d", got.KeyVersion)
	}
	f.mustOpen(k, late, "late-user", "late-pass")
}

// TestRootKeyRotation: namespace keys of three namespaces under root A,
// one namespace shredded; a keyring with root B and A as previous rewraps
// the two live keys (batches of one) and leaves the tombstone alone; a
// keyring holding only B then opens every live credential.
func TestRootKeyRotation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := rootKey(t, "base64key://sha256:root-a"), rootKey(t, "base64key://sha256:root-b")
	ka := keyring(t, f.st, a)
	var rows []Row
	for _, slug := range []string{"one", "two", "gone"} {
		row := f.remoteRow(NpmRemote, f.namespace(slug), "npmjs")
		f.seal(ka, row, "token-"+slug)
		rows = append(rows, row)
	}
	f.exec(`UPDATE namespaces SET deleted_at = now(), purged_at = now() WHERE slug = 'gone'`)

	kb := keyring(t, f.st, b, a)
	counts, err := kb.RootKeys(f.ctx)
	if err != nil || len(counts) != 1 || counts[0].URI != a.URI || counts[0].Keys != 2 || !counts[0].Known || counts[0].Current {
		t.Fatalf("root keys before: %+v %v", counts, err)
	}
	n, err := kb.RewrapRoot(f.ctx, a.URI, 1)
	if err != nil || n != 2 {
		t.Fatalf("rewrap root: %d %v", n, err)
	}
	counts, err = kb.RootKeys(f.ctx)
	if err != nil || len(counts) != 1 || counts[0].URI != b.URI || counts[0].Keys != 2 || !counts[0].Current {
		t.Fatalf("root keys after: %+v %v", counts, err)
	}
	onlyB := keyring(t, f.st, b)
	f.mustOpen(onlyB, rows[0], "token-one")
	f.mustOpen(onlyB, rows[1], "token-two")
	_, err = f.open(onlyB, rows[2])
	wantCode(t, err, CodeShredded)
	gone := f.keys(rows[2].NamespaceID)
	if len(gone) != 1 || gone[0].RootKeyURI != a.URI || len(gone[0].Wrapped) != 0 {
		t.Fatalf("the tombstone after a root rotation: %+v", gone)
	}
	// Root A's keys are gone: a keyring with only A opens nothing live.
	_, err = f.open(keyring(t, f.st, a), rows[0])
	wantCode(t, err, CodeRootKeyUnknown)

	if _, err := onlyB.RewrapRoot(f.ctx, a.URI, 1); !errs.Has(err, CodeRootKeyUnknown) {
		t.Fatalf("rewrap from a root key the instance does not hold: %v", err)
	}
}

// TestShred: purging a namespace turns every key version into a
// tombstone in the purging transaction; reads fail with CodeShredded even
// on a keyring that has the key cached; nothing can be sealed or rotated
// there again; the tombstone CHECKs refuse reviving a key.
func TestShred(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns, kept := f.namespace("acme"), f.namespace("kept")
	k := keyring(t, f.st, rootKey(t, "base64key://sha256:test-a"))
	hub := f.remoteRow(ContainerRemote, ns, "hub")
	f.seal(k, hub, "u", "p")
	f.rotate(k, hub)
	keptRow := f.remoteRow(NpmRemote, kept, "npmjs")
	f.seal(k, keptRow, "kept-token")
	f.mustOpen(k, hub, "u", "p") // caches the key

	// The purge rolled back shreds nothing.
	tx, err := f.st.Pool().Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(f.ctx, `UPDATE namespaces SET deleted_at = now(), purged_at = now() WHERE id = $1`, ns); err != nil {
		t.Fatal(err)
	}
	var shreddedInTx int
	if err := tx.QueryRow(f.ctx, `SELECT count(*) FROM namespace_encryption_keys WHERE namespace_id = $1 AND shredded_at IS NOT NULL`, ns).Scan(&shreddedInTx); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(f.ctx)
	if shreddedInTx != 2 {
		t.Fatalf("inside the purging transaction %d of 2 keys are shredded", shreddedInTx)
	}
	f.mustOpen(k, hub, "u", "p")

	f.exec(`UPDATE namespaces SET deleted_at = now(), purged_at = now() WHERE id = $1`, ns)
	for _, key := range f.keys(ns) {
		if !key.Shredded || key.Active || len(key.Wrapped) != 0 {
			t.Fatalf("key v%d after the purge: %+v", key.Version, key)
		}
	}
	_, err = f.open(k, hub)
	wantCode(t, err, CodeShredded)
	_, err = f.trySeal(k, f.remoteRow(NpmRemote, ns, "npmjs"), "t")
	wantCode(t, err, CodeShredded)
	err = f.st.WithTx(f.ctx, func(tx pgx.Tx) error {
		_, err := k.RotateNamespaceKey(f.ctx, tx, ns)
		return err
	})
	wantCode(t, err, CodeShredded)
	if res, err := k.RewrapNamespace(f.ctx, ns, 10); err != nil || res.Total() != 0 || res.Active != nil {
		t.Fatalf("rewrap of a shredded namespace: %+v %v", res, err)
	}
	if n := len(f.keys(ns)); n != 2 {
		t.Fatalf("%d key rows after the purge, want the 2 tombstones", n)
	}
	// Another namespace is untouched.
	f.mustOpen(k, keptRow, "kept-token")

	key := f.keys(ns)[1]
	for _, revive := range []string{
		`UPDATE namespace_encryption_keys SET active = true WHERE namespace_id = $1 AND id = $2`,
		`UPDATE namespace_encryption_keys SET wrapped_key = '\x01' WHERE namespace_id = $1 AND id = $2`,
		`UPDATE namespace_encryption_keys SET shredded_at = NULL WHERE namespace_id = $1 AND id = $2`,
	} {
		_, err := f.st.Pool().Exec(context.Background(), revive, ns, key.ID)
		if !db.IsPgCode(err, pgerrcode.CheckViolation, "") {
			t.Fatalf("%s: %v", revive, err)
		}
	}
}

// TestSealWaitsForRotation: a seal that starts while a rotation holds the
// active key waits for it and then wraps under the new version; no third
// key is created on the way.
func TestSealWaitsForRotation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ns := f.namespace("acme")
	k := keyring(t, f.st, rootKey(t, "base64key://sha256:test-a"))
	first := f.remoteRow(ContainerRemote, ns, "first")
	f.seal(k, first, "u", "p")
	late := f.remoteRow(ContainerRemote, ns, "late")

	tx, err := f.st.Pool().Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(f.ctx) }()
	v2, err := k.RotateNamespaceKey(f.ctx, tx, ns)
	if err != nil {
		t.Fatal(err)
	}
	sealed := make(chan *Columns, 1)
	other := keyring(t, f.st, k.root) // another instance
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := f.trySeal(other, late, "late-user", "late-pass")
		if err != nil {
			t.Error(err)
		}
		sealed <- c
	}()
	select {
	case <-sealed:
		t.Fatal("the seal did not wait for the rotation")
	case <-time.After(300 * time.Millisecond):
	}
	if err := tx.Commit(f.ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if c := <-sealed; c == nil || c.KeyID != v2.ID || c.KeyVersion != 2 {
		t.Fatalf("the late seal is under %+v, want version 2", c)
	}
	if keys := f.keys(ns); len(keys) != 2 || !keys[1].Active {
		t.Fatalf("keys: %+v", keys)
	}
	f.mustOpen(k, late, "late-user", "late-pass")
}
