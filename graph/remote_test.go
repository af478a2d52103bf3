package graph

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"gocloud.dev/secrets/localsecrets"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// mountAPI serves the API over a's store, with the keyring of remote
// credentials (nil: none).
func mountAPI(a *testAPI, kr *credentials.Keyring) {
	r := mux.NewRouter()
	opts := Options{Logger: testsupport.Errors()}
	if kr != nil {
		opts.Keyring = kr
	}
	opts.Auth = auth.New(a.st, auth.Options{AdminToken: adminToken, Logger: opts.Logger})
	Mount(r, a.st, opts)
	a.serve(r)
}

func testKeyring(t *testing.T, st *store.Store) *credentials.Keyring {
	t.Helper()
	sk, err := localsecrets.NewRandomKey()
	if err != nil {
		t.Fatal(err)
	}
	k := localsecrets.NewKeeper(sk)
	t.Cleanup(func() { _ = k.Close() })
	kr, err := credentials.New(st, credentials.Options{Root: &credentials.RootKey{URI: "base64key://sha256:graph-test", Keeper: k}})
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

const remoteFields = `id name kind format remote { url cacheValidityHours health lastCheckedAt lastError hasCredentials
	cacheHits cacheMisses hitRatio cachedImages(first: 10) { edges { node { name manifestsCount blobsCount sizeBytes lastDownloadedAt
	tags { name digest mediaType stale } } } pageInfo { hasNextPage } } }`

// TestRemoteRepositories: a remote repository is created and changed
// through GraphQL; its credentials are sealed and never returned (only
// hasCredentials); its health, hit ratio and cached images show; a
// cached tag is invalidated and an image evicted; errors are INVALID_INPUT
// for bad settings and hosted repositories.
func TestRemoteRepositories(t *testing.T) {
	t.Parallel()
	a := newStoreAPI(t, true)
	mountAPI(a, testKeyring(t, a.st))
	nsID := a.createNamespace("remotes")
	a.createRepository("remotes", "hosted", "OCI", "PRIVATE")

	const secret = "graph-upstream-S3CRET"
	create := `mutation($in: CreateRepositoryInput!) { createRepository(input: $in) { repository { ` + remoteFields + ` } } }`
	resp := a.post(adminToken, create, map[string]any{"in": map[string]any{
		"namespace": "remotes", "name": "hub", "format": "DOCKER", "kind": "REMOTE", "visibility": "INTERNAL",
		"remote": map[string]any{"url": "https://registry.example.test/", "username": "robot", "password": secret, "cacheValidityHours": 6}}})
	if len(resp.Errors) > 0 {
		t.Fatalf("create: %+v", resp.Errors)
	}
	raw := string(resp.Data)
	if strings.Contains(raw, secret) || strings.Contains(raw, "robot") {
		t.Fatalf("credentials in the answer: %s", raw)
	}
	var created struct {
		CreateRepository struct {
			Repository struct {
				Kind   string
				Remote struct {
					URL                string
					CacheValidityHours int
					Health             string
					HasCredentials     bool
					HitRatio           *float64
					CachedImages       struct{ Edges []any }
				}
			}
		}
	}
	mustJSON(t, resp.Data, &created)
	rem := created.CreateRepository.Repository.Remote
	if created.CreateRepository.Repository.Kind != "REMOTE" || rem.URL != "https://registry.example.test" || rem.CacheValidityHours != 6 ||
		rem.Health != "UNKNOWN" || !rem.HasCredentials || rem.HitRatio != nil || len(rem.CachedImages.Edges) != 0 {
		t.Fatalf("created remote %+v", created)
	}
	var plain int
	if err := a.pool.QueryRow(context.Background(), `SELECT count(*) FROM container_remote_repositories
		WHERE namespace_id = $1 AND position($2::bytea in encrypted_password) > 0`, nsID, []byte(secret)).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("plaintext password stored: %d %v", plain, err)
	}

	// Bad inputs.
	for _, in := range []map[string]any{
		{"namespace": "remotes", "name": "bad1", "format": "OCI", "kind": "REMOTE"},
		{"namespace": "remotes", "name": "bad2", "format": "OCI", "kind": "REMOTE", "remote": map[string]any{"url": "ftp://x"}},
		{"namespace": "remotes", "name": "bad3", "format": "OCI", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "username": "only"}},
		{"namespace": "remotes", "name": "bad4", "format": "OCI", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "cacheValidityHours": 9000}},
		{"namespace": "remotes", "name": "bad5", "format": "MAVEN", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "negativeCacheMinutes": 1441}},
		{"namespace": "remotes", "name": "bad10", "format": "NPM", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "negativeCacheMinutes": 5}},
		{"namespace": "remotes", "name": "bad11", "format": "OCI", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "negativeCacheMinutes": 5}},
		{"namespace": "remotes", "name": "bad7", "format": "NPM", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "metadataCacheValidityHours": 9000}},
		{"namespace": "remotes", "name": "bad8", "format": "NPM", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "username": "a:b", "password": "p"}},
		{"namespace": "remotes", "name": "bad9", "format": "OCI", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "metadataCacheValidityHours": 2}},
		{"namespace": "remotes", "name": "bad6", "format": "OCI", "kind": "HOSTED", "remote": map[string]any{"url": "https://x"}},
	} {
		a.expectError(adminToken, create, map[string]any{"in": in}, CodeInvalidInput)
	}

	// Update: new validity, credentials cleared.
	update := `mutation($in: UpdateRepositoryInput!) { updateRepository(input: $in) { repository { remote { cacheValidityHours hasCredentials url } } } }`
	var updated struct {
		UpdateRepository struct {
			Repository struct {
				Remote struct {
					CacheValidityHours int
					HasCredentials     bool
					URL                string
				}
			}
		}
	}
	a.admin(update, map[string]any{"in": map[string]any{"namespace": "remotes", "name": "hub",
		"remote": map[string]any{"cacheValidityHours": 0, "clearCredentials": true}}}, &updated)
	if u := updated.UpdateRepository.Repository.Remote; u.CacheValidityHours != 0 || u.HasCredentials {
		t.Fatalf("updated %+v", u)
	}
	a.expectError(adminToken, update, map[string]any{"in": map[string]any{"namespace": "remotes", "name": "hosted",
		"remote": map[string]any{"cacheValidityHours": 1}}}, CodeInvalidInput)

	// Cached content, health and hit counters (written as the protocol
	// writes them).
	cs := container.New(a.st)
	tg, err := cs.ResolveTarget(context.Background(), "remotes", "hub", "alpine")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Remote.UpstreamImage != "alpine" {
		t.Fatalf("upstream name %q", tg.Remote.UpstreamImage)
	}
	p := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":3},"layers":[]}`,
		store.FormatSHA256(sha256.Sum256([]byte("cfg")))))
	if _, _, err := cs.CacheRemoteManifest(context.Background(), tg, container.RemoteManifestPut{Digest: sha256.Sum256(p),
		MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: p, Tag: "3.20"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.RecordRemoteHealth(context.Background(), nsID, tg.Remote.ID, enum.HealthUnhealthy, time.Now(), "upstream unreachable"); err != nil {
		t.Fatal(err)
	}
	if err := cs.RecordPulls(context.Background(), []container.Pull{
		{NamespaceID: nsID, RepositoryID: tg.RepositoryID, RemoteID: tg.Remote.ID, CacheOnly: true},
		{NamespaceID: nsID, RepositoryID: tg.RepositoryID, RemoteID: tg.Remote.ID, CacheOnly: true},
		{NamespaceID: nsID, RepositoryID: tg.RepositoryID, RemoteID: tg.Remote.ID, CacheOnly: true},
		{NamespaceID: nsID, RepositoryID: tg.RepositoryID, RemoteID: tg.Remote.ID, CacheOnly: true, Miss: true},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.FoldCounterDeltas(context.Background(), nsID, 0, 0); err != nil {
		t.Fatal(err)
	}
	query := `query { repository(namespace: "remotes", name: "hub") { ` + remoteFields + ` } }`
	var got struct {
		Repository struct {
			Remote struct {
				Health       string
				LastError    *string
				CacheHits    int64
				CacheMisses  int64
				HitRatio     *float64
				CachedImages struct {
					Edges []struct {
						Node struct {
							Name           string
							ManifestsCount int64
							SizeBytes      int64
							Tags           []struct {
								Name  string
								Stale bool
							}
						}
					}
				}
			}
		}
	}
	a.admin(query, nil, &got)
	g := got.Repository.Remote
	if g.Health != "UNHEALTHY" || g.LastError == nil || *g.LastError != "upstream unreachable" || g.CacheHits != 3 || g.CacheMisses != 1 ||
		g.HitRatio == nil || *g.HitRatio != 0.75 {
		t.Fatalf("remote %+v", g)
	}
	if len(g.CachedImages.Edges) != 1 {
		t.Fatalf("cached images %+v", g.CachedImages)
	}
	img := g.CachedImages.Edges[0].Node
	if img.Name != "alpine" || img.ManifestsCount != 1 || img.SizeBytes != int64(len(p)) || len(img.Tags) != 1 || img.Tags[0].Name != "3.20" || !img.Tags[0].Stale {
		t.Fatalf("cached image %+v (validity 0: the tag is stale)", img)
	}

	// A reader of the namespace sees the remote (INTERNAL), never its
	// credentials; it may not invalidate or evict.
	reader := a.createToken(adminToken, "remotes", "reader", []string{"READ"}, nil).Secret
	r2 := a.post(reader, query, nil)
	if len(r2.Errors) > 0 || !strings.Contains(string(r2.Data), `"url"`) {
		t.Fatalf("reader: %+v %s", r2.Errors, r2.Data)
	}
	invalidate := `mutation { invalidateRemoteTag(input: {namespace: "remotes", repository: "hub", image: "alpine", tag: "3.20"}) { tag } }`
	evict := `mutation { evictRemoteImage(input: {namespace: "remotes", repository: "hub", image: "alpine"}) { releasedCount gcCandidateCount } }`
	a.expectError(reader, invalidate, nil, CodeForbidden)
	a.expectError(reader, evict, nil, CodeForbidden)
	a.admin(invalidate, nil, nil)
	a.expectError(adminToken, `mutation { invalidateRemoteTag(input: {namespace: "remotes", repository: "hub", image: "alpine", tag: "nope"}) { tag } }`, nil, CodeNotFound)
	var ev struct {
		EvictRemoteImage struct{ ReleasedCount, GcCandidateCount int }
	}
	a.admin(evict, nil, &ev)
	if ev.EvictRemoteImage.ReleasedCount != 1 || ev.EvictRemoteImage.GcCandidateCount != 1 {
		t.Fatalf("evict %+v", ev)
	}
	a.expectError(adminToken, evict, nil, CodeNotFound)
	a.expectError(adminToken, `mutation { evictRemoteImage(input: {namespace: "remotes", repository: "hosted", image: "x"}) { image } }`, nil, CodeInvalidInput)

	// Without a keyring, credentials are refused (UNAVAILABLE), settings
	// without them are not.
	b := &testAPI{t: t, pool: a.pool, st: a.st, stmts: a.stmts}
	mountAPI(b, nil)
	b.expectError(adminToken, create, map[string]any{"in": map[string]any{
		"namespace": "remotes", "name": "nokey", "format": "OCI", "kind": "REMOTE",
		"remote": map[string]any{"url": "https://registry.example.test", "username": "u", "password": "p"}}}, CodeUnavailable)
}

// TestNpmRemoteRepositories: an npm remote is created and changed through
// GraphQL with its metadata validity and sealed credentials (never
// returned, never stored in plaintext), lists its cached packages and has
// its cached packuments invalidated by an administrator.
func TestNpmRemoteRepositories(t *testing.T) {
	t.Parallel()
	a := newStoreAPI(t, true)
	mountAPI(a, testKeyring(t, a.st))
	nsID := a.createNamespace("npmremotes")
	const secret = "npm-upstream-S3CRET"
	create := `mutation($in: CreateRepositoryInput!) { createRepository(input: $in) { repository { kind format
		remote { url cacheValidityHours metadataCacheValidityHours hasCredentials cachedPackages { name } } } } }`
	resp := a.post(adminToken, create, map[string]any{"in": map[string]any{
		"namespace": "npmremotes", "name": "npmjs", "format": "NPM", "kind": "REMOTE", "visibility": "PUBLIC",
		"remote": map[string]any{"url": "https://npm.example.test/", "username": "robot", "password": secret}}})
	if len(resp.Errors) > 0 {
		t.Fatalf("create: %+v", resp.Errors)
	}
	if strings.Contains(string(resp.Data), secret) {
		t.Fatalf("credentials in the answer: %s", resp.Data)
	}
	var created struct {
		CreateRepository struct {
			Repository struct {
				Kind, Format string
				Remote       struct {
					URL                        string
					CacheValidityHours         int
					MetadataCacheValidityHours *int
					HasCredentials             bool
					CachedPackages             []any
				}
			}
		}
	}
	mustJSON(t, resp.Data, &created)
	rem := created.CreateRepository.Repository.Remote
	if created.CreateRepository.Repository.Format != "NPM" || rem.URL != "https://npm.example.test" || rem.CacheValidityHours != 24 ||
		rem.MetadataCacheValidityHours == nil || *rem.MetadataCacheValidityHours != 1 || !rem.HasCredentials || len(rem.CachedPackages) != 0 {
		t.Fatalf("created npm remote %s", resp.Data)
	}
	var plain int
	if err := a.pool.QueryRow(context.Background(), `SELECT count(*) FROM npm_remote_repositories
		WHERE namespace_id = $1 AND (position($2::bytea in encrypted_auth_token) > 0 OR encrypted_auth_token IS NULL)`,
		nsID, []byte(secret)).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("npm remote credentials not sealed: %d %v", plain, err)
	}
	update := `mutation($in: UpdateRepositoryInput!) { updateRepository(input: $in) { repository { remote { metadataCacheValidityHours hasCredentials } } } }`
	resp = a.post(adminToken, update, map[string]any{"in": map[string]any{"namespace": "npmremotes", "name": "npmjs",
		"remote": map[string]any{"metadataCacheValidityHours": 0, "clearCredentials": true}}})
	if len(resp.Errors) > 0 || !strings.Contains(string(resp.Data), `"metadataCacheValidityHours":0,"hasCredentials":false`) {
		t.Fatalf("update: %s %+v", resp.Data, resp.Errors)
	}
	a.expectError(adminToken, update, map[string]any{"in": map[string]any{"namespace": "npmremotes", "name": "npmjs",
		"remote": map[string]any{"metadataCacheValidityHours": -1}}}, CodeInvalidInput)

	inval := `mutation($in: RemotePackageRefInput!) { invalidateRemoteMetadata(input: $in) { invalidatedCount } }`
	resp = a.post(adminToken, inval, map[string]any{"in": map[string]any{"namespace": "npmremotes", "repository": "npmjs"}})
	if len(resp.Errors) > 0 || !strings.Contains(string(resp.Data), `"invalidatedCount":0`) {
		t.Fatalf("invalidate all: %s %+v", resp.Data, resp.Errors)
	}
	a.expectError(adminToken, inval, map[string]any{"in": map[string]any{"namespace": "npmremotes", "repository": "npmjs", "package": "nope"}}, CodeNotFound)
}
