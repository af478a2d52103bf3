package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// cacheFixture caches content through the remote write functions the
// protocols use, in two namespaces.
type cacheFixture struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	clock *fakeclock.Clock
	st    *store.Store
	cs    *container.Store
	ms    *maven.Store
	ns    *npmstore.Store
	cat   *Store
}

func newCacheFixture(t *testing.T) *cacheFixture {
	t.Helper()
	pool := testdb.New(t)
	clock := fakeclock.New(time.Now().UTC().Truncate(time.Microsecond))
	f := &cacheFixture{t: t, ctx: context.Background(), pool: pool, clock: clock,
		st: testsupport.Store(t, testsupport.StoreOptions{Pool: pool, Mem: true, Store: store.Options{Clock: clock}})}
	f.cs, f.ms, f.ns, f.cat = container.New(f.st), maven.New(f.st), npmstore.New(f.st), New(f.st)
	return f
}

// remotes creates a namespace with an OCI, a Maven and an npm remote.
func (f *cacheFixture) remotes(slug string) *store.Namespace {
	f.t.Helper()
	ns, err := f.st.CreateNamespace(f.ctx, slug)
	if err != nil {
		f.t.Fatal(err)
	}
	oci, err := f.cs.NewRemote(container.RemoteInput{URL: "https://oci.example.test"})
	if err != nil {
		f.t.Fatal(err)
	}
	mvn, err := f.ms.NewRemote(maven.RemoteInput{URL: "https://maven.example.test/maven2"})
	if err != nil {
		f.t.Fatal(err)
	}
	npm, err := f.ns.NewRemote(nil, npmstore.RemoteInput{URL: "https://npm.example.test"})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, r := range []struct {
		name   string
		format enum.Format
		child  store.ChildWriter
	}{{"hub", enum.FormatOCI, oci}, {"central", enum.FormatMaven, mvn}, {"npmjs", enum.FormatNpm, npm}} {
		if _, err := f.st.CreateRepository(f.ctx, store.NewRepository{Namespace: slug, Name: r.name, Format: r.format,
			Kind: enum.KindRemote, Visibility: enum.VisibilityPrivate, Child: r.child}); err != nil {
			f.t.Fatal(err)
		}
	}
	return ns
}

func (f *cacheFixture) repositoryID(nsID uuid.UUID, name string) uuid.UUID {
	f.t.Helper()
	var id uuid.UUID
	if err := f.pool.QueryRow(f.ctx, `SELECT id FROM repositories WHERE namespace_id = $1 AND name = $2`, nsID, name).Scan(&id); err != nil {
		f.t.Fatal(err)
	}
	return id
}

// manifest caches an image manifest (tagged) and a layer of it.
func (f *cacheFixture) manifest(slug, image string, layer []byte) [32]byte {
	f.t.Helper()
	tg, err := f.cs.ResolveTarget(f.ctx, slug, "hub", image)
	if err != nil {
		f.t.Fatal(err)
	}
	staged, err := f.cs.StageRemoteBlob(f.ctx, tg, bytes.NewReader(layer))
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.cs.CommitRemoteBlob(f.ctx, tg, staged, "application/vnd.oci.image.layer.v1.tar"); err != nil {
		f.t.Fatal(err)
	}
	p := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":3},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%d}]}`,
		store.FormatSHA256(sha256.Sum256([]byte("cfg"))), store.FormatSHA256(sha256.Sum256(layer)), len(layer)))
	d := sha256.Sum256(p)
	if _, _, err := f.cs.CacheRemoteManifest(f.ctx, tg, container.RemoteManifestPut{Digest: d,
		MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: p, BlobsSize: int64(len(layer)) + 3, Tag: "latest"}); err != nil {
		f.t.Fatal(err)
	}
	return d
}

