package container_test

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
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

type remoteFixture struct {
	t    testing.TB
	ctx  context.Context
	pool *pgxpool.Pool
	st   *store.Store
	cs   *container.Store
	ns   *store.Namespace
}

func newRemoteFixture(t testing.TB) *remoteFixture {
	t.Helper()
	pool := testdb.New(t)
	f := &remoteFixture{t: t, ctx: context.Background(), pool: pool,
		st: testsupport.Store(t, testsupport.StoreOptions{Pool: pool, Mem: true})}
	f.cs = container.New(f.st)
	sk, err := localsecrets.NewRandomKey()
	if err != nil {
		t.Fatal(err)
	}
	k := localsecrets.NewKeeper(sk)
	t.Cleanup(func() { _ = k.Close() })
	kr, err := credentials.New(f.st, credentials.Options{Root: &credentials.RootKey{URI: "base64key://sha256:remote-test", Keeper: k}})
	if err != nil {
		t.Fatal(err)
	}
	f.cs.SetKeyring(kr)
	if f.ns, err = f.st.CreateNamespace(f.ctx, "cachens"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *remoteFixture) remote(name, url string, creds *container.Credentials) *store.Repository {
	f.t.Helper()
	child, err := f.cs.NewRemote(container.RemoteInput{URL: url, Credentials: creds})
	if err != nil {
		f.t.Fatal(err)
	}
	repo, err := f.st.CreateRepository(f.ctx, store.NewRepository{Namespace: f.ns.Slug, Name: name, Format: enum.FormatOCI,
		Kind: enum.KindRemote, Visibility: enum.VisibilityPrivate, Child: child})
	if err != nil {
		f.t.Fatal(err)
	}
	return repo
}

func (f *remoteFixture) target(repo, image string) *container.Target {
	f.t.Helper()
	t, err := f.cs.ResolveTarget(f.ctx, f.ns.Slug, repo, image)
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}

func (f *remoteFixture) count(q string, args ...any) int64 {
	f.t.Helper()
	var n int64
	if err := f.pool.QueryRow(f.ctx, q, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func manifestJSON(kind string, refs ...[32]byte) []byte {
	var b strings.Builder
	switch kind {
	case "index":
		b.WriteString(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[`)
		for i, r := range refs {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":100}`, store.FormatSHA256(r))
		}
		b.WriteString(`]}`)
	default:
		fmt.Fprintf(&b, `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":10},"layers":[],"annotations":{"k":"%s"}}`,
			store.FormatSHA256(refs[0]), kind)
	}
	return []byte(b.String())
}

// TestRemoteSettingsAndCredentials: a remote is created with its
// credentials sealed (no plaintext in the row), resolves with the Docker
// Hub library/ rule only for Docker Hub, and opens its credentials back.
func TestRemoteSettingsAndCredentials(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	f.remote("hub", "https://registry-1.docker.io/", &container.Credentials{Username: "robot-user", Password: "s3cret-pass"})
	f.remote("other", "http://127.0.0.1:5999", nil)

	if n := f.count(`SELECT count(*) FROM container_remote_repositories WHERE namespace_id = $1
		AND (position(convert_to('s3cret-pass', 'UTF8') in encrypted_password) > 0 OR position(convert_to('robot-user', 'UTF8') in encrypted_username) > 0)`,
		f.ns.ID); n != 0 {
		t.Fatalf("plaintext credentials in the row")
	}
	th := f.target("hub", "alpine")
	if th.Remote == nil || th.Remote.UpstreamImage != "library/alpine" || th.Remote.URL != "https://registry-1.docker.io" || !th.Remote.HasCredentials {
		t.Fatalf("hub target %+v", th.Remote)
	}
	if th.Remote.CacheValidity != 24*time.Hour {
		t.Fatalf("default validity %v", th.Remote.CacheValidity)
	}
	to := f.target("other", "alpine")
	if to.Remote.UpstreamImage != "alpine" || to.Remote.HasCredentials {
		t.Fatalf("other target %+v", to.Remote)
	}
	c, err := f.cs.RemoteCredentials(f.ctx, f.ns.ID, th.Remote.ID)
	if err != nil || c == nil || c.Username != "robot-user" || c.Password != "s3cret-pass" {
		t.Fatalf("credentials %v %v", c != nil, err)
	}
	if s := fmt.Sprintf("%v %+v %#v", *c, c, *c); strings.Contains(s, "s3cret") || strings.Contains(s, "robot") {
		t.Fatalf("credentials print: %s", s)
	}
	if c, err := f.cs.RemoteCredentials(f.ctx, f.ns.ID, to.Remote.ID); err != nil || c != nil {
		t.Fatalf("no credentials: %v %v", c, err)
	}

	// A settings change bumps settings_changed_at; clearing removes the
	// whole credential unit.
	before := th.Remote.SettingsChangedAt
	hours := 0
	upd, err := f.cs.UpdateRemote(container.RemoteUpdate{ClearCredentials: true, CacheValidityHours: &hours})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdateRepository(f.ctx, store.RepositoryRef{Namespace: f.ns.Slug, Name: "hub"}, store.RepositoryUpdate{Child: upd}); err != nil {
		t.Fatal(err)
	}
	th = f.target("hub", "alpine")
	if th.Remote.HasCredentials || th.Remote.CacheValidity != 0 || !th.Remote.SettingsChangedAt.After(before) {
		t.Fatalf("after update %+v", th.Remote)
	}
	if n := f.count(`SELECT count(*) FROM container_remote_repositories WHERE namespace_id = $1 AND id = $2
		AND num_nulls(wrapped_dek, ns_key_id, ns_key_version, encrypted_username, encrypted_password) = 5`, f.ns.ID, th.Remote.ID); n != 1 {
		t.Fatal("credential unit not cleared")
	}

	// Refusals: bad URLs, half credentials, a hosted repository's update.
	for _, u := range []string{"ftp://x", "http://", "https://u:p@host", "https://host/?q=1", strings.Repeat("h", 1100)} {
		if _, err := f.cs.NewRemote(container.RemoteInput{URL: u}); !store.HasCode(err, store.CodeInvalidInput) {
			t.Errorf("URL %q: %v", u, err)
		}
	}
	if _, err := f.cs.NewRemote(container.RemoteInput{URL: "https://h", Credentials: &container.Credentials{Username: "u"}}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Errorf("half credentials: %v", err)
	}
	if _, err := f.st.CreateRepository(f.ctx, store.NewRepository{Namespace: f.ns.Slug, Name: "noremote", Format: enum.FormatOCI,
		Kind: enum.KindRemote, Visibility: enum.VisibilityPrivate}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Errorf("remote without settings: %v", err)
	}
}

// TestRefreshRemoteImage: a target resolved before its image's first pull
// has no image; once another pull cached it, RefreshRemoteImage finds the
// image and the cached tag shows through the refreshed target.
func TestRefreshRemoteImage(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	f.remote("mirror", "http://127.0.0.1:5999", nil)
	stale := f.target("mirror", "team/app")
	if err := f.cs.RefreshRemoteImage(f.ctx, stale); err != nil || stale.ImageID != uuid.Nil {
		t.Fatalf("before any pull: image %v, %v", stale.ImageID, err)
	}
	stale = f.target("mirror", "team/app")
	p := manifestJSON("amd64", sha256.Sum256([]byte("config")))
	_, imageID, err := f.cs.CacheRemoteManifest(f.ctx, f.target("mirror", "team/app"), container.RemoteManifestPut{
		Digest: sha256.Sum256(p), MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: p, Tag: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if rt, err := f.cs.RemoteTagByName(f.ctx, stale, "v1"); err != nil || rt != nil {
		t.Fatalf("the stale target sees %+v, %v", rt, err)
	}
	if err := f.cs.RefreshRemoteImage(f.ctx, stale); err != nil || stale.ImageID != imageID {
		t.Fatalf("refreshed image %v, want %v: %v", stale.ImageID, imageID, err)
	}
	if rt, err := f.cs.RemoteTagByName(f.ctx, stale, "v1"); err != nil || rt == nil || rt.Manifest.Digest != sha256.Sum256(p) {
		t.Fatalf("the refreshed target sees %+v, %v", rt, err)
	}
}

// TestRemoteCacheIndexLazyChildren: an index is cached verbatim with its
// children recorded; a child that arrives later is linked to it and its
// size added; tags move, are confirmed and dropped; accounting counts the
// cached content and the reconciliation agrees.
func TestRemoteCacheIndexLazyChildren(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	f.remote("mirror", "http://127.0.0.1:5999", nil)
	tg := f.target("mirror", "team/app")
	if tg.ImageID != uuid.Nil {
		t.Fatal("image before the first pull")
	}
	cfg := sha256.Sum256([]byte("config"))
	amd := manifestJSON("amd64", cfg)
	arm := manifestJSON("arm64", cfg)
	amdD, armD := sha256.Sum256(amd), sha256.Sum256(arm)
	idx := manifestJSON("index", amdD, armD)
	idxD := sha256.Sum256(idx)

	m, _, err := f.cs.CacheRemoteManifest(f.ctx, tg, container.RemoteManifestPut{Digest: idxD, MediaType: "application/vnd.oci.image.index.v1+json",
		Payload: idx, Children: [][32]byte{amdD, armD}, Tag: "v1", ETag: `"` + store.FormatSHA256(idxD) + `"`})
	if err != nil {
		t.Fatal(err)
	}
	if m.Size != int64(len(idx)) {
		t.Fatalf("index size %d, want its payload %d", m.Size, len(idx))
	}
	tg = f.target("mirror", "team/app")
	rt, err := f.cs.RemoteTagByName(f.ctx, tg, "v1")
	if err != nil || rt == nil || rt.Manifest.Digest != idxD || rt.ETag == "" {
		t.Fatalf("tag %+v %v", rt, err)
	}
	if err := f.cs.ManifestPayload(f.ctx, tg, rt.Manifest); err != nil {
		t.Fatal(err)
	}
	got, err := f.cs.ReadManifest(f.ctx, rt.Manifest, 1<<20)
	if err != nil || !bytes.Equal(got, idx) {
		t.Fatalf("stored index differs: %v", err)
	}
	// The amd64 child arrives: linked, and the index's size grows by it.
	child, _, err := f.cs.CacheRemoteManifest(f.ctx, tg, container.RemoteManifestPut{Digest: amdD,
		MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: amd, BlobsSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if child.Size != int64(len(amd))+10 {
		t.Fatalf("child size %d", child.Size)
	}
	if n := f.count(`SELECT count(*) FROM container_remote_manifest_relationships WHERE namespace_id = $1`, f.ns.ID); n != 1 {
		t.Fatalf("%d relationships, want 1", n)
	}
	idxRow, err := f.cs.RemoteManifestByDigest(f.ctx, tg, idxD)
	if err != nil || idxRow.Size != int64(len(idx))+child.Size {
		t.Fatalf("index size after child: %+v %v", idxRow, err)
	}
	// The arm64 child was never asked for.
	if _, err := f.cs.RemoteManifestByDigest(f.ctx, tg, armD); !store.HasCode(err, container.CodeManifestUnknown) {
		t.Fatalf("arm64 child: %v", err)
	}
	// Caching the same manifest again only moves a tag.
	if _, _, err := f.cs.CacheRemoteManifest(f.ctx, tg, container.RemoteManifestPut{Digest: amdD,
		MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: amd, BlobsSize: 10, Tag: "amd"}); err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(*) FROM container_remote_manifests WHERE namespace_id = $1`, f.ns.ID); n != 2 {
		t.Fatalf("%d manifests", n)
	}
	// Revalidation outcomes.
	rt, _ = f.cs.RemoteTagByName(f.ctx, tg, "v1")
	checked := rt.CheckedAt
	time.Sleep(10 * time.Millisecond)
	if err := f.cs.ConfirmRemoteTag(f.ctx, tg, "v1", rt.Manifest.ID, ""); err != nil {
		t.Fatal(err)
	}
	rt, _ = f.cs.RemoteTagByName(f.ctx, tg, "v1")
	if !rt.CheckedAt.After(checked) || rt.ETag == "" {
		t.Fatalf("confirm: %v -> %v etag %q", checked, rt.CheckedAt, rt.ETag)
	}
	if _, err := f.cs.PointRemoteTag(f.ctx, tg, "v1", amdD, ""); err != nil {
		t.Fatal(err)
	}
	if rt, _ = f.cs.RemoteTagByName(f.ctx, tg, "v1"); rt.Manifest.Digest != amdD {
		t.Fatal("tag not moved")
	}
	if err := f.cs.DropRemoteTag(f.ctx, tg, "v1"); err != nil {
		t.Fatal(err)
	}
	if rt, _ = f.cs.RemoteTagByName(f.ctx, tg, "v1"); rt != nil {
		t.Fatal("tag not dropped")
	}
	tags, err := f.cs.RemoteTags(f.ctx, tg, "", 10)
	if err != nil || len(tags) != 1 || tags[0] != "amd" {
		t.Fatalf("tags %v %v", tags, err)
	}

	// A blob fill: staged from a stream, committed into the image.
	layer := bytes.Repeat([]byte("layer"), 4000)
	layerD := sha256.Sum256(layer)
	staged, err := f.cs.StageRemoteBlob(f.ctx, tg, bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	if staged.SHA256() != layerD {
		t.Fatal("staged digest")
	}
	if err := f.cs.CommitRemoteBlob(f.ctx, tg, staged, "application/vnd.oci.image.layer.v1.tar"); err != nil {
		t.Fatal(err)
	}
	b, err := f.cs.RemoteBlob(f.ctx, tg, layerD)
	if err != nil || b.Size != int64(len(layer)) {
		t.Fatalf("cached blob %+v %v", b, err)
	}
	// Another image of the same remote links it without a fill.
	other := f.target("mirror", "team/other")
	if ok, err := f.cs.RemoteBlobInRepository(f.ctx, other, layerD); err != nil || !ok {
		t.Fatalf("in repository: %v %v", ok, err)
	}
	if err := f.cs.LinkRemoteBlob(f.ctx, other, layerD, ""); err != nil {
		t.Fatal(err)
	}
	other = f.target("mirror", "team/other")
	if _, err := f.cs.RemoteBlob(f.ctx, other, layerD); err != nil {
		t.Fatal(err)
	}

	// Accounting: fold the deltas; the repository counts the distinct
	// cached bytes once and the cached manifests; reconciliation finds no
	// drift.
	if _, err := f.st.FoldCounterDeltas(f.ctx, f.ns.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	_, repo, err := f.st.RepositoryByName(f.ctx, f.ns.Slug, "mirror")
	if err != nil {
		t.Fatal(err)
	}
	wantSize := int64(len(idx) + len(amd) + len(layer))
	if repo.SizeBytes != wantSize || repo.ArtifactsCount != 2 {
		t.Fatalf("repository size %d artifacts %d, want %d and 2", repo.SizeBytes, repo.ArtifactsCount, wantSize)
	}
	res, err := f.st.ReconcileNamespaceCounters(f.ctx, f.ns.ID, 0)
	if err != nil || len(res.Drifts) != 0 {
		t.Fatalf("reconcile: %+v %v", res.Drifts, err)
	}

	// Eviction of one image detaches its rows; the layer stays attached
	// through the other image; the manifests' blobs become candidates.
	rel, err := f.cs.EvictRemoteImage(f.ctx, container.RemoteRef{Repository: store.RepositoryRef{Namespace: f.ns.Slug, Name: "mirror"}, Image: "team/app"})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Attachments != 3 || rel.Candidates != 2 {
		t.Fatalf("released %+v, want 3 attachments and 2 candidates (the two manifests)", rel)
	}
	for _, tbl := range []string{"container_remote_manifests", "container_remote_tags", "container_remote_manifest_children", "container_remote_manifest_relationships"} {
		if n := f.count(`SELECT count(*) FROM `+tbl+` WHERE namespace_id = $1`, f.ns.ID); n != 0 {
			t.Errorf("%s: %d rows left", tbl, n)
		}
	}
	if n := f.count(`SELECT count(*) FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 = $2`, f.ns.ID, layerD[:]); n != 0 {
		t.Fatal("the shared layer became a candidate")
	}
	if _, err := f.st.FoldCounterDeltas(f.ctx, f.ns.ID, 0, 0); err != nil {
		t.Fatal(err)
	}
	_, repo, _ = f.st.RepositoryByName(f.ctx, f.ns.Slug, "mirror")
	if repo.SizeBytes != int64(len(layer)) || repo.ArtifactsCount != 0 {
		t.Fatalf("after eviction: size %d artifacts %d", repo.SizeBytes, repo.ArtifactsCount)
	}
	if res, err := f.st.ReconcileNamespaceCounters(f.ctx, f.ns.ID, 0); err != nil || len(res.Drifts) != 0 {
		t.Fatalf("reconcile after eviction: %+v %v", res.Drifts, err)
	}

	// Stale eviction by last download; then the purge of the trashed
	// repository empties what is left.
	if n, _, err := f.cs.EvictStaleRemoteImages(f.ctx, f.ns.ID, time.Now().Add(-time.Hour), 10, 0); err != nil || n != 0 {
		t.Fatalf("nothing is stale yet: %d %v", n, err)
	}
	if n, rel, err := f.cs.EvictStaleRemoteImages(f.ctx, f.ns.ID, time.Now().Add(time.Hour), 10, 0); err != nil || n != 1 || rel.Candidates != 1 {
		t.Fatalf("stale eviction: %d %+v %v", n, rel, err)
	}
	if _, err := f.st.SoftDeleteRepository(f.ctx, store.RepositoryRef{Namespace: f.ns.Slug, Name: "mirror"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := catalog.New(f.st).PurgeRepository(f.ctx, store.RepositoryRef{Namespace: f.ns.Slug, Name: "mirror"}); err != nil {
		t.Fatal(err)
	}
	if n := f.count(`SELECT count(*) FROM container_remote_repositories WHERE namespace_id = $1`, f.ns.ID); n != 0 {
		t.Fatalf("%d remote rows after purge", n)
	}
}

// TestRemotePurgeWithCachedImages: purging a trashed remote repository
// evicts its cached images in batches and then deletes its row.
func TestRemotePurgeWithCachedImages(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t)
	f.remote("mirror", "http://127.0.0.1:5999", nil)
	for i := range 3 {
		tg := f.target("mirror", fmt.Sprintf("img%d", i))
		cfg := sha256.Sum256([]byte(fmt.Sprint("cfg", i)))
		p := manifestJSON(fmt.Sprint("m", i), cfg)
		if _, _, err := f.cs.CacheRemoteManifest(f.ctx, tg, container.RemoteManifestPut{Digest: sha256.Sum256(p),
			MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: p, Tag: "latest"}); err != nil {
			t.Fatal(err)
		}
	}
	ref := store.RepositoryRef{Namespace: f.ns.Slug, Name: "mirror"}
	if _, err := f.st.SoftDeleteRepository(f.ctx, ref); err != nil {
		t.Fatal(err)
	}
	_, purged, err := catalog.New(f.st).PurgeRepository(f.ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if purged.Released.Candidates != 3 {
		t.Fatalf("purge released %+v", purged.Released)
	}
	if n := f.count(`SELECT count(*) FROM container_remote_images WHERE namespace_id = $1`, f.ns.ID); n != 0 {
		t.Fatalf("%d cached images left", n)
	}
}

// TestUpstreamImageName: Docker Hub's library/ rule applies to
// one-component names when the upstream is Docker Hub (by host), and
// nowhere else.
func TestUpstreamImageName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ url, image, want string }{
		{"https://registry-1.docker.io", "alpine", "library/alpine"},
		{"https://docker.io/", "alpine", "library/alpine"},
		{"https://index.docker.io", "nginx", "library/nginx"},
		{"https://REGISTRY.HUB.DOCKER.COM", "busybox", "library/busybox"},
		{"https://registry-1.docker.io", "library/alpine", "library/alpine"},
		{"https://registry-1.docker.io", "grafana/grafana", "grafana/grafana"},
		{"https://registry.example.test", "alpine", "alpine"},
		{"http://127.0.0.1:5000", "alpine", "alpine"},
		{"https://docker.io.example.test", "alpine", "alpine"},
	} {
		if got := container.UpstreamImageName(c.url, c.image); got != c.want {
			t.Errorf("UpstreamImageName(%q, %q) = %q, want %q", c.url, c.image, got, c.want)
		}
	}
}

// BenchmarkRemoteHit reads what the hits of a pull-through cache read: a
// cached tag with its manifest, a cached manifest by digest, and a cached
// blob with its blob row.
func BenchmarkRemoteHit(b *testing.B) {
	f := newRemoteFixture(b)
	f.remote("mirror", "http://127.0.0.1:5999", nil)
	tg := f.target("mirror", "team/app")
	m := manifestJSON("amd64", sha256.Sum256([]byte("config")))
	md := sha256.Sum256(m)
	if _, _, err := f.cs.CacheRemoteManifest(f.ctx, tg, container.RemoteManifestPut{Digest: md, MediaType: "application/vnd.oci.image.manifest.v1+json",
		Payload: m, Tag: "v1", ETag: `"` + store.FormatSHA256(md) + `"`}); err != nil {
		b.Fatal(err)
	}
	tg = f.target("mirror", "team/app")
	layer := bytes.Repeat([]byte("layer"), 4000)
	staged, err := f.cs.StageRemoteBlob(f.ctx, tg, bytes.NewReader(layer))
	if err != nil {
		b.Fatal(err)
	}
	if err := f.cs.CommitRemoteBlob(f.ctx, tg, staged, "application/vnd.oci.image.layer.v1.tar"); err != nil {
		b.Fatal(err)
	}
	b.Run("tag", func(b *testing.B) {
		for b.Loop() {
			if rt, err := f.cs.RemoteTagByName(f.ctx, tg, "v1"); err != nil || rt == nil {
				b.Fatal(rt, err)
			}
		}
	})
	b.Run("manifest-by-digest", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.cs.RemoteManifestByDigest(f.ctx, tg, md); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("blob", func(b *testing.B) {
		for b.Loop() {
			if _, err := f.cs.RemoteBlob(f.ctx, tg, sha256.Sum256(layer)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
