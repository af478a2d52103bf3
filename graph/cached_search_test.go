package graph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

// TestCachedContentInSearchAndHistory: through GraphQL, a checksum search
// answers the hosted and the cached copy of the same bytes, telling them
// apart (cached, and the remote repository); the publish history lists
// cached manifests and versions as cached events (CachedArtifact) merged
// in time order with publishes, across pages; both stay administration of
// the namespace: a READ token of the namespace and an ADMIN token of
// another namespace get neither.
func TestCachedContentInSearchAndHistory(t *testing.T) {
	t.Parallel()
	a := newStoreAPI(t, true)
	mountAPI(a, testKeyring(t, a.st))
	nsID := a.createNamespace("cachedgraph")
	a.createNamespace("othergraph")
	hostedID := a.createRepository("cachedgraph", "images", "OCI", "PRIVATE")
	create := `mutation($in: CreateRepositoryInput!) { createRepository(input: $in) { repository { id } } }`
	a.admin(create, map[string]any{"in": map[string]any{"namespace": "cachedgraph", "name": "hub", "format": "DOCKER", "kind": "REMOTE",
		"visibility": "PRIVATE", "remote": map[string]any{"url": "https://registry.example.test"}}}, nil)
	a.admin(create, map[string]any{"in": map[string]any{"namespace": "cachedgraph", "name": "central", "format": "MAVEN", "kind": "REMOTE",
		"visibility": "PRIVATE", "remote": map[string]any{"url": "https://repo.example.test/maven2"}}}, nil)
	ctx := context.Background()

	// Cached as the protocols cache: a layer and the manifest naming it,
	// then a Maven version.
	layer := []byte("layer bytes both hosted and cached")
	cs := container.New(a.st)
	tg, err := cs.ResolveTarget(ctx, "cachedgraph", "hub", "alpine")
	if err != nil {
		t.Fatal(err)
	}
	staged, err := cs.StageRemoteBlob(ctx, tg, bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CommitRemoteBlob(ctx, tg, staged, "application/vnd.oci.image.layer.v1.tar"); err != nil {
		t.Fatal(err)
	}
	p := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":3},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%d}]}`,
		store.FormatSHA256(sha256.Sum256([]byte("cfg"))), store.FormatSHA256(sha256.Sum256(layer)), len(layer)))
	if _, _, err := cs.CacheRemoteManifest(ctx, tg, container.RemoteManifestPut{Digest: sha256.Sum256(p),
		MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: p, Tag: "3.20"}); err != nil {
		t.Fatal(err)
	}
	ms := maven.New(a.st)
	mt, err := ms.ResolveTarget(ctx, "cachedgraph", "central")
	if err != nil {
		t.Fatal(err)
	}
	jar, err := ms.StageRemoteFile(ctx, mt, bytes.NewReader([]byte("jar bytes")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.CommitRemoteFile(ctx, mt, maven.FileRef{GroupID: "com.example", ArtifactID: "lib", Version: "1.0", FileName: "lib-1.0.jar"},
		jar, maven.RemoteFileMeta{}); err != nil {
		t.Fatal(err)
	}
	// Hosted: the same layer in an image, and a manifest published between
	// the cached manifest and the cached version.
	img := a.addImage(nsID, hostedID, "mirror")
	a.addLayer(nsID, img, string(layer))
	hostedManifest, _ := a.addManifest(nsID, img, "hosted manifest", 10)
	var cachedAt [2]time.Time
	if err := a.pool.QueryRow(ctx, `SELECT (SELECT created_at FROM container_remote_manifests WHERE namespace_id = $1),
		(SELECT created_at FROM maven_remote_versions WHERE namespace_id = $1)`, nsID).Scan(&cachedAt[0], &cachedAt[1]); err != nil {
		t.Fatal(err)
	}
	if !cachedAt[0].Before(cachedAt[1]) {
		t.Fatalf("cached manifest at %s, version at %s", cachedAt[0], cachedAt[1])
	}
	mid := cachedAt[0].Add(cachedAt[1].Sub(cachedAt[0]) / 2)
	a.exec(`UPDATE container_manifests SET created_at = $3 WHERE namespace_id = $1 AND id = $2`, nsID, hostedManifest, mid)

	const searchQ = `query($s: String!) { namespace(slug: "cachedgraph") { checksumSearch(sha256: $s) { kind cached repository { name kind } } } }`
	var search struct {
		Namespace struct {
			ChecksumSearch []struct {
				Kind       string
				Cached     bool
				Repository struct{ Name, Kind string }
			}
		}
	}
	a.admin(searchQ, map[string]any{"s": store.FormatSHA256(sha256.Sum256(layer))}, &search)
	got := map[string]bool{}
	for _, m := range search.Namespace.ChecksumSearch {
		got[fmt.Sprintf("%s %v %s %s", m.Kind, m.Cached, m.Repository.Name, m.Repository.Kind)] = true
	}
	if len(search.Namespace.ChecksumSearch) != 2 || !got["CONTAINER_BLOB false images HOSTED"] || !got["CONTAINER_BLOB true hub REMOTE"] {
		t.Fatalf("layer search: %+v", search.Namespace.ChecksumSearch)
	}

	const histQ = `query($after: String) { namespace(slug: "cachedgraph") { publishHistory(first: 2, after: $after) {
		edges { cursor node { cached publishedAt repository { name }
			artifact { __typename ... on CachedArtifact { name reference } ... on ContainerManifest { digest } } } }
		pageInfo { hasNextPage endCursor } } } }`
	type node struct {
		Cached      bool
		PublishedAt time.Time
		Repository  struct{ Name string }
		Artifact    struct {
			Typename  string `json:"__typename"`
			Name      string
			Reference string
		}
	}
	var nodes []node
	var after any
	for range 3 {
		var page struct {
			Namespace struct {
				PublishHistory struct {
					Edges    []struct{ Node node }
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
				}
			}
		}
		a.admin(histQ, map[string]any{"after": after}, &page)
		h := page.Namespace.PublishHistory
		for _, e := range h.Edges {
			nodes = append(nodes, e.Node)
		}
		if !h.PageInfo.HasNextPage {
			break
		}
		after = *h.PageInfo.EndCursor
	}
	if len(nodes) != 3 {
		t.Fatalf("history: %+v", nodes)
	}
	v, d := nodes[0].Artifact, nodes[2].Artifact
	if !nodes[0].Cached || nodes[0].Repository.Name != "central" || v.Typename != "CachedArtifact" || v.Name != "com.example:lib" ||
		v.Reference != "1.0" || !nodes[0].PublishedAt.Equal(cachedAt[1]) {
		t.Errorf("newest event %+v", nodes[0])
	}
	if nodes[1].Cached || nodes[1].Repository.Name != "images" || nodes[1].Artifact.Typename != "ContainerManifest" {
		t.Errorf("hosted event %+v", nodes[1])
	}
	if !nodes[2].Cached || nodes[2].Repository.Name != "hub" || d.Typename != "CachedArtifact" || d.Name != "alpine" ||
		d.Reference != store.FormatSHA256(sha256.Sum256(p)) || !nodes[2].PublishedAt.Equal(cachedAt[0]) {
		t.Errorf("oldest event %+v", nodes[2])
	}

	// Neither a reader of the namespace nor another namespace's
	// administrator sees the cached content (nor the hosted).
	reader := a.createToken(adminToken, "cachedgraph", "reader", []string{"READ"}, nil).Secret
	stranger := a.createToken(adminToken, "othergraph", "admin", []string{"ADMIN"}, nil).Secret
	for _, tok := range []string{reader, stranger} {
		a.expectError(tok, searchQ, map[string]any{"s": store.FormatSHA256(sha256.Sum256(layer))}, CodeForbidden)
		a.expectError(tok, histQ, map[string]any{"after": nil}, CodeForbidden)
	}
}
