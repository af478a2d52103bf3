package maven

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// fixture is a fresh database with one namespace and one hosted
// Maven repository, and a Store over it and a file bucket.
type fixture struct {
	st   *Store
	core *store.Store
	t    *Target
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	pool := testdb.New(t)
	objs, err := objstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objs.Close() })
	core := store.New(pool, objs, store.Options{})
	st := New(core)
	ns, repo, mr := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
		  VALUES ($1, 'acme', 'test', 'organization', 'acme', 'organization', 'acme')`, []any{ns}},
		{`INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, 'releases', 1, 0, 0)`, []any{repo, ns}},
		{`INSERT INTO maven_repositories (id, namespace_id, repository_id) VALUES ($1, $2, $3)`, []any{mr, ns, repo}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	tg, err := st.ResolveTarget(ctx, "acme", "releases")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, core: core, t: tg}
}

func (f *fixture) put(t *testing.T, version, name, body string) *PutResult {
	t.Helper()
	res, err := f.st.PutFile(context.Background(), f.t, Put{
		FileRef: FileRef{GroupID: "com.example", ArtifactID: "lib", Version: version, FileName: name},
		Size:    int64(len(body)),
	}, strings.NewReader(body))
	if err != nil {
		t.Fatalf("put %s %s: %v", version, name, err)
	}
	return res
}

// metadata returns the stored package-level document ("" when none).
func (f *fixture) metadata(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	mf, err := f.st.File(ctx, f.t, FileRef{GroupID: "com.example", ArtifactID: "lib", FileName: mavenlayout.MetadataFile})
	if store.HasCode(err, CodeNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.core.OpenBlobObject(ctx, &mf.Blob, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var versionTagRE = regexp.MustCompile(`<version>([^<]+)</version>`)

func listed(doc string) []string {
	var out []string
	for _, m := range versionTagRE.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestMavenSoftDeleteAndRestore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.put(t, "1.0", "lib-1.0.jar", "one")
	v11 := f.put(t, "1.1", "lib-1.1.jar", "eleven")
	if got := listed(f.metadata(t)); fmt.Sprint(got) != "[1.0 1.1]" {
		t.Fatalf("versions %v", got)
	}
	vid := *v11.File.VersionID
	if _, err := f.st.SoftDeleteVersion(ctx, f.t.NamespaceID, vid); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.SoftDeleteVersion(ctx, f.t.NamespaceID, vid); !store.HasCode(err, CodeStateConflict) {
		t.Fatalf("second delete: %v", err)
	}
	md := f.metadata(t)
	if got := listed(md); fmt.Sprint(got) != "[1.0]" || !strings.Contains(md, "<release>1.0</release>") {
		t.Fatalf("after delete:\n%s", md)
	}
	ref := FileRef{GroupID: "com.example", ArtifactID: "lib", Version: "1.1", FileName: "lib-1.1.jar"}
	if _, err := f.st.File(ctx, f.t, ref); !store.HasCode(err, CodeNotFound) {
		t.Fatalf("file of a trashed version: %v", err)
	}
	// A re-deploy after the delete is a new version; the trashed one can
	// only come back once the name is free again.
	again := f.put(t, "1.1", "lib-1.1.jar", "eleven, again")
	if _, err := f.st.RestoreVersion(ctx, f.t.NamespaceID, vid); !store.HasCode(err, CodeStateConflict) {
		t.Fatalf("restore over an active namesake: %v", err)
	}
	if _, err := f.st.SoftDeleteVersion(ctx, f.t.NamespaceID, *again.File.VersionID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.RestoreVersion(ctx, f.t.NamespaceID, vid); err != nil {
		t.Fatal(err)
	}
	if got := listed(f.metadata(t)); fmt.Sprint(got) != "[1.0 1.1]" {
		t.Fatalf("after restore %v", got)
	}
	mf, err := f.st.File(ctx, f.t, ref)
	if err != nil || mf.Blob.Size != int64(len("eleven")) {
		t.Fatalf("restored file: %+v %v", mf, err)
	}

	// Package delete marks the package row only.
	pkg := v11.File.PackageID
	if _, err := f.st.SoftDeletePackage(ctx, f.t.NamespaceID, pkg); err != nil {
		t.Fatal(err)
	}
	if f.metadata(t) != "" {
		t.Fatal("metadata of a trashed package is served")
	}
	if _, err := f.st.File(ctx, f.t, ref); !store.HasCode(err, CodeNotFound) {
		t.Fatalf("file of a trashed package: %v", err)
	}
	if _, err := f.st.SoftDeleteVersion(ctx, f.t.NamespaceID, vid); !store.HasCode(err, CodeStateConflict) {
		t.Fatalf("version delete under a trashed package: %v", err)
	}
	if _, err := f.st.RestorePackage(ctx, f.t.NamespaceID, pkg); err != nil {
		t.Fatal(err)
	}
	if got := listed(f.metadata(t)); fmt.Sprint(got) != "[1.0 1.1]" {
		t.Fatalf("after package restore %v", got)
	}
	if _, err := f.st.RestorePackage(ctx, f.t.NamespaceID, uuid.Must(uuid.NewV7())); !store.HasCode(err, CodeUnknown) {
		t.Fatalf("restore of an unknown package: %v", err)
	}
}

func TestMavenListings(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for i := range 5 {
		v := fmt.Sprintf("1.%d", i)
		f.put(t, v, "lib-"+v+".pom", "pom "+v)
		f.put(t, v, "lib-"+v+".jar", "jar "+v)
	}
	pkgs, more, err := f.st.ListPackages(ctx, f.t.NamespaceID, f.t.RepositoryID, nil, 10)
	if err != nil || more || len(pkgs) != 1 || pkgs[0].GroupID != "com.example" || pkgs[0].ArtifactID != "lib" {
		t.Fatalf("packages %+v %v %v", pkgs, more, err)
	}
	var all []string
	var after *string
	for {
		vs, more, err := f.st.ListVersions(ctx, f.t.NamespaceID, pkgs[0].ID, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			all = append(all, v.Version)
			if want := int64(len("pom "+v.Version) + len("jar "+v.Version)); v.SizeBytes != want {
				t.Errorf("version %s size %d, want %d", v.Version, v.SizeBytes, want)
			}
		}
		if !more {
			break
		}
		after = &vs[len(vs)-1].Version
	}
	if fmt.Sprint(all) != "[1.0 1.1 1.2 1.3 1.4]" {
		t.Fatalf("versions %v", all)
	}
	vs, _, _ := f.st.ListVersions(ctx, f.t.NamespaceID, pkgs[0].ID, nil, 1)
	files, more, err := f.st.ListFiles(ctx, f.t.NamespaceID, pkgs[0].ID, &vs[0].ID, nil, 10)
	if err != nil || more || len(files) != 2 || files[0].FileName != "lib-1.0.jar" || files[1].FileName != "lib-1.0.pom" || files[0].Size != 7 {
		t.Fatalf("files %+v %v %v", files, more, err)
	}
	pf, _, err := f.st.ListFiles(ctx, f.t.NamespaceID, pkgs[0].ID, nil, nil, 10)
	if err != nil || len(pf) != 1 || pf[0].FileName != mavenlayout.MetadataFile || pf[0].VersionID != nil {
		t.Fatalf("package files %+v %v", pf, err)
	}
}

// Writers of versions and metadata uploads race; whatever the schedule,
// the stored document ends up listing every version, and the metadata
// rows and attachments stay one per document.
func TestMavenMetadataRefreshRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		v := fmt.Sprintf("2.%d", i)
		go func() {
			defer wg.Done()
			_, err := f.st.PutFile(ctx, f.t, Put{
				FileRef: FileRef{GroupID: "com.example", ArtifactID: "lib", Version: v, FileName: "lib-" + v + ".pom"},
				Size:    -1,
			}, bytes.NewReader([]byte("pom "+v)))
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := f.st.PutMetadata(ctx, f.t, FileRef{GroupID: "com.example", ArtifactID: "lib"},
				strings.NewReader(`<metadata><groupId>com.example</groupId><artifactId>lib</artifactId></metadata>`))
			if store.HasCode(err, CodeNothingToDescribe) {
				err = nil // no version committed yet
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := listed(f.metadata(t)); len(got) != n {
		t.Fatalf("metadata lists %d versions, want %d: %v", len(got), n, got)
	}
	var rows, atts int
	pool := f.core.Pool()
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM maven_files WHERE maven_version_id IS NULL`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM blob_storage_attachments) - (SELECT count(*) FROM maven_files)`).Scan(&atts); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || atts != 0 {
		t.Fatalf("%d package-level rows, %d extra attachments", rows, atts)
	}
}

// The management API pages versions highest first in Maven's order, not
// by version string: 1.10 above 1.9, a release above its rc, SNAPSHOT of
// 2.0 above 1.x; Maven-equal versions ("1.0", "1.0.0") are ordered by
// string so the cursor stays unambiguous, and a cursor whose version is
// gone (deleted meanwhile) still resumes at the right place.
func TestMavenVersionsOfPackagesMavenOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for _, v := range []string{"1.9", "1.0-rc1", "1.10", "1.0", "2.0-SNAPSHOT", "1.0.0"} {
		f.put(t, v, "lib-"+v+".pom", "pom "+v)
	}
	pkgs, _, err := f.st.ListPackages(ctx, f.t.NamespaceID, f.t.RepositoryID, nil, 10)
	if err != nil || len(pkgs) != 1 {
		t.Fatalf("packages %+v %v", pkgs, err)
	}
	pkg := pkgs[0].ID
	var all []string
	var after *string
	for range 10 {
		m, err := f.st.VersionsOfPackages(ctx, f.t.NamespaceID, []uuid.UUID{pkg}, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		page := m[pkg]
		if len(page) > 3 {
			t.Fatalf("page of %d rows for limit 2", len(page))
		}
		for _, v := range page[:min(2, len(page))] {
			if v.PackageID != pkg || v.SizeBytes != int64(len("pom "+v.Version)) {
				t.Errorf("row %+v", v)
			}
			all = append(all, v.Version)
		}
		if len(page) <= 2 {
			break
		}
		after = &page[1].Version
	}
	if want := "[2.0-SNAPSHOT 1.10 1.9 1.0.0 1.0 1.0-rc1]"; fmt.Sprint(all) != want {
		t.Fatalf("versions %v, want %s", all, want)
	}
	gone := "1.5"
	m, err := f.st.VersionsOfPackages(ctx, f.t.NamespaceID, []uuid.UUID{pkg}, &gone, 10)
	if err != nil {
		t.Fatal(err)
	}
	var rest []string
	for _, v := range m[pkg] {
		rest = append(rest, v.Version)
	}
	if fmt.Sprint(rest) != "[1.0.0 1.0 1.0-rc1]" {
		t.Fatalf("after %s: %v", gone, rest)
	}
	if m, err := f.st.VersionsOfPackages(ctx, f.t.NamespaceID, []uuid.UUID{uuid.New()}, nil, 10); err != nil || len(m) != 0 {
		t.Fatalf("unknown package: %v %v", m, err)
	}
}

// TestResolveTargetFile: the resolve of a download also finds the file,
// version-level or package-level, in the target's repository only, with
// its checksums and without its blob row; a file not stored, a name that
// is not a hosted repository and an unknown namespace find none.
func TestResolveTargetFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	jar := f.put(t, "1.0", "lib-1.0.jar", "jar bytes")
	if _, err := f.core.Pool().Exec(ctx, `INSERT INTO repositories (id, namespace_id, name, format, kind, visibility)
		VALUES ($1, $2, 'all', $3, $4, 0)`, uuid.Must(uuid.NewV7()), f.t.NamespaceID, int16(enum.FormatMaven), int16(enum.KindVirtual)); err != nil {
		t.Fatal(err)
	}
	empty := uuid.Must(uuid.NewV7())
	if _, err := f.core.Pool().Exec(ctx, `
		WITH r AS (INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, 'empty', $3, $4, 0))
		INSERT INTO maven_repositories (id, namespace_id, repository_id) VALUES ($5, $2, $1)`,
		empty, f.t.NamespaceID, int16(enum.FormatMaven), int16(enum.KindHosted), uuid.Must(uuid.NewV7())); err != nil {
		t.Fatal(err)
	}
	ref := func(version, name string) FileRef {
		return FileRef{GroupID: "com.example", ArtifactID: "lib", Version: version, FileName: name}
	}
	for _, c := range []struct {
		repository string
		ref        FileRef
		found      bool
	}{
		{"releases", ref("1.0", "lib-1.0.jar"), true},
		{"releases", ref("", mavenlayout.MetadataFile), true},
		{"releases", ref("1.0", "lib-1.0.pom"), false},
		{"releases", ref("2.0", "lib-1.0.jar"), false},
		{"all", ref("1.0", "lib-1.0.jar"), false},
		{"empty", ref("1.0", "lib-1.0.jar"), false},
		{"empty", ref("", mavenlayout.MetadataFile), false},
	} {
		tg, file, err := f.st.ResolveTargetFile(ctx, "acme", c.repository, c.ref)
		if err != nil {
			t.Fatalf("%s %s: %v", c.repository, c.ref, err)
		}
		if tg.RepositoryName != c.repository || (file != nil) != c.found {
			t.Errorf("%s %s: target %q, file %+v, want found %v", c.repository, c.ref, tg.RepositoryName, file, c.found)
		}
		if file == nil {
			continue
		}
		if file.Blob.ObjectStorageKey != "" {
			t.Errorf("%s: the blob row came with the file", c.ref)
		}
		if err := f.st.FileBlob(ctx, tg, file); err != nil || file.Blob.Size == 0 {
			t.Errorf("%s: FileBlob %v, size %d", c.ref, err, file.Blob.Size)
		}
		if c.ref.Version == "" {
			continue
		}
		got, want := file.Checksums, jar.File.Checksums
		if file.ID != jar.File.ID || *got.MD5 != *want.MD5 || got.SHA1 != want.SHA1 || got.SHA256 != want.SHA256 || got.SHA512 != want.SHA512 {
			t.Errorf("%s: file %+v, want %+v", c.ref, file, jar.File)
		}
	}
	for _, ns := range []string{"nobody", "acme\x00"} {
		if _, _, err := f.st.ResolveTargetFile(ctx, ns, "releases", ref("1.0", "lib-1.0.jar")); !store.HasCode(err, CodeRepositoryUnknown) {
			t.Errorf("namespace %q: %v, want CodeRepositoryUnknown", ns, err)
		}
	}
}
