package npm

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type npmFixture struct {
	ctx  context.Context
	pool *pgxpool.Pool
	s    *Store
	repo *Repository
}

func newNpmFixture(t *testing.T) *npmFixture {
	t.Helper()
	return newNpmFixtureWith(t, store.Options{})
}

func newNpmFixtureWith(t *testing.T, opts store.Options) *npmFixture {
	t.Helper()
	ctx := context.Background()
	pool := testdb.New(t)
	f := &npmFixture{ctx: ctx, pool: pool, s: New(store.New(pool, objstore.NewMem(), opts))}
	nsID, repoID, npmRepoID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
		  VALUES ($1, 'npmfix', 'test', 'organization', 'npmfix', 'organization', 'npmfix')`, []any{nsID}},
		{`INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, 'js', 2, 0, 0)`, []any{repoID, nsID}},
		{`INSERT INTO npm_repositories (id, namespace_id, repository_id) VALUES ($1, $2, $3)`, []any{npmRepoID, nsID, repoID}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if f.repo, err = f.s.ResolveRepository(ctx, "npmfix", "js"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *npmFixture) publish(t *testing.T, name, version string) PackageRef {
	t.Helper()
	res, err := f.publishTarball(name, version, npmTestTarball(t, version), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Package
}

func countingBuild(st *PackageState) (Documents, error) {
	return Documents{
		enum.NpmMetadataFull:        []byte(fmt.Sprintf(`{"versions":%d,"rev":%q}`, len(st.Versions), st.Rev())),
		enum.NpmMetadataDistTags:    []byte(fmt.Sprintf(`{"tags":%d}`, len(st.Tags))),
		enum.NpmMetadataAbbreviated: []byte(fmt.Sprintf(`{"corgi":%d}`, len(st.Versions))),
	}, nil
}

// storedFull reads the stored full document of a package.
func (f *npmFixture) storedFull(t *testing.T, name string) (string, bool) {
	t.Helper()
	c, err := f.s.CachedMetadata(f.ctx, f.repo, name, enum.NpmMetadataFull)
	if err != nil {
		t.Fatal(err)
	}
	if c.Blob == nil {
		return "", false
	}
	r, err := f.s.core.OpenBlobObject(f.ctx, c.Blob, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, _ := io.ReadAll(r)
	return string(b), true
}

// TestNpmRebuildRacesWrites: a write that lands while a rebuild is
// building makes the swap see a new fingerprint; the rebuild starts over
// and never stores a document older than the data.
func TestNpmRebuildRacesWrites(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	pkg := f.publish(t, "lib", "1.0.0")

	calls := 0
	build := func(st *PackageState) (Documents, error) {
		calls++
		if calls == 1 {
			f.publish(t, "lib", "1.1.0") // lands between the load and the swap
		}
		return countingBuild(st)
	}
	res, err := f.s.RebuildMetadata(f.ctx, f.repo, pkg, MetadataOptions{}, build)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || !res.Stored || !res.Rebuilt {
		t.Errorf("calls %d, stored %v", calls, res.Stored)
	}
	if doc, ok := f.storedFull(t, "lib"); !ok || doc[:13] != `{"versions":2` {
		t.Errorf("stored full document %q (fresh %v)", doc, ok)
	}

	// A package that changes under every attempt: the documents are
	// returned but not stored.
	if _, err := f.pool.Exec(f.ctx, `UPDATE npm_metadata_files SET expires_at = now()`); err != nil {
		t.Fatal(err)
	}
	n := 0
	res, err = f.s.RebuildMetadata(f.ctx, f.repo, pkg, MetadataOptions{}, func(st *PackageState) (Documents, error) {
		n++
		f.publish(t, "lib", fmt.Sprintf("2.0.%d", n))
		return countingBuild(st)
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored || n != 3 {
		t.Errorf("stored %v after %d attempts", res.Stored, n)
	}
	if _, ok := f.storedFull(t, "lib"); ok {
		t.Errorf("a stale document is fresh")
	}
	// Fresh rows are served without a rebuild.
	if _, err := f.s.RebuildMetadata(f.ctx, f.repo, pkg, MetadataOptions{}, countingBuild); err != nil {
		t.Fatal(err)
	}
	res, err = f.s.RebuildMetadata(f.ctx, f.repo, pkg, MetadataOptions{}, func(*PackageState) (Documents, error) {
		t.Fatal("rebuilt although fresh")
		return nil, nil
	})
	if err != nil || res.Rebuilt || res.Files[enum.NpmMetadataFull].Blob == nil {
		t.Errorf("fresh read: %v %+v", err, res)
	}
}

// TestNpmRebuildWhilePackageLocked: a writer holding the package row
// past the lock timeout does not fail a reader: the rebuild serves the
// documents it built, uncached, and a later rebuild stores them.
func TestNpmRebuildWhilePackageLocked(t *testing.T) {
	t.Parallel()
	f := newNpmFixtureWith(t, store.Options{LockTimeout: 150 * time.Millisecond})
	pkg := f.publish(t, "held", "1.0.0")

	tx, err := f.pool.Begin(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(f.ctx) }()
	if _, err := tx.Exec(f.ctx, `SELECT 1 FROM npm_packages WHERE id = $1 FOR UPDATE`, pkg.PackageID); err != nil {
		t.Fatal(err)
	}
	res, err := f.s.RebuildMetadata(f.ctx, f.repo, pkg, MetadataOptions{}, countingBuild)
	if err != nil {
		t.Fatalf("rebuild under a held package lock: %v", err)
	}
	if res.Stored || string(res.Files[enum.NpmMetadataFull].Data) != `{"versions":1,"rev":"`+res.Rev+`"}` {
		t.Errorf("stored %v, full document %q", res.Stored, res.Files[enum.NpmMetadataFull].Data)
	}
	if err := tx.Rollback(f.ctx); err != nil {
		t.Fatal(err)
	}
	if res, err = f.s.RebuildMetadata(f.ctx, f.repo, pkg, MetadataOptions{}, countingBuild); err != nil || !res.Stored {
		t.Fatalf("rebuild after the lock: stored %v, %v", res != nil && res.Stored, err)
	}
}

// TestNpmPickLatest: the highest release, else the highest prerelease.
func TestNpmPickLatest(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		versions []string
		want     string
	}{
		{[]string{"1.0.0", "2.0.0-beta.1", "1.5.0"}, "1.5.0"},
		{[]string{"2.0.0-beta.1", "2.0.0-beta.10", "2.0.0-beta.2"}, "2.0.0-beta.10"},
		{[]string{"0.9.0", "0.10.0"}, "0.10.0"},
	} {
		var vs []activeVersion
		for _, v := range c.versions {
			vs = append(vs, activeVersion{version: v})
		}
		if got := pickLatest(vs).version; got != c.want {
			t.Errorf("%v: %s, want %s", c.versions, got, c.want)
		}
	}
}

// TestNpmPackageJSONSchema: the schema accepts what publish stores and
// refuses wrong types.
func TestNpmPackageJSONSchema(t *testing.T) {
	t.Parallel()
	ok := `{"name":"a","version":"1.0.0","_id":"a@1.0.0","_hasShrinkwrap":false,"_npmUser":{"name":"admin"},
		"dist":{"integrity":"sha512-` + base64.StdEncoding.EncodeToString(make([]byte, 64)) + `","shasum":"` + hex.EncodeToString(make([]byte, 20)) + `"},
		"dependencies":{"b":"^1"},"custom":{"any":"thing"}}`
	if err := ValidatePackageJSON([]byte(ok)); err != nil {
		t.Fatalf("valid document refused: %v", err)
	}
	for _, bad := range []string{
		`{}`, `[]`, `nope`,
		`{"name":"a","version":"1.0.0","_id":"a@1.0.0","_hasShrinkwrap":false,"_npmUser":{"name":"admin"},"dist":{"shasum":"x"}}`,
	} {
		if err := ValidatePackageJSON([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(ok), &m)
	for field, value := range map[string]any{"dependencies": map[string]any{"b": 1}, "deprecated": "", "bin": 3, "dist": map[string]any{"integrity": "x", "shasum": "y", "tarball": "z"}} {
		m2 := map[string]any{}
		for k, v := range m {
			m2[k] = v
		}
		m2[field] = value
		b, _ := json.Marshal(m2)
		if err := ValidatePackageJSON(b); err == nil {
			t.Errorf("%s = %v accepted", field, value)
		}
	}
}

// TestNpmTrash: delete and restore versions and packages by id; restores
// refuse to collide with newer rows; the cache follows.
func TestNpmTrash(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	f.publish(t, "lib", "1.0.0")
	pkg := f.publish(t, "lib", "2.0.0")
	versionID := func(v string) uuid.UUID {
		var id uuid.UUID
		if err := f.pool.QueryRow(f.ctx, `SELECT id FROM npm_versions WHERE version = $1`, v).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	latest := func() string {
		var v string
		_ = f.pool.QueryRow(f.ctx, `SELECT v.version FROM npm_tags t JOIN npm_versions v ON v.id = t.npm_version_id WHERE t.name = 'latest' AND t.npm_package_id = $1`, pkg.PackageID).Scan(&v)
		return v
	}
	v2 := versionID("2.0.0")
	if err := f.s.DeleteVersionByID(f.ctx, f.repo.NamespaceID, v2, nil); err != nil {
		t.Fatal(err)
	}
	if latest() != "1.0.0" {
		t.Errorf("latest after delete: %q", latest())
	}
	if err := f.s.DeleteVersionByID(f.ctx, f.repo.NamespaceID, v2, nil); !store.HasCode(err, CodeTrashState) {
		t.Errorf("second delete: %v", err)
	}
	if err := f.s.RestoreVersion(f.ctx, f.repo.NamespaceID, v2, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.Tarball(f.ctx, f.repo, "lib", "2.0.0", "lib-2.0.0.tgz"); err != nil {
		t.Errorf("restored tarball: %v", err)
	}
	// latest stays where unpublish moved it (a restore does not retag).
	if latest() != "1.0.0" {
		t.Errorf("latest after restore: %q", latest())
	}

	// The whole package.
	if err := f.s.DeletePackageByID(f.ctx, f.repo.NamespaceID, pkg.PackageID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.s.CachedMetadata(f.ctx, f.repo, "lib", enum.NpmMetadataFull); !store.HasCode(err, CodePackageUnknown) {
		t.Errorf("trashed package: %v", err)
	}
	if err := f.s.RestorePackage(f.ctx, f.repo.NamespaceID, pkg.PackageID, nil); err != nil {
		t.Fatal(err)
	}
	st, err := f.s.LoadPackageState(f.ctx, pkg)
	if err != nil || len(st.Versions) != 2 {
		t.Fatalf("restored package: %v %+v", err, st)
	}
	// Trash it again, publish the name anew: the old package cannot come
	// back, nor can its versions be published again.
	if err := f.s.DeletePackageByID(f.ctx, f.repo.NamespaceID, pkg.PackageID, nil); err != nil {
		t.Fatal(err)
	}
	f.publish(t, "lib", "3.0.0")
	if err := f.s.RestorePackage(f.ctx, f.repo.NamespaceID, pkg.PackageID, nil); !store.HasCode(err, CodeConflict) {
		t.Errorf("restore over a new package: %v", err)
	}
	if err := f.s.RestoreVersion(f.ctx, f.repo.NamespaceID, v2, nil); !store.HasCode(err, CodeConflict) {
		t.Errorf("restore of a version of an old package over a new one: %v", err)
	}
}
