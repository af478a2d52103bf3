package npm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"gocloud.dev/secrets/localsecrets"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

type remoteFixture struct {
	t     testing.TB
	ctx   context.Context
	pool  *pgxpool.Pool
	clock *fakeclock.Clock
	st    *store.Store
	s     *npmstore.Store
	kr    npmstore.Keyring
	ns    *store.Namespace
}

func newRemoteFixture(t testing.TB) *remoteFixture {
	t.Helper()
	pool := testdb.New(t)
	clock := fakeclock.New(time.Now().UTC())
	f := &remoteFixture{t: t, ctx: context.Background(), pool: pool, clock: clock,
		st: testsupport.Store(t, testsupport.StoreOptions{Pool: pool, Mem: true, Store: store.Options{Clock: clock}})}
	f.s = npmstore.New(f.st)
	sk, err := localsecrets.NewRandomKey()
	if err != nil {
		t.Fatal(err)
	}
	k := localsecrets.NewKeeper(sk)
	t.Cleanup(func() { _ = k.Close() })
	if f.kr, err = credentials.New(f.st, credentials.Options{Root: &credentials.RootKey{URI: "base64key://sha256:npm-remote-test", Keeper: k}}); err != nil {
		t.Fatal(err)
	}
	if f.ns, err = f.st.CreateNamespace(f.ctx, "npmcache"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *remoteFixture) remote(name string, in npmstore.RemoteInput) *npmstore.Repository {
	f.t.Helper()
	child, err := f.s.NewRemote(f.kr, in)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.st.CreateRepository(f.ctx, store.NewRepository{Namespace: f.ns.Slug, Name: name, Format: enum.FormatNpm,
		Kind: enum.KindRemote, Visibility: enum.VisibilityPrivate, Child: child}); err != nil {
		f.t.Fatal(err)
	}
	return f.resolve(name)
}

func (f *remoteFixture) resolve(name string) *npmstore.Repository {
	f.t.Helper()
	repo, err := f.s.ResolveRegistry(f.ctx, f.ns.Slug, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return repo
}

func (f *remoteFixture) count(q string, args ...any) int64 {
	f.t.Helper()
	var n int64
	if err := f.pool.QueryRow(f.ctx, q, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// tarball caches a tarball of name@version with the given bytes, as the
// protocol does after verifying it.
func (f *remoteFixture) tarball(repo *npmstore.Repository, name, version string, body []byte) {
	f.t.Helper()
	staged, err := f.s.StageRemoteTarball(f.ctx, repo, bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if staged.SHA256() != sha256.Sum256(body) {
		f.t.Fatal("staged digest differs from the bytes")
	}
	base := name[strings.LastIndexByte(name, '/')+1:]
	if err := f.s.CommitRemoteTarball(f.ctx, repo, npmstore.RemoteTarballPut{Name: name, Version: version, FileName: base + "-" + version + ".tgz",
		PackageJSON: []byte(fmt.Sprintf(`{"name":%q,"version":%q}`, name, version))}, staged); err != nil {
		f.t.Fatal(err)
	}
}

func (f *remoteFixture) packument(repo *npmstore.Repository, name string, body []byte, listed ...string) (*npmstore.RemotePackument, int) {
	f.t.Helper()
	in := npmstore.RemotePackumentPut{Name: name, Body: body, ETag: `"e-` + fmt.Sprint(len(body)) + `"`}
	if listed != nil {
		in.Listed = map[string]bool{}
		for _, v := range listed {
			in.Listed[v] = true
		}
	}
	p, dropped, err := f.s.CacheRemotePackument(f.ctx, repo, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return p, dropped
}

// counters folds the buffered deltas and returns the remote repository's
// size and artifacts and the namespace's components; the reconciliation
// must find nothing to correct.
func (f *remoteFixture) counters(name string) (size, artifacts, components int64) {
	f.t.Helper()
	if _, err := f.st.FoldCounterDeltas(f.ctx, f.ns.ID, 0, 0); err != nil {
		f.t.Fatal(err)
	}
	res, err := f.st.ReconcileNamespaceCounters(f.ctx, f.ns.ID, 0)
	if err != nil || len(res.Drifts) != 0 {
		f.t.Fatalf("reconcile: %+v %v", res.Drifts, err)
	}
	_, repo, err := f.st.RepositoryByName(f.ctx, f.ns.Slug, name)
	if err != nil {
		f.t.Fatal(err)
	}
	components = f.count(`SELECT components_count FROM namespace_statistics WHERE namespace_id = $1`, f.ns.ID)
	return repo.SizeBytes, repo.ArtifactsCount, components
}

// TestRemoteSettingsAndCredentials: an npm remote is created with its
// credentials sealed (neither part nor npm's Basic token in the row),
// resolves as a registry (not as a hosted repository) with the default
// one-hour metadata validity, opens its credentials back, lists its
// settings, records its health with the error cut to its bound, and
// refuses bad settings; an update bumps the settings time and clearing
// removes the whole credential unit.
func TestRemoteSettingsAndCredentials(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	withCreds := f.remote("npmjs", npmstore.RemoteInput{URL: "https://registry.example.test/",
		Credentials: &npmstore.Credentials{Username: "robot-user", Password: "s3cret-pass"}})
	plain := f.remote("plain", npmstore.RemoteInput{URL: "http://127.0.0.1:5999"})

	if n := f.count(`SELECT count(*) FROM npm_remote_repositories WHERE namespace_id = $1 AND encrypted_auth_token IS NOT NULL
		AND (position(convert_to('s3cret-pass', 'UTF8') in encrypted_auth_token) > 0
		  OR position(convert_to('robot-user', 'UTF8') in encrypted_auth_token) > 0
		  OR position(convert_to($2, 'UTF8') in encrypted_auth_token) > 0)`, f.ns.ID, "cm9ib3QtdXNlcjpzM2NyZXQtcGFzcw=="); n != 0 {
		t.Fatalf("plaintext credentials in the row")
	}
	if n := f.count(`SELECT count(*) FROM npm_remote_repositories WHERE namespace_id = $1 AND encrypted_auth_token IS NOT NULL`, f.ns.ID); n != 1 {
		t.Fatalf("%d sealed credential units, want 1", n)
	}
	r := withCreds.Remote
	if r == nil || r.URL != "https://registry.example.test" || !r.HasCredentials || r.MetadataValidity != time.Hour {
		t.Fatalf("remote target %+v", r)
	}
	if plain.Remote == nil || plain.Remote.HasCredentials {
		t.Fatalf("plain remote %+v", plain.Remote)
	}
	if _, err := f.s.ResolveRepository(f.ctx, f.ns.Slug, "npmjs"); !store.HasCode(err, npmstore.CodeRepositoryUnknown) {
		t.Fatalf("a remote resolved as a hosted repository: %v", err)
	}
	c, err := f.s.RemoteCredentials(f.ctx, f.kr, f.ns.ID, r.ID)
	if err != nil || c == nil || c.Username != "robot-user" || c.Password != "s3cret-pass" {
		t.Fatalf("credentials %v %v", c != nil, err)
	}
	if s := fmt.Sprintf("%v %+v %#v", *c, c, *c); strings.Contains(s, "s3cret") || strings.Contains(s, "robot") {
		t.Fatalf("credentials print: %s", s)
	}
	if _, err := f.s.RemoteCredentials(f.ctx, nil, f.ns.ID, r.ID); !store.HasCode(err, npmstore.CodeNoKeyring) {
		t.Fatalf("credentials without a keyring: %v", err)
	}
	if c, err := f.s.RemoteCredentials(f.ctx, nil, f.ns.ID, plain.Remote.ID); err != nil || c != nil {
		t.Fatalf("no credentials: %v %v", c, err)
	}

	settings, err := f.s.RemoteSettingsByRepositories(f.ctx, f.ns.ID, []uuid.UUID{withCreds.RepositoryID, plain.RepositoryID})
	if err != nil || len(settings) != 2 {
		t.Fatalf("settings %v %v", settings, err)
	}
	for _, s := range settings {
		if s.CacheValidityHours != 24 || s.MetadataCacheValidityHours != 1 || s.HealthStatus != enum.HealthStatus(0) || s.CacheHits != 0 {
			t.Errorf("settings %+v", s)
		}
	}
	long := strings.Repeat("é", npmstore.MaxRemoteHealthError+10)
	if err := f.s.RecordRemoteHealth(f.ctx, f.ns.ID, r.ID, enum.HealthStatus(2), f.clock.Now(), long); err != nil {
		t.Fatal(err)
	}
	settings, _ = f.s.RemoteSettingsByRepositories(f.ctx, f.ns.ID, []uuid.UUID{withCreds.RepositoryID})
	if s := settings[0]; s.HealthStatus != 2 || s.HealthError == nil || len([]rune(*s.HealthError)) != npmstore.MaxRemoteHealthError || s.HealthCheckedAt == nil {
		t.Fatalf("health %+v", s)
	}

	before := r.SettingsChangedAt
	zero := 0
	upd, err := f.s.UpdateRemote(f.kr, npmstore.RemoteUpdate{ClearCredentials: true, MetadataCacheValidityHours: &zero})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdateRepository(f.ctx, store.RepositoryRef{Namespace: f.ns.Slug, Name: "npmjs"}, store.RepositoryUpdate{Child: upd}); err != nil {
		t.Fatal(err)
	}
	r = f.resolve("npmjs").Remote
	if r.HasCredentials || r.MetadataValidity != 0 || !r.SettingsChangedAt.After(before) {
		t.Fatalf("after the update %+v (settings time before %v)", r, before)
	}
	if n := f.count(`SELECT count(*) FROM npm_remote_repositories WHERE namespace_id = $1 AND id = $2
		AND num_nulls(wrapped_dek, ns_key_id, ns_key_version, encrypted_auth_token) = 4`, f.ns.ID, r.ID); n != 1 {
		t.Fatal("credential unit not cleared")
	}
	// New credentials through an update are sealed and open back.
	upd, err = f.s.UpdateRemote(f.kr, npmstore.RemoteUpdate{Credentials: &npmstore.Credentials{Username: "ci", Password: "p:w"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdateRepository(f.ctx, store.RepositoryRef{Namespace: f.ns.Slug, Name: "npmjs"}, store.RepositoryUpdate{Child: upd}); err != nil {
		t.Fatal(err)
	}
	if c, err := f.s.RemoteCredentials(f.ctx, f.kr, f.ns.ID, r.ID); err != nil || c.Username != "ci" || c.Password != "p:w" {
		t.Fatalf("updated credentials: %v", err)
	}

	// Refusals.
	for _, u := range []string{"ftp://x", "http://", "https://u:p@host", "https://host/?q=1", strings.Repeat("h", 1100)} {
		if _, err := f.s.NewRemote(f.kr, npmstore.RemoteInput{URL: u}); !store.HasCode(err, store.CodeInvalidInput) {
			t.Errorf("URL %q: %v", u, err)
		}
	}
	for _, h := range []int{-1, npmstore.MaxRemoteValidityHours + 1} {
		h := h
		if _, err := f.s.NewRemote(f.kr, npmstore.RemoteInput{URL: "https://h", MetadataCacheValidityHours: &h}); !store.HasCode(err, store.CodeInvalidInput) {
			t.Errorf("metadata validity %d: %v", h, err)
		}
		if _, err := f.s.NewRemote(f.kr, npmstore.RemoteInput{URL: "https://h", CacheValidityHours: &h}); !store.HasCode(err, store.CodeInvalidInput) {
			t.Errorf("validity %d: %v", h, err)
		}
		if _, err := f.s.UpdateRemote(f.kr, npmstore.RemoteUpdate{MetadataCacheValidityHours: &h}); !store.HasCode(err, store.CodeInvalidInput) {
			t.Errorf("updated metadata validity %d: %v", h, err)
		}
	}
	if _, err := f.s.NewRemote(f.kr, npmstore.RemoteInput{URL: "https://h", Credentials: &npmstore.Credentials{Username: "u"}}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Errorf("half credentials: %v", err)
	}
	if _, err := f.s.NewRemote(nil, npmstore.RemoteInput{URL: "https://h", Credentials: &npmstore.Credentials{Username: "u", Password: "p"}}); !store.HasCode(err, npmstore.CodeNoKeyring) {
		t.Errorf("credentials without a keyring: %v", err)
	}
	if _, err := f.s.UpdateRemote(f.kr, npmstore.RemoteUpdate{}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Errorf("an empty update: %v", err)
	}
	if _, err := f.s.UpdateRemote(f.kr, npmstore.RemoteUpdate{ClearCredentials: true, Credentials: &npmstore.Credentials{Username: "u", Password: "p"}}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Errorf("clear and set credentials: %v", err)
	}
	testsupport.Repository(t, f.st, f.ns.Slug, "hosted", enum.FormatNpm, enum.VisibilityPrivate)
	upd, _ = f.s.UpdateRemote(f.kr, npmstore.RemoteUpdate{MetadataCacheValidityHours: &zero})
	if _, err := f.st.UpdateRepository(f.ctx, store.RepositoryRef{Namespace: f.ns.Slug, Name: "hosted"}, store.RepositoryUpdate{Child: upd}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Errorf("remote settings on a hosted repository: %v", err)
	}
	child, _ := f.s.NewRemote(f.kr, npmstore.RemoteInput{URL: "https://h"})
	if _, err := f.st.CreateRepository(f.ctx, store.NewRepository{Namespace: f.ns.Slug, Name: "wrongformat", Format: enum.FormatMaven,
		Kind: enum.KindRemote, Visibility: enum.VisibilityPrivate, Child: child}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Errorf("npm remote settings on a Maven repository: %v", err)
	}
}

// TestRemoteCacheAndAccounting: packuments are cached verbatim (the same
// bytes only confirm the row, other bytes replace it and detach the old
// blob), tarballs are cached per version (scoped names too), requests
// feed the hit counters and the last downloads, the cached content
// counts in the remote repository (distinct bytes once, versions as
// artifacts) and in the namespace (components), with the reconciliation
// agreeing at every step; a packument that no longer lists a version
// drops it; metadata invalidation makes packuments stale.
func TestRemoteCacheAndAccounting(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	repo := f.remote("npmjs", npmstore.RemoteInput{URL: "http://127.0.0.1:5999"})

	if p, err := f.s.RemotePackument(f.ctx, repo, "left-pad"); err != nil || p != nil {
		t.Fatalf("packument before any fetch: %+v %v", p, err)
	}
	doc1 := []byte(`{"name":"left-pad","versions":{"1.0.0":{},"1.1.0":{}}}`)
	p1, _ := f.packument(repo, "left-pad", doc1)
	got, err := f.s.RemotePackument(f.ctx, repo, "left-pad")
	if err != nil || got == nil || got.FileID != p1.FileID || got.ETag != p1.ETag || got.Blob.Size != int64(len(doc1)) {
		t.Fatalf("cached packument %+v %v", got, err)
	}
	body, err := f.s.ReadRemotePackument(f.ctx, got, 1<<20)
	if err != nil || !bytes.Equal(body, doc1) {
		t.Fatalf("stored packument differs: %q %v", body, err)
	}
	if _, err := f.s.ReadRemotePackument(f.ctx, got, 10); !store.HasCode(err, npmstore.CodeLimit) {
		t.Fatalf("a packument past the read bound: %v", err)
	}
	f.clock.Advance(time.Minute)
	p1b, _ := f.packument(repo, "left-pad", doc1)
	if p1b.FileID != p1.FileID || !p1b.CheckedAt.After(p1.CheckedAt) {
		t.Fatalf("same bytes: %+v, want the row %v confirmed", p1b, p1.FileID)
	}
	f.clock.Advance(time.Minute)
	if err := f.s.ConfirmRemotePackument(f.ctx, repo, p1.FileID, "", "Wed, 21 Oct 2015 07:28:00 GMT"); err != nil {
		t.Fatal(err)
	}
	got, _ = f.s.RemotePackument(f.ctx, repo, "left-pad")
	if !got.CheckedAt.After(p1b.CheckedAt) || got.ETag != p1.ETag || got.LastModified != "Wed, 21 Oct 2015 07:28:00 GMT" {
		t.Fatalf("after a 304: %+v (the ETag is kept when the 304 sends none)", got)
	}

	tgz100 := bytes.Repeat([]byte("a"), 1000)
	tgz110 := bytes.Repeat([]byte("b"), 2000)
	scoped := bytes.Repeat([]byte("c"), 500)
	f.tarball(repo, "left-pad", "1.0.0", tgz100)
	f.tarball(repo, "left-pad", "1.1.0", tgz110)
	f.tarball(repo, "@types/node", "20.0.0", scoped)
	// A second commit of a version cached meanwhile keeps the first.
	f.tarball(repo, "left-pad", "1.0.0", bytes.Repeat([]byte("z"), 10))
	tb, err := f.s.RemoteTarball(f.ctx, repo, "left-pad", "left-pad-1.0.0.tgz")
	if err != nil || tb.Blob.SHA256 != sha256.Sum256(tgz100) {
		t.Fatalf("cached tarball %+v %v", tb, err)
	}
	if _, err := f.s.RemoteTarball(f.ctx, repo, "@types/node", "node-20.0.0.tgz"); err != nil {
		t.Fatalf("scoped tarball: %v", err)
	}
	if _, err := f.s.RemoteTarball(f.ctx, repo, "left-pad", "left-pad-9.9.9.tgz"); !store.HasCode(err, npmstore.CodeFileUnknown) {
		t.Fatalf("uncached tarball: %v", err)
	}
	if n := f.count(`SELECT count(*) FROM npm_remote_packages WHERE namespace_id = $1 AND name = '@types/node' AND scope = '@types'`, f.ns.ID); n != 1 {
		t.Fatal("scoped package without its scope")
	}
	vs, err := f.s.CachedRemoteVersions(f.ctx, repo, "left-pad")
	if err != nil || len(vs) != 2 || !vs["1.0.0"] || !vs["1.1.0"] {
		t.Fatalf("cached versions %v %v", vs, err)
	}
	// A hosted repository's bytes and the cache's are one blob.
	size, artifacts, components := f.counters("npmjs")
	if want := int64(len(doc1) + len(tgz100) + len(tgz110) + len(scoped)); size != want || artifacts != 3 || components != 3 {
		t.Fatalf("after caching: size %d artifacts %d components %d, want %d, 3, 3", size, artifacts, components, want)
	}

	// Requests: two hits (one a served tarball) and a miss.
	at := f.clock.Now().Add(time.Hour)
	if err := f.s.RecordRemoteRequests(f.ctx, []npmstore.RemoteRequest{
		{NamespaceID: f.ns.ID, RemoteID: repo.Remote.ID, Hit: true, RepositoryID: repo.RepositoryID, PackageID: tb.PackageID,
			VersionID: tb.VersionID, At: at},
		{NamespaceID: f.ns.ID, RemoteID: repo.Remote.ID, Hit: true},
		{NamespaceID: f.ns.ID, RemoteID: repo.Remote.ID},
	}); err != nil {
		t.Fatal(err)
	}
	f.counters("npmjs")
	// A served tarball is a download of the remote repository.
	if _, r, err := f.st.RepositoryByName(f.ctx, f.ns.Slug, "npmjs"); err != nil || r.DownloadsCount != 1 {
		t.Fatalf("downloads of the remote: %+v %v, want 1", r, err)
	}
	settings, _ := f.s.RemoteSettingsByRepositories(f.ctx, f.ns.ID, []uuid.UUID{repo.RepositoryID})
	if settings[0].CacheHits != 2 || settings[0].CacheMisses != 1 {
		t.Fatalf("hit counters %d/%d, want 2/1", settings[0].CacheHits, settings[0].CacheMisses)
	}
	infos, err := f.s.RemotePackagesOfRemote(f.ctx, f.ns.ID, repo.Remote.ID, 10)
	if err != nil || len(infos) != 2 {
		t.Fatalf("cached packages %+v %v", infos, err)
	}
	if i := infos[0]; i.Name != "@types/node" || i.CachedVersions != 1 || i.SizeBytes != int64(len(scoped)) || i.CheckedAt != nil {
		t.Fatalf("scoped package info %+v", i)
	}
	if i := infos[1]; i.Name != "left-pad" || i.CachedVersions != 2 || i.SizeBytes != int64(len(tgz100)+len(tgz110)) ||
		i.LastDownloadedAt == nil || !i.LastDownloadedAt.Equal(at.Truncate(time.Microsecond)) || i.CheckedAt == nil {
		t.Fatalf("left-pad info %+v (last download want %v)", i, at)
	}

	// The upstream drops 1.1.0 and changes its packument: the old blob is
	// detached (a candidate) and the version goes with its tarball.
	doc2 := []byte(`{"name":"left-pad","versions":{"1.0.0":{},"1.2.0":{}}}`)
	p2, dropped := f.packument(repo, "left-pad", doc2, "1.0.0", "1.2.0")
	if p2.FileID == p1.FileID || dropped != 1 {
		t.Fatalf("new packument %+v dropped %d, want a new row and 1 dropped", p2, dropped)
	}
	for _, d := range [][32]byte{sha256.Sum256(doc1), sha256.Sum256(tgz110)} {
		if n := f.count(`SELECT count(*) FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 = $2`, f.ns.ID, d[:]); n != 1 {
			t.Errorf("a released blob is not a GC candidate")
		}
	}
	if vs, _ := f.s.CachedRemoteVersions(f.ctx, repo, "left-pad"); len(vs) != 1 || !vs["1.0.0"] {
		t.Fatalf("versions after the drop %v", vs)
	}
	size, artifacts, components = f.counters("npmjs")
	if want := int64(len(doc2) + len(tgz100) + len(scoped)); size != want || artifacts != 2 || components != 2 {
		t.Fatalf("after the drop: size %d artifacts %d components %d, want %d, 2, 2", size, artifacts, components, want)
	}

	// Invalidation: one package, then all; an unknown package or a hosted
	// repository is refused.
	ref := store.RepositoryRef{Namespace: f.ns.Slug, Name: "npmjs"}
	f.packument(repo, "@types/node", []byte(`{"name":"@types/node"}`))
	if n, err := f.s.InvalidateRemoteMetadata(f.ctx, ref, "left-pad"); err != nil || n != 1 {
		t.Fatalf("invalidate one: %d %v", n, err)
	}
	if got, _ := f.s.RemotePackument(f.ctx, repo, "left-pad"); got.CheckedAt.After(time.Unix(0, 0)) {
		t.Fatalf("invalidated packument checked at %v", got.CheckedAt)
	}
	if got, _ := f.s.RemotePackument(f.ctx, repo, "@types/node"); !got.CheckedAt.After(time.Unix(0, 0)) {
		t.Fatal("another package was invalidated")
	}
	if n, err := f.s.InvalidateRemoteMetadata(f.ctx, ref, ""); err != nil || n != 2 {
		t.Fatalf("invalidate all: %d %v", n, err)
	}
	if _, err := f.s.InvalidateRemoteMetadata(f.ctx, ref, "nope"); !store.HasCode(err, npmstore.CodePackageUnknown) {
		t.Fatalf("invalidate an uncached package: %v", err)
	}
	testsupport.Repository(t, f.st, f.ns.Slug, "hosted", enum.FormatNpm, enum.VisibilityPrivate)
	if _, err := f.s.InvalidateRemoteMetadata(f.ctx, store.RepositoryRef{Namespace: f.ns.Slug, Name: "hosted"}, ""); !store.HasCode(err, store.CodeInvalidInput) {
		t.Fatalf("invalidate a hosted repository: %v", err)
	}
}

// TestRemoteStaleEvictionAndPurge: versions not downloaded since the
// cutoff are evicted batch by batch (tarballs detached, bytes still in
// storage, packuments kept); a version downloaded meanwhile stays; the
// purge of the trashed remote evicts everything left and deletes its row.
func TestRemoteStaleEvictionAndPurge(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	repo := f.remote("npmjs", npmstore.RemoteInput{URL: "http://127.0.0.1:5999"})
	for i := range 5 {
		name := fmt.Sprintf("pkg%d", i)
		f.packument(repo, name, []byte(fmt.Sprintf(`{"name":%q}`, name)))
		f.tarball(repo, name, "1.0.0", []byte(fmt.Sprint("tarball of ", name)))
	}
	f.clock.Advance(48 * time.Hour)
	f.tarball(repo, "fresh", "1.0.0", []byte("fresh tarball"))
	// pkg0 was downloaded recently.
	tb, err := f.s.RemoteTarball(f.ctx, repo, "pkg0", "pkg0-1.0.0.tgz")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.RecordRemoteRequests(f.ctx, []npmstore.RemoteRequest{{NamespaceID: f.ns.ID, RemoteID: repo.Remote.ID, Hit: true,
		PackageID: tb.PackageID, VersionID: tb.VersionID, At: f.clock.Now()}}); err != nil {
		t.Fatal(err)
	}
	f.counters("npmjs")
	cutoff := f.clock.Now().Add(-24 * time.Hour)
	stale, err := f.s.StaleRemoteVersions(f.ctx, f.ns.ID, cutoff, 100)
	if err != nil || len(stale) != 4 {
		t.Fatalf("stale versions %d %v, want 4", len(stale), err)
	}
	n, rel, err := f.s.EvictStaleRemoteVersions(f.ctx, f.ns.ID, cutoff, 3, 10)
	if err != nil || n != 4 || rel.Attachments != 4 || rel.Candidates != 4 {
		t.Fatalf("eviction: %d %+v %v, want 4 versions in two batches", n, rel, err)
	}
	for i := 1; i < 5; i++ {
		name := fmt.Sprintf("pkg%d", i)
		if _, err := f.s.RemoteTarball(f.ctx, repo, name, name+"-1.0.0.tgz"); !store.HasCode(err, npmstore.CodeFileUnknown) {
			t.Errorf("%s: tarball still served after eviction: %v", name, err)
		}
		if p, err := f.s.RemotePackument(f.ctx, repo, name); err != nil || p == nil {
			t.Errorf("%s: packument evicted with the tarball: %v", name, err)
		}
		d := sha256.Sum256([]byte(fmt.Sprint("tarball of ", name)))
		b, err := f.st.StatBlob(f.ctx, f.ns.ID, d)
		if err != nil {
			t.Fatalf("%s: blob row gone: %v", name, err)
		}
		rc, err := f.st.OpenBlobObject(f.ctx, b, 0, -1)
		if err != nil {
			t.Fatalf("%s: evicted bytes gone from storage before gc:cleanup: %v", name, err)
		}
		rc.Close()
	}
	for _, name := range []string{"pkg0", "fresh"} {
		if _, err := f.s.RemoteTarball(f.ctx, repo, name, name+"-1.0.0.tgz"); err != nil {
			t.Errorf("%s evicted: %v", name, err)
		}
	}
	if n, _, err := f.s.EvictStaleRemoteVersions(f.ctx, f.ns.ID, cutoff, 3, 10); err != nil || n != 0 {
		t.Fatalf("second eviction: %d %v", n, err)
	}
	_, artifacts, components := f.counters("npmjs")
	if artifacts != 2 || components != 2 {
		t.Fatalf("after eviction: artifacts %d components %d, want 2 and 2", artifacts, components)
	}

	ref := store.RepositoryRef{Namespace: f.ns.Slug, Name: "npmjs"}
	if _, err := f.st.SoftDeleteRepository(f.ctx, ref); err != nil {
		t.Fatal(err)
	}
	_, purged, err := catalog.New(f.st).PurgeRepository(f.ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	// Left: 5 packuments and 2 tarballs, all distinct.
	if purged.Released.Attachments != 7 || purged.Released.Candidates != 7 {
		t.Fatalf("purge released %+v, want 7 and 7", purged.Released)
	}
	for _, tbl := range []string{"npm_remote_repositories", "npm_remote_packages", "npm_remote_versions", "npm_remote_files", "npm_remote_metadata_files"} {
		if n := f.count(`SELECT count(*) FROM `+tbl+` WHERE namespace_id = $1`, f.ns.ID); n != 0 {
			t.Errorf("%s: %d rows left after the purge", tbl, n)
		}
	}
	if _, err := f.st.FoldCounterDeltas(f.ctx, f.ns.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	if c := f.count(`SELECT components_count FROM namespace_statistics WHERE namespace_id = $1`, f.ns.ID); c != 0 {
		t.Fatalf("components after the purge %d", c)
	}
}

// BenchmarkRemoteHit reads what every hit of an npm remote reads: a
// cached packument and a cached tarball, with their blob rows.
func BenchmarkRemoteHit(b *testing.B) {
	f := newRemoteFixture(b)
	repo := f.remote("npmjs", npmstore.RemoteInput{URL: "http://127.0.0.1:5999"})
	f.packument(repo, "left-pad", []byte(`{"name":"left-pad","versions":{"1.0.0":{}}}`))
	f.tarball(repo, "left-pad", "1.0.0", bytes.Repeat([]byte("t"), 1000))
	b.Run("packument", func(b *testing.B) {
		for b.Loop() {
			if p, err := f.s.RemotePackument(f.ctx, repo, "left-pad"); err != nil || p == nil {
				b.Fatal(p, err)
			}
		}
	})
	b.Run("tarball", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.s.RemoteTarball(f.ctx, repo, "left-pad", "left-pad-1.0.0.tgz"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
