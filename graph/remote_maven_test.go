package graph

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

const mavenRemoteFields = `id name kind format remote { url cacheValidityHours metadataCacheValidityHours negativeCacheMinutes
	health lastError hasCredentials cacheHits cacheMisses hitRatio
	cachedMavenPackages(first: 10) { edges { node { groupId artifactId sizeBytes lastDownloadedAt
	versions { version sizeBytes filesCount } } } pageInfo { hasNextPage } } }`

// TestMavenRemoteRepositories: a MAVEN remote is created and changed
// through GraphQL with its metadata validity and negative cache; its
// credentials are sealed and never returned; its cached packages, health
// and hit ratio show; invalidateRemoteMavenMetadata makes its metadata
// stale; bad settings are INVALID_INPUT.
func TestMavenRemoteRepositories(t *testing.T) {
	t.Parallel()
	a := newStoreAPI(t, true)
	kr := testKeyring(t, a.st)
	mountAPI(a, kr)
	nsID := a.createNamespace("mremotes")
	a.createRepository("mremotes", "hosted", "MAVEN", "PRIVATE")

	const secret = "maven-upstream-S3CRET"
	create := `mutation($in: CreateRepositoryInput!) { createRepository(input: $in) { repository { ` + mavenRemoteFields + ` } } }`
	resp := a.post(adminToken, create, map[string]any{"in": map[string]any{
		"namespace": "mremotes", "name": "central", "format": "MAVEN", "kind": "REMOTE", "visibility": "PUBLIC",
		"remote": map[string]any{"url": "https://repo.example.test/maven2/", "username": "robot", "password": secret,
			"metadataCacheValidityHours": 2, "negativeCacheMinutes": 5}}})
	if len(resp.Errors) > 0 {
		t.Fatalf("create: %+v", resp.Errors)
	}
	if raw := string(resp.Data); strings.Contains(raw, secret) || strings.Contains(raw, "robot") {
		t.Fatalf("credentials in the answer: %s", raw)
	}
	type remote struct {
		URL                        string
		CacheValidityHours         int
		MetadataCacheValidityHours *int
		NegativeCacheMinutes       *int
		Health                     string
		LastError                  *string
		HasCredentials             bool
		CacheHits, CacheMisses     int64
		HitRatio                   *float64
		CachedMavenPackages        struct {
			Edges []struct {
				Node struct {
					GroupID, ArtifactID string
					SizeBytes           int64
					LastDownloadedAt    *time.Time
					Versions            []struct {
						Version    string
						SizeBytes  int64
						FilesCount int
					}
				}
			}
		}
	}
	var created struct {
		CreateRepository struct{ Repository struct{ Remote remote } }
	}
	mustJSON(t, resp.Data, &created)
	rem := created.CreateRepository.Repository.Remote
	if rem.URL != "https://repo.example.test/maven2" || rem.CacheValidityHours != 24 || rem.MetadataCacheValidityHours == nil ||
		*rem.MetadataCacheValidityHours != 2 || *rem.NegativeCacheMinutes != 5 || !rem.HasCredentials || rem.Health != "UNKNOWN" {
		t.Fatalf("created %+v", rem)
	}
	var plain int
	if err := a.pool.QueryRow(context.Background(), `SELECT count(*) FROM maven_remote_repositories
		WHERE namespace_id = $1 AND (encrypted_password IS NULL OR position($2::bytea in encrypted_password) > 0)`, nsID, []byte(secret)).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("password not sealed: %d %v", plain, err)
	}
	// The sealed credentials open for the protocol's upstream client.
	ms := maven.New(a.st)
	ms.SetKeyring(kr)
	tg, err := ms.ResolveTarget(context.Background(), "mremotes", "central")
	if err != nil || tg.Remote == nil || tg.Remote.MetadataValidity != 2*time.Hour || tg.Remote.NegativeTTL != 5*time.Minute {
		t.Fatalf("target %+v %v", tg, err)
	}
	if c, err := ms.RemoteCredentials(context.Background(), nsID, tg.Remote.ID); err != nil || c == nil || c.Username != "robot" || c.Password != secret {
		t.Fatalf("opened credentials: %v", err)
	}

	for _, in := range []map[string]any{
		{"namespace": "mremotes", "name": "bad1", "format": "MAVEN", "kind": "REMOTE"},
		{"namespace": "mremotes", "name": "bad2", "format": "MAVEN", "kind": "REMOTE", "remote": map[string]any{"url": "file:///etc"}},
		{"namespace": "mremotes", "name": "bad3", "format": "MAVEN", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "metadataCacheValidityHours": -1}},
		{"namespace": "mremotes", "name": "bad4", "format": "MAVEN", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "negativeCacheMinutes": 1441}},
		{"namespace": "mremotes", "name": "bad5", "format": "MAVEN", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "password": "p"}},
		{"namespace": "mremotes", "name": "bad6", "format": "OCI", "kind": "REMOTE", "remote": map[string]any{"url": "https://x", "negativeCacheMinutes": 1}},
	} {
		a.expectError(adminToken, create, map[string]any{"in": in}, CodeInvalidInput)
	}

	update := `mutation($in: UpdateRepositoryInput!) { updateRepository(input: $in) { repository { remote { metadataCacheValidityHours negativeCacheMinutes hasCredentials } } } }`
	var updated struct {
		UpdateRepository struct {
			Repository struct {
				Remote struct {
					MetadataCacheValidityHours, NegativeCacheMinutes int
					HasCredentials                                   bool
				}
			}
		}
	}
	a.admin(update, map[string]any{"in": map[string]any{"namespace": "mremotes", "name": "central",
		"remote": map[string]any{"metadataCacheValidityHours": 0, "negativeCacheMinutes": 0, "clearCredentials": true}}}, &updated)
	if u := updated.UpdateRepository.Repository.Remote; u.MetadataCacheValidityHours != 0 || u.NegativeCacheMinutes != 0 || u.HasCredentials {
		t.Fatalf("updated %+v", u)
	}

	// Cached content, health and counters, written as the protocol writes
	// them.
	tg, err = ms.ResolveTarget(context.Background(), "mremotes", "central")
	if err != nil {
		t.Fatal(err)
	}
	cache := func(ref maven.FileRef, body string) *maven.RemoteFile {
		t.Helper()
		st, err := ms.StageRemoteFile(context.Background(), tg, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		f, err := ms.CommitRemoteFile(context.Background(), tg, ref, st, maven.RemoteFileMeta{ETag: `"e1"`})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	jar := cache(maven.FileRef{GroupID: "com.example", ArtifactID: "lib", Version: "1.0", FileName: "lib-1.0.jar"}, "jar bytes")
	cache(maven.FileRef{GroupID: "com.example", ArtifactID: "lib", Version: "1.0", FileName: "lib-1.0.pom"}, "<project/>")
	cache(maven.FileRef{GroupID: "com.example", ArtifactID: "lib", FileName: mavenlayout.MetadataFile}, "<metadata/>")
	if err := ms.RecordRemoteHealth(context.Background(), nsID, tg.Remote.ID, enum.HealthUnhealthy, time.Now(), "upstream unreachable"); err != nil {
		t.Fatal(err)
	}
	for _, miss := range []bool{true, false, false, false} {
		if err := ms.RecordCounts(context.Background(), []maven.Count{ms.RemoteAccessCount(tg, maven.RemoteAccess{File: jar, Miss: miss})}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.st.FoldCounterDeltas(context.Background(), nsID, 0, 0); err != nil {
		t.Fatal(err)
	}
	var got struct{ Repository struct{ Remote remote } }
	a.admin(`query { repository(namespace: "mremotes", name: "central") { `+mavenRemoteFields+` } }`, nil, &got)
	g := got.Repository.Remote
	if g.Health != "UNHEALTHY" || g.LastError == nil || g.CacheHits != 3 || g.CacheMisses != 1 || g.HitRatio == nil || *g.HitRatio != 0.75 {
		t.Fatalf("remote %+v", g)
	}
	if len(g.CachedMavenPackages.Edges) != 1 {
		t.Fatalf("packages %+v", g.CachedMavenPackages)
	}
	p := g.CachedMavenPackages.Edges[0].Node
	if p.GroupID != "com.example" || p.ArtifactID != "lib" || p.SizeBytes != int64(len("jar bytes")+len("<project/>")) ||
		p.LastDownloadedAt == nil || len(p.Versions) != 1 || p.Versions[0].FilesCount != 2 {
		t.Fatalf("package %+v", p)
	}

	// Invalidation: ADMIN only; the metadata becomes stale, the release
	// files stay fresh.
	inv := `mutation($in: RemoteMavenMetadataRefInput!) { invalidateRemoteMavenMetadata(input: $in) { invalidatedCount } }`
	var res struct {
		InvalidateRemoteMavenMetadata struct{ InvalidatedCount int }
	}
	a.admin(inv, map[string]any{"in": map[string]any{"namespace": "mremotes", "repository": "central", "groupId": "com.example"}}, &res)
	if res.InvalidateRemoteMavenMetadata.InvalidatedCount != 1 {
		t.Fatalf("invalidated %d", res.InvalidateRemoteMavenMetadata.InvalidatedCount)
	}
	md, err := ms.RemoteFile(context.Background(), tg, maven.FileRef{GroupID: "com.example", ArtifactID: "lib", FileName: mavenlayout.MetadataFile})
	if err != nil || md == nil || md.CheckedAt.After(time.Unix(0, 0).Add(time.Hour)) {
		t.Fatalf("metadata after invalidation %+v %v", md, err)
	}
	a.expectError(adminToken, inv, map[string]any{"in": map[string]any{"namespace": "mremotes", "repository": "hosted"}}, CodeInvalidInput)
	a.expectError(adminToken, inv, map[string]any{"in": map[string]any{"namespace": "mremotes", "repository": "central", "artifactId": "lib"}}, CodeInvalidInput)
	a.expectError(adminToken, inv, map[string]any{"in": map[string]any{"namespace": "mremotes", "repository": "central", "groupId": "../x"}}, CodeInvalidInput)
}