func (f *cacheFixture) mavenFile(slug string, ref maven.FileRef, body []byte) *maven.RemoteFile {
	f.t.Helper()
	tg, err := f.ms.ResolveTarget(f.ctx, slug, "central")
	if err != nil {
		f.t.Fatal(err)
	}
	staged, err := f.ms.StageRemoteFile(f.ctx, tg, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	file, err := f.ms.CommitRemoteFile(f.ctx, tg, ref, staged, maven.RemoteFileMeta{})
	if err != nil {
		f.t.Fatal(err)
	}
	return file
}

func (f *cacheFixture) npmTarball(slug, name, version string, body []byte) {
	f.t.Helper()
	repo, err := f.ns.ResolveRegistry(f.ctx, slug, "npmjs")
	if err != nil {
		f.t.Fatal(err)
	}
	staged, err := f.ns.StageRemoteTarball(f.ctx, repo, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	base := name[strings.LastIndexByte(name, '/')+1:]
	if err := f.ns.CommitRemoteTarball(f.ctx, repo, npmstore.RemoteTarballPut{Name: name, Version: version, FileName: base + "-" + version + ".tgz",
		PackageJSON: []byte(fmt.Sprintf(`{"name":%q,"version":%q}`, name, version))}, staged); err != nil {
		f.t.Fatal(err)
	}
}

func (f *cacheFixture) packument(slug, name string, body []byte) {
	f.t.Helper()
	repo, err := f.ns.ResolveRegistry(f.ctx, slug, "npmjs")
	if err != nil {
		f.t.Fatal(err)
	}
	if _, _, err := f.ns.CacheRemotePackument(f.ctx, repo, npmstore.RemotePackumentPut{Name: name, Body: body, ETag: `"p1"`}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *cacheFixture) search(nsID uuid.UUID, body []byte) []*ChecksumMatch {
	f.t.Helper()
	sum := sha256.Sum256(body)
	m, err := f.cat.ChecksumSearch(f.ctx, nsID, sum[:], true, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// TestChecksumSearchFindsCachedContent: every kind of cached row (layer,
// manifest, Maven file, npm tarball and packument) is found by the sha256
// of its bytes, marked cached, in its remote repository, with its cached
// parent; a blob both a layer and a Maven file answers both; another
// namespace's search finds none of it.
func TestChecksumSearchFindsCachedContent(t *testing.T) {
	t.Parallel()
	f := newCacheFixture(t)
	ns := f.remotes("cached")
	other := f.remotes("elsewhere")
	hub, central, npmjs := f.repositoryID(ns.ID, "hub"), f.repositoryID(ns.ID, "central"), f.repositoryID(ns.ID, "npmjs")

	shared := []byte("bytes cached as a layer and as a jar")
	digest := f.manifest("cached", "library/alpine", shared)
	f.mavenFile("cached", maven.FileRef{GroupID: "com.example", ArtifactID: "lib", Version: "1.0", FileName: "lib-1.0.jar"}, shared)
	pom := []byte("<project><artifactId>lib</artifactId></project>")
	f.mavenFile("cached", maven.FileRef{GroupID: "com.example", ArtifactID: "lib", Version: "1.0", FileName: "lib-1.0.pom"}, pom)
	meta := []byte("<metadata><artifactId>lib</artifactId></metadata>")
	metaFile := f.mavenFile("cached", maven.FileRef{GroupID: "com.example", ArtifactID: "lib", FileName: "maven-metadata.xml"}, meta)
	tgz := []byte("npm tarball bytes")
	f.npmTarball("cached", "@scope/pkg", "2.0.0", tgz)
	packument := []byte(`{"name":"@scope/pkg","versions":{}}`)
	f.packument("cached", "@scope/pkg", packument)

	var imageID, mavenVersionID, mavenPackageID, npmVersionID, npmPackageID uuid.UUID
	for q, dst := range map[string]*uuid.UUID{
		`SELECT id FROM container_remote_images WHERE namespace_id = $1 AND name = 'library/alpine'`: &imageID,
		`SELECT id FROM maven_remote_versions WHERE namespace_id = $1 AND version = '1.0'`:           &mavenVersionID,
		`SELECT id FROM maven_remote_packages WHERE namespace_id = $1 AND artifact_id = 'lib'`:       &mavenPackageID,
		`SELECT id FROM npm_remote_versions WHERE namespace_id = $1 AND version = '2.0.0'`:           &npmVersionID,
		`SELECT id FROM npm_remote_packages WHERE namespace_id = $1 AND name = '@scope/pkg'`:         &npmPackageID,
	} {
		if err := f.pool.QueryRow(f.ctx, q, ns.ID).Scan(dst); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	type want struct {
		kind   ChecksumMatchKind
		parent uuid.UUID
		repo   uuid.UUID
	}
	check := func(name string, got []*ChecksumMatch, w ...want) {
		t.Helper()
		if len(got) != len(w) {
			t.Fatalf("%s: %d matches, want %d: %+v", name, len(got), len(w), got)
		}
		for _, x := range w {
			found := false
			for _, m := range got {
				if m.Kind == x.kind && m.ParentID == x.parent && m.RepositoryID == x.repo && m.Cached && m.SoftDeletedAt == nil {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no cached %s match under %s in %s: %+v", name, x.kind, x.parent, x.repo, got)
			}
		}
	}
	check("shared layer and jar", f.search(ns.ID, shared), want{MatchContainerBlob, imageID, hub}, want{MatchMavenFile, mavenVersionID, central})
	manifests, err := f.cat.ChecksumSearch(f.ctx, ns.ID, digest[:], false, 10)
	if err != nil {
		t.Fatal(err)
	}
	check("manifest", manifests, want{MatchContainerManifest, imageID, hub})
	check("pom", f.search(ns.ID, pom), want{MatchMavenFile, mavenVersionID, central})
	check("package-level metadata", f.search(ns.ID, meta), want{MatchMavenFile, mavenPackageID, central})
	if m := f.search(ns.ID, meta); len(m) == 1 && m[0].ArtifactID != metaFile.ID {
		t.Errorf("metadata match %s, want the file %s", m[0].ArtifactID, metaFile.ID)
	}
	check("tarball", f.search(ns.ID, tgz), want{MatchNpmFile, npmVersionID, npmjs})
	check("packument", f.search(ns.ID, packument), want{MatchNpmMetadataFile, npmPackageID, npmjs})

	// The other namespace holds the same kinds of remotes but cached
	// nothing: none of the first namespace's content answers there.
	for _, b := range [][]byte{shared, pom, meta, tgz, packument} {
		if m := f.search(other.ID, b); len(m) != 0 {
			t.Errorf("another namespace finds %d matches: %+v", len(m), m)
		}
	}
	// A hosted row of the same bytes would be reported uncached: the flag
	// comes from the arm, never guessed (the hosted arms say false).
	if strings.Count(checksumSearchSQL(true), ", true, ") != 5 || strings.Count(checksumSearchSQL(true), ", false, ") != 5 {
		t.Errorf("five hosted and five cached arms expected:\n%s", checksumSearchSQL(true))
	}
}

var indexScan = regexp.MustCompile(`Index (?:Only )?Scan using (\S+) on (\S+)`)

// TestChecksumSearchCachedArmsUseBlobIndexes: once the remotes hold some
// content (analyzed), every remote arm of the search reads its table
// through the (namespace_id, blob_sha256) index — partition-pruned to the
// namespace — with sequential scans priced out, never through another
// index filtered by the checksum.
func TestChecksumSearchCachedArmsUseBlobIndexes(t *testing.T) {
	t.Parallel()
	f := newCacheFixture(t)
	ns := f.remotes("plans")
	for i := range 25 {
		f.manifest("plans", "library/app", []byte(fmt.Sprintf("layer %d", i)))
		f.mavenFile("plans", maven.FileRef{GroupID: "org.example", ArtifactID: "app", Version: fmt.Sprintf("1.%d", i),
			FileName: fmt.Sprintf("app-1.%d.jar", i)}, []byte(fmt.Sprintf("jar %d", i)))
		f.npmTarball("plans", "app", fmt.Sprintf("1.0.%d", i), []byte(fmt.Sprintf("tgz %d", i)))
		f.packument("plans", fmt.Sprintf("app%d", i), []byte(fmt.Sprintf(`{"name":"app%d"}`, i)))
	}
	for _, table := range []string{"container_remote_blobs", "container_remote_manifests", "maven_remote_files",
		"npm_remote_files", "npm_remote_metadata_files", "container_remote_images", "maven_remote_packages", "npm_remote_versions", "npm_remote_packages"} {
		if _, err := f.pool.Exec(f.ctx, "ANALYZE "+table); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256([]byte("layer 7"))
	conn, err := f.pool.Acquire(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(f.ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(f.ctx, `RESET enable_seqscan`) //nolint:errcheck
	for _, active := range []bool{true, false} {
		rows, err := conn.Query(f.ctx, "EXPLAIN "+checksumSearchSQL(active), ns.ID, sum[:], 100)
		if err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan.WriteString(line + "\n")
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		used := map[string]bool{}
		for _, m := range indexScan.FindAllStringSubmatch(plan.String(), -1) {
			used[m[1]] = true
		}
		for _, table := range []string{"container_remote_blobs", "container_remote_manifests", "maven_remote_files",
			"npm_remote_files", "npm_remote_metadata_files"} {
			ok := false
			for idx := range used {
				// Partition indexes are named after the parent's
				// (container_remote_blobs_p3_namespace_id_blob_sha256_idx).
				if strings.HasPrefix(idx, table+"_p") && strings.HasSuffix(idx, "blob_sha256_idx") {
					ok = true
				}
			}
			if !ok {
				t.Errorf("active=%v: %s is not read through its blob_sha256 index:\n%s", active, table, plan.String())
			}
			if regexp.MustCompile(`(?m)on ` + table + `_p\d+ x\S*.*\n(\s+Index Cond.*\n)?\s+Filter: \(blob_sha256`).MatchString(plan.String()) {
				t.Errorf("active=%v: %s filters on blob_sha256 instead of looking it up:\n%s", active, table, plan.String())
			}
			if strings.Contains(plan.String(), "Seq Scan on "+table) {
				t.Errorf("active=%v: %s is scanned:\n%s", active, table, plan.String())
			}
		}
	}
}

// TestPublishHistoryListsCachedEvents: cached manifests and Maven and npm
// versions appear at the time they were first cached, newest first, as
// cached events of their remote; pages of one and two cut the union at the
// right keys; the window bounds apply; eviction-free re-caching adds no
// event; another namespace's history has none of them.
func TestPublishHistoryListsCachedEvents(t *testing.T) {
	t.Parallel()
	f := newCacheFixture(t)
	ns := f.remotes("hist")
	other := f.remotes("histother")
	t0 := f.clock.Now()
	digest := f.manifest("hist", "library/busybox", []byte("busybox layer"))
	f.clock.Advance(time.Minute)
	f.mavenFile("hist", maven.FileRef{GroupID: "org.example", ArtifactID: "core", Version: "3.1", FileName: "core-3.1.jar"}, []byte("core jar"))
	f.clock.Advance(time.Minute)
	// A second file of the same version is no new event.
	f.mavenFile("hist", maven.FileRef{GroupID: "org.example", ArtifactID: "core", Version: "3.1", FileName: "core-3.1.pom"}, []byte("core pom"))
	f.clock.Advance(time.Minute)
	f.npmTarball("hist", "left-pad", "1.3.0", []byte("left-pad tarball"))
	f.clock.Advance(time.Minute)
	f.npmTarball("hist", "left-pad", "1.2.0", []byte("older left-pad tarball"))

	type ev struct {
		kind          PublishKind
		repo          string
		name, version string
		at            time.Time
	}
	want := []ev{
		{CachedNpmVersion, "npmjs", "left-pad", "1.2.0", t0.Add(4 * time.Minute)},
		{CachedNpmVersion, "npmjs", "left-pad", "1.3.0", t0.Add(3 * time.Minute)},
		{CachedMavenVersion, "central", "org.example:core", "3.1", t0.Add(time.Minute)},
		{CachedContainerManifest, "hub", "library/busybox", store.FormatSHA256(digest), t0},
	}
	repos := map[string]uuid.UUID{"hub": f.repositoryID(ns.ID, "hub"), "central": f.repositoryID(ns.ID, "central"), "npmjs": f.repositoryID(ns.ID, "npmjs")}
	match := func(what string, got []*PublishEvent, w []ev) {
		t.Helper()
		if len(got) != len(w) {
			t.Fatalf("%s: %d events, want %d", what, len(got), len(w))
		}
		for i, e := range got {
			x := w[i]
			c := e.Cached
			if e.Kind != x.kind || c == nil || e.Manifest != nil || e.Maven != nil || e.Npm != nil || e.RepositoryID() != repos[x.repo] ||
				c.Name != x.name || c.Version != x.version || !e.CreatedAt.Equal(x.at) {
				t.Errorf("%s: event %d = %+v %+v, want %+v", what, i, e, c, x)
			}
		}
	}
	all, more, err := f.cat.PublishHistory(f.ctx, ns.ID, nil, nil, nil, 10)
	if err != nil || more {
		t.Fatalf("history: more=%v %v", more, err)
	}
	match("all", all, want)

	for _, size := range []int{1, 2} {
		var got []*PublishEvent
		var after *HistoryKey
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatalf("page size %d: no end", size)
			}
			page, more, err := f.cat.PublishHistory(f.ctx, ns.ID, nil, nil, after, size)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if !more {
				break
			}
			k := page[len(page)-1].Key()
			after = &k
		}
		match(fmt.Sprintf("pages of %d", size), got, want)
	}

	from, to := t0.Add(time.Minute), t0.Add(4*time.Minute)
	window, _, err := f.cat.PublishHistory(f.ctx, ns.ID, &from, &to, nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	match("[t0+1m, t0+4m)", window, want[1:3])

	if h, _, err := f.cat.PublishHistory(f.ctx, other.ID, nil, nil, nil, 10); err != nil || len(h) != 0 {
		t.Fatalf("another namespace's history: %d events, %v", len(h), err)
	}
}
