package graph

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func digestString(d []byte) string { return "sha256:" + hex.EncodeToString(d) }

func testContainerArtifacts(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("artifacts")
	repoID := a.createRepository("artifacts", "images", "OCI", "PUBLIC")
	img := a.addImage(nsID, repoID, "team/app")
	// Listed images hold a live manifest.
	a.addManifest(nsID, a.addImage(nsID, repoID, "base"), "base", 50)
	amd, amdD := a.addManifest(nsID, img, "amd64", 100)
	arm, armD := a.addManifest(nsID, img, "arm64", 200)
	index, indexD := a.addManifest(nsID, img, "index", 350)
	a.addRelationship(nsID, img, index, amd)
	a.addRelationship(nsID, img, index, arm)
	a.addTag(nsID, img, index, "latest")
	a.addTag(nsID, img, index, "v1")
	a.addTag(nsID, img, amd, "v1-amd64")

	var out struct {
		Repository struct {
			Images struct {
				TotalCount int
				Edges      []struct {
					Node struct {
						Name       string
						Repository struct{ Name string }
						Tags       struct {
							TotalCount int
							Edges      []struct {
								Node struct {
									Name     string
									Manifest struct{ Digest string }
								}
							}
						}
						Manifests struct {
							TotalCount int
							Edges      []struct {
								Node struct {
									Digest     string
									MediaType  string
									Size       int64
									CreatedAt  time.Time
									Tags       []string
									References []struct{ Digest string }
									Parents    []struct{ Digest string }
									Image      struct{ Name string }
								}
							}
						}
					}
				}
			}
		}
	}
	// Anonymous callers may read artifacts of a public repository.
	r := a.post("", `{ repository(namespace: "artifacts", name: "images") { images(first: 10) { totalCount edges { node {
		name repository { name }
		tags { totalCount edges { node { name manifest { digest } } } }
		manifests { totalCount edges { node { digest mediaType size createdAt tags references { digest } parents { digest } image { name } } } }
	} } } } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %+v", r.Errors)
	}
	mustJSON(t, r.Data, &out)
	imgs := out.Repository.Images
	if imgs.TotalCount != 2 || imgs.Edges[0].Node.Name != "base" || imgs.Edges[1].Node.Name != "team/app" {
		t.Fatalf("images = %+v", imgs)
	}
	app := imgs.Edges[1].Node
	if app.Repository.Name != "images" || app.Tags.TotalCount != 3 || app.Manifests.TotalCount != 3 {
		t.Fatalf("app = %+v", app)
	}
	tags := map[string]string{}
	for _, e := range app.Tags.Edges {
		tags[e.Node.Name] = e.Node.Manifest.Digest
	}
	if tags["latest"] != digestString(indexD) || tags["v1-amd64"] != digestString(amdD) {
		t.Fatalf("tags = %v", tags)
	}
	byDigest := map[string]int{}
	for i, e := range app.Manifests.Edges {
		byDigest[e.Node.Digest] = i
	}
	idx := app.Manifests.Edges[byDigest[digestString(indexD)]].Node
	if idx.Size != 350 || strings.Join(idx.Tags, ",") != "latest,v1" || len(idx.References) != 2 || len(idx.Parents) != 0 || idx.Image.Name != "team/app" {
		t.Fatalf("index manifest = %+v", idx)
	}
	child := app.Manifests.Edges[byDigest[digestString(armD)]].Node
	if len(child.Parents) != 1 || child.Parents[0].Digest != digestString(indexD) || len(child.Tags) != 0 {
		t.Fatalf("child manifest = %+v", child)
	}

	// Nested pagination: manifests one by one, by digest, each once.
	var seen []string
	var after *string
	for {
		var page struct {
			Repository struct {
				Images struct {
					Edges []struct {
						Node struct {
							Manifests struct {
								Edges    []struct{ Node struct{ Digest string } }
								PageInfo struct {
									HasNextPage bool
									EndCursor   string
								}
							}
						}
					}
				}
			}
		}
		a.admin(`query($a: String) { repository(namespace: "artifacts", name: "images") { images(first: 1, after: "`+
			encodeCursor("image", nameKey{Name: "base"})+`") { edges { node { manifests(first: 1, after: $a) { edges { node { digest } } pageInfo { hasNextPage endCursor } } } } } } }`,
			map[string]any{"a": after}, &page)
		ms := page.Repository.Images.Edges[0].Node.Manifests
		for _, e := range ms.Edges {
			seen = append(seen, e.Node.Digest)
		}
		if !ms.PageInfo.HasNextPage {
			break
		}
		c := ms.PageInfo.EndCursor
		after = &c
	}
	if len(seen) != 3 || !(seen[0] < seen[1] && seen[1] < seen[2]) {
		t.Fatalf("manifest walk = %v", seen)
	}
}

func testContainerMutations(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("mutations")
	repoID := a.createRepository("mutations", "images", "DOCKER", "PRIVATE")
	img := a.addImage(nsID, repoID, "app")
	amd, amdD := a.addManifest(nsID, img, "m-amd64", 100)
	index, indexD := a.addManifest(nsID, img, "m-index", 150)
	a.addRelationship(nsID, img, index, amd)
	a.addTag(nsID, img, amd, "amd")
	a.addTag(nsID, img, index, "latest")
	a.addTag(nsID, img, index, "stable")

	ref := func(digest []byte) map[string]any {
		return map[string]any{"namespace": "mutations", "repository": "images", "image": "app", "digest": digestString(digest)}
	}
	del := `mutation($in: ContainerManifestRefInput!) { deleteContainerManifest(input: $in) { manifest { digest softDeletedAt tags } } }`
	restore := `mutation($in: ContainerManifestRefInput!) { restoreContainerManifest(input: $in) { manifest { digest softDeletedAt tags } } }`

	// Tag delete.
	var tagOut struct {
		DeleteContainerTag struct {
			Tag   string
			Image struct{ Name string }
		}
	}
	a.admin(`mutation { deleteContainerTag(input: {namespace: "mutations", repository: "images", image: "app", tag: "stable"}) { tag image { name } } }`, nil, &tagOut)
	if tagOut.DeleteContainerTag.Tag != "stable" || tagOut.DeleteContainerTag.Image.Name != "app" {
		t.Fatalf("tag delete = %+v", tagOut)
	}
	a.expectError(adminToken, `mutation { deleteContainerTag(input: {namespace: "mutations", repository: "images", image: "app", tag: "stable"}) { tag } }`, nil, CodeNotFound)
	a.expectError(adminToken, `mutation { deleteContainerTag(input: {namespace: "mutations", repository: "images", image: "nope", tag: "x"}) { tag } }`, nil, CodeNotFound)

	// A child of an active index cannot go.
	r := a.expectError(adminToken, del, map[string]any{"in": ref(amdD)}, CodeConflict)
	if !contains(r.Errors[0].Message, digestString(indexD)) {
		t.Fatalf("refusal should name the index: %s", r.Errors[0].Message)
	}
	a.expectError(adminToken, del, map[string]any{"in": map[string]any{"namespace": "mutations", "repository": "images", "image": "app", "digest": "sha256:zz"}}, CodeInvalidInput)

	// Delete the index: soft-deleted, its tags gone.
	var delOut struct {
		DeleteContainerManifest struct {
			Manifest struct {
				Digest        string
				SoftDeletedAt *time.Time
				Tags          []string
			}
		}
	}
	a.admin(del, map[string]any{"in": ref(indexD)}, &delOut)
	if m := delOut.DeleteContainerManifest.Manifest; m.SoftDeletedAt == nil || len(m.Tags) != 0 {
		t.Fatalf("deleted manifest = %+v", m)
	}
	a.expectError(adminToken, del, map[string]any{"in": ref(indexD)}, CodeNotFound)
	// Now the child can go too; the index cannot be restored while its child is in the trash.
	a.admin(del, map[string]any{"in": ref(amdD)}, nil)
	r = a.expectError(adminToken, restore, map[string]any{"in": ref(indexD)}, CodeConflict)
	if !contains(r.Errors[0].Message, digestString(amdD)) {
		t.Fatalf("refusal should name the child: %s", r.Errors[0].Message)
	}
	var restOut struct {
		RestoreContainerManifest struct {
			Manifest struct {
				SoftDeletedAt *time.Time
				Tags          []string
			}
		}
	}
	a.admin(restore, map[string]any{"in": ref(amdD)}, &restOut)
	if restOut.RestoreContainerManifest.Manifest.SoftDeletedAt != nil {
		t.Fatal("restore left softDeletedAt")
	}
	a.admin(restore, map[string]any{"in": ref(indexD)}, nil)
	a.expectError(adminToken, restore, map[string]any{"in": ref(indexD)}, CodeNotFound)

	// Restoring over a re-pushed digest is a conflict.
	a.admin(del, map[string]any{"in": ref(indexD)}, nil)
	attID := int64(0)
	if err := a.pool.QueryRow(context.Background(), `INSERT INTO blob_storage_attachments (namespace_id, sha256) VALUES ($1, $2) RETURNING id`, nsID, indexD).Scan(&attID); err != nil {
		t.Fatal(err)
	}
	a.exec(`INSERT INTO container_manifests (id, namespace_id, container_image_id, digest, media_type, blob_storage_attachment_id, blob_sha256, size)
		VALUES ($1, $2, $3, $4, 'x', $5, $4, 1)`, newID(t), nsID, img, indexD, attID)
	a.expectError(adminToken, restore, map[string]any{"in": ref(indexD)}, CodeConflict)

	// Not a container repository.
	a.createRepository("mutations", "jars", "MAVEN", "PRIVATE")
	a.expectError(adminToken, `mutation { deleteContainerTag(input: {namespace: "mutations", repository: "jars", image: "app", tag: "x"}) { tag } }`, nil, CodeInvalidInput)
	// Suspended namespaces refuse changes.
	a.admin(`mutation { setNamespaceCondition(slug: "mutations", condition: SUSPENDED, active: true) { namespace { status } } }`, nil, nil)
	a.expectError(adminToken, `mutation { deleteContainerTag(input: {namespace: "mutations", repository: "images", image: "app", tag: "amd"}) { tag } }`, nil, CodeForbidden)
}

func testTrashHistoryAndChecksumSearch(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("trash")
	repoID := a.createRepository("trash", "images", "OCI", "PRIVATE")
	img1 := a.addImage(nsID, repoID, "one")
	img2 := a.addImage(nsID, repoID, "two")
	m1, d1 := a.addManifest(nsID, img1, "t-m1", 10)
	m2, _ := a.addManifest(nsID, img2, "t-m2", 20)
	_, d3 := a.addManifest(nsID, img2, "t-m3", 30)
	a.addLayer(nsID, img1, "shared-layer")
	a.addLayer(nsID, img2, "shared-layer")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.exec(`UPDATE container_manifests SET created_at = $2 WHERE namespace_id = $1 AND id = $3`, nsID, base, m1)
	a.exec(`UPDATE container_manifests SET created_at = $2 WHERE namespace_id = $1 AND id = $3`, nsID, base.Add(time.Hour), m2)
	a.exec(`UPDATE container_manifests SET created_at = $2 WHERE namespace_id = $1 AND digest = $3`, nsID, base.Add(2*time.Hour), d3)

	// Publish history: newest first, [from, to), paged.
	var hist struct {
		Namespace struct {
			PublishHistory struct {
				Edges []struct {
					Node struct {
						PublishedAt time.Time
						Repository  struct{ Name string }
						Artifact    struct{ Digest string }
					}
				}
				PageInfo struct{ HasNextPage bool }
			}
		}
	}
	a.admin(`query($f: Time, $t: Time) { namespace(slug: "trash") { publishHistory(from: $f, to: $t, first: 5) {
		edges { node { publishedAt repository { name } artifact { ... on ContainerManifest { digest } } } } pageInfo { hasNextPage } } } }`,
		map[string]any{"f": base.Add(30 * time.Minute), "t": base.Add(3 * time.Hour)}, &hist)
	h := hist.Namespace.PublishHistory
	if len(h.Edges) != 2 || !h.Edges[0].Node.PublishedAt.Equal(base.Add(2*time.Hour)) || h.Edges[1].Node.Repository.Name != "images" || h.PageInfo.HasNextPage {
		t.Fatalf("history = %+v", h)
	}
	a.expectError(adminToken, `query($f: Time) { namespace(slug: "trash") { publishHistory(from: $f, to: $f) { edges { cursor } } } }`,
		map[string]any{"f": base}, CodeInvalidInput)

	// Checksum search across tables.
	search := func(sum []byte, active bool) []string {
		t.Helper()
		var out struct {
			Namespace struct {
				ChecksumSearch []struct {
					Kind       string
					ParentID   uuid.UUID
					Repository struct{ Name string }
				}
			}
		}
		a.admin(`query($s: String!, $a: Boolean) { namespace(slug: "trash") { checksumSearch(sha256: $s, activeOnly: $a) { kind parentId repository { name } } } }`,
			map[string]any{"s": digestString(sum), "a": active}, &out)
		var kinds []string
		for _, m := range out.Namespace.ChecksumSearch {
			if m.Repository.Name != "images" {
				t.Fatalf("match repository = %s", m.Repository.Name)
			}
			kinds = append(kinds, m.Kind)
		}
		return kinds
	}
	if k := search(digestOf("shared-layer"), true); len(k) != 2 || k[0] != "CONTAINER_BLOB" {
		t.Fatalf("layer matches = %v", k)
	}
	if k := search(d1, true); len(k) != 1 || k[0] != "CONTAINER_MANIFEST" {
		t.Fatalf("manifest matches = %v", k)
	}

	// Trash: a manifest, an image and the repository, newest first.
	a.admin(`mutation($d: String!) { deleteContainerManifest(input: {namespace: "trash", repository: "images", image: "one", digest: $d}) { manifest { id } } }`,
		map[string]any{"d": digestString(d1)}, nil)
	time.Sleep(5 * time.Millisecond)
	a.exec(`UPDATE container_images SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`, nsID, img2)
	time.Sleep(5 * time.Millisecond)
	a.admin(`mutation { deleteRepository(input: {namespace: "trash", name: "images"}) { repository { id } } }`, nil, nil)

	if k := search(d1, true); len(k) != 0 {
		t.Fatalf("activeOnly still matches a deleted manifest: %v", k)
	}
	if k := search(d1, false); len(k) != 1 {
		t.Fatalf("audit search lost the deleted manifest: %v", k)
	}

	var kinds []string
	var after *string
	for {
		var out struct {
			Namespace struct {
				Trash struct {
					Edges []struct {
						Kind      string
						DeletedAt time.Time
						Node      struct {
							Typename string `json:"__typename"`
							Name     string
							Digest   string
						}
					}
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
				}
			}
		}
		a.admin(`query($a: String) { namespace(slug: "trash") { trash(first: 1, after: $a) { edges { kind deletedAt node {
			__typename ... on Repository { name } ... on ContainerImage { name } ... on ContainerManifest { digest } } }
			pageInfo { hasNextPage endCursor } } } }`, map[string]any{"a": after}, &out)
		for _, e := range out.Namespace.Trash.Edges {
			kinds = append(kinds, e.Kind+":"+e.Node.Typename)
		}
		if !out.Namespace.Trash.PageInfo.HasNextPage {
			break
		}
		c := out.Namespace.Trash.PageInfo.EndCursor
		after = &c
	}
	want := "REPOSITORY:Repository,CONTAINER_IMAGE:ContainerImage,CONTAINER_MANIFEST:ContainerManifest"
	if strings.Join(kinds, ",") != want {
		t.Fatalf("trash = %v, want %s", kinds, want)
	}
	var only struct {
		Namespace struct {
			Trash struct{ Edges []struct{ Kind string } }
		}
	}
	a.admin(`{ namespace(slug: "trash") { trash(kind: CONTAINER_MANIFEST) { edges { kind } } } }`, nil, &only)
	if len(only.Namespace.Trash.Edges) != 1 || only.Namespace.Trash.Edges[0].Kind != "CONTAINER_MANIFEST" {
		t.Fatalf("trash by kind = %+v", only)
	}
}

func testGCQueue(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("gcq")
	other := a.createNamespace("gcq-other")
	now := time.Now()
	add := func(ns uuid.UUID, name string, reviewAfter time.Time, excluded bool, backoff *time.Time) {
		var ex *time.Time
		if excluded {
			ex = &now
		}
		a.exec(`INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after, excluded_at, backoff_until) VALUES ($1, $2, $3, $4, $5)`,
			ns, digestOf(name), reviewAfter, ex, backoff)
	}
	future := now.Add(time.Hour)
	add(nsID, "due-old", now.Add(-2*time.Hour), false, nil)
	add(nsID, "due-new", now.Add(-time.Minute), false, nil)
	add(nsID, "not-due", future, false, nil)
	add(nsID, "excluded", now.Add(-3*time.Hour), true, nil)
	add(nsID, "backing-off", now.Add(-3*time.Hour), false, &future)
	add(other, "elsewhere", now.Add(-5*time.Hour), false, nil)

	var out struct {
		Namespace struct {
			GcQueue struct {
				Tracked, Due, Excluded int
				OldestDueAgeSeconds    int64
				LastReclaimedAt        *time.Time
			}
		}
	}
	a.admin(`{ namespace(slug: "gcq") { gcQueue { tracked due oldestDueAgeSeconds excluded lastReclaimedAt } } }`, nil, &out)
	q := out.Namespace.GcQueue
	if q.Tracked != 5 || q.Due != 2 || q.Excluded != 1 || q.OldestDueAgeSeconds < 7190 || q.OldestDueAgeSeconds > 7300 {
		t.Fatalf("gcQueue = %+v", q)
	}
}

func testQueryLimits(t *testing.T, a *testAPI) {
	a.createNamespace("limits")
	// Too deep.
	deep := `{ namespace(slug: "limits") { repositories { edges { node { namespace { repositories { edges { node { namespace {
		repositories { edges { node { namespace { statistics { componentsCount } } } } } } } } } } } } } } }`
	r := a.expectError(adminToken, deep, nil, "DEPTH_LIMIT_EXCEEDED")
	if !contains(r.Errors[0].Message, "exceeds the limit of 14") {
		t.Fatalf("message: %s", r.Errors[0].Message)
	}
	// Too complex: 100 × 100 × 100 nested rows.
	wide := `{ namespaces(first: 100) { edges { node { repositories(first: 100) { edges { node {
		images(first: 100) { edges { node { name } } } } } } } } } }`
	r = a.expectError(adminToken, wide, nil, "COMPLEXITY_LIMIT_EXCEEDED")
	if !contains(r.Errors[0].Message, "exceeds the limit") {
		t.Fatalf("message: %s", r.Errors[0].Message)
	}
	// Fragments count toward depth too.
	frag := `query { namespace(slug: "limits") { ...N } }
		fragment N on Namespace { repositories { edges { node { namespace { repositories { edges { node { namespace {
		repositories { edges { node { namespace { statistics { componentsCount } } } } } } } } } } } } } }`
	a.expectError(adminToken, frag, nil, "DEPTH_LIMIT_EXCEEDED")
	// The playground's introspection query is allowed.
	if r := a.post("", introspectionQuery, nil); len(r.Errors) > 0 {
		t.Fatalf("introspection: %+v", r.Errors)
	}
	// A realistic nested query is allowed.
	if r := a.post(adminToken, nestedQuery("limits"), nil); len(r.Errors) > 0 {
		t.Fatalf("nested query refused: %+v", r.Errors)
	}
}

// nestedQuery lists 100 repositories with their images, tags and manifests
// (page sizes that hold what seedNested creates: its cost, every list at
// its bound, stays under DefaultMaxComplexity).
func nestedQuery(slug string) string {
	return fmt.Sprintf(`{ namespace(slug: %q) { repositories(first: 100) { totalCount edges { node {
		name sizeBytes collections { name } namespace { slug }
		images(first: 2) { totalCount edges { node {
			name
			tags(first: 5) { totalCount edges { node { name manifest { digest tags } } } }
			manifests(first: 5) { totalCount edges { node { digest size tags references { digest } parents { digest } } } }
		} } }
	} } } } }`, slug)
}

const introspectionQuery = `query IntrospectionQuery { __schema { queryType { name } mutationType { name }
	types { ...FullType } directives { name locations args { ...InputValue } } } }
	fragment FullType on __Type { kind name fields(includeDeprecated: true) { name args { ...InputValue } type { ...TypeRef } }
	inputFields { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name } possibleTypes { ...TypeRef } }
	fragment InputValue on __InputValue { name type { ...TypeRef } defaultValue }
	fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
	ofType { kind name ofType { kind name ofType { kind name } } } } } } } }`

// seedNested creates n container repositories, each with one image holding
// an index over two manifests and two tags.
func seedNested(t testing.TB, a *testAPI, slug string, n int) {
	nsID := a.createNamespace(slug)
	for i := 0; i < n; i++ {
		repoID := a.createRepository(slug, fmt.Sprintf("repo-%03d", i), "OCI", "PRIVATE")
		img := a.addImage(nsID, repoID, "app")
		m1, _ := a.addManifest(nsID, img, fmt.Sprintf("%s-%d-a", slug, i), 10)
		m2, _ := a.addManifest(nsID, img, fmt.Sprintf("%s-%d-b", slug, i), 20)
		idx, _ := a.addManifest(nsID, img, fmt.Sprintf("%s-%d-i", slug, i), 40)
		a.addRelationship(nsID, img, idx, m1)
		a.addRelationship(nsID, img, idx, m2)
		a.addTag(nsID, img, idx, "latest")
		a.addTag(nsID, img, m1, "v1")
	}
}

// testNoNPlusOne: the nested 100-repository query runs a small, fixed
// number of SQL statements, the same bound for 10 and for 100 repositories.
func testNoNPlusOne(t *testing.T, a *testAPI) {
	seedNested(t, a, "nplus-small", 10)
	seedNested(t, a, "nplus-large", 100)
	count := func(slug string) int64 {
		t.Helper()
		a.stmts.reset()
		r := a.post(adminToken, nestedQuery(slug), nil)
		n := a.stmts.n.Load()
		for _, s := range a.stmts.statements() {
			if len(s) > 150 {
				s = s[:150]
			}
			t.Logf("%s: %s", slug, s)
		}
		if len(r.Errors) > 0 {
			t.Fatalf("errors: %+v", r.Errors)
		}
		var out struct {
			Namespace struct {
				Repositories struct {
					Edges []struct {
						Node struct {
							Images struct {
								Edges []struct {
									Node struct {
										Tags struct {
											Edges []struct {
												Node struct{ Manifest struct{ Digest string } }
											}
										}
										Manifests struct {
											Edges []struct {
												Node struct{ References []struct{ Digest string } }
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
		mustJSON(t, r.Data, &out)
		for _, e := range out.Namespace.Repositories.Edges {
			imgs := e.Node.Images.Edges
			if len(imgs) != 1 || len(imgs[0].Node.Tags.Edges) != 2 || len(imgs[0].Node.Manifests.Edges) != 3 {
				t.Fatalf("incomplete nested result: %+v", e)
			}
		}
		return n
	}
	// One statement per (level, loader) pair of the query: namespace, list,
	// totalCount, collections, namespace loader, image page + count, tag
	// page + count, tag → manifest, its tag names, manifest page + count,
	// tag names, references, parents.
	const want = 16
	small, large := count("nplus-small"), count("nplus-large")
	t.Logf("statements: 10 repositories: %d, 100 repositories: %d", small, large)
	if small != want || large != want {
		t.Fatalf("nested query ran %d statements for 10 repositories and %d for 100, want %d whatever the row count",
			small, large, want)
	}
}

// attach adds a blob and an attachment for content and returns the
// digest and attachment id.
func (a *testAPI) attach(nsID uuid.UUID, content string) ([]byte, int64) {
	a.t.Helper()
	d := digestOf(content)
	a.exec(`INSERT INTO blob_storage_blobs (namespace_id, sha256, object_storage_key, size)
		VALUES ($1, $2, $3, 10) ON CONFLICT DO NOTHING`, nsID, d, fmt.Sprintf("blobs/%x", d))
	var attID int64
	if err := a.pool.QueryRow(context.Background(), `INSERT INTO blob_storage_attachments (namespace_id, sha256)
		VALUES ($1, $2) RETURNING id`, nsID, d).Scan(&attID); err != nil {
		a.t.Fatal(err)
	}
	return d, attID
}

func testMavenAndNpmArtifacts(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("formats")
	mavenRepo := a.createRepository("formats", "jars", "MAVEN", "PRIVATE")
	npmRepo := a.createRepository("formats", "js", "NPM", "PRIVATE")
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

	pkg, ver, npkg, nver := newID(t), newID(t), newID(t), newID(t)
	a.exec(`INSERT INTO maven_packages (id, namespace_id, maven_repository_id, group_id, artifact_id)
		SELECT $1, $2, id, 'com.example', 'app' FROM maven_repositories WHERE namespace_id = $2 AND repository_id = $3`, pkg, nsID, mavenRepo)
	a.exec(`INSERT INTO maven_versions (id, namespace_id, maven_package_id, version, created_at) VALUES ($1, $2, $3, '1.0.0', $4)`,
		ver, nsID, pkg, base)
	jar, jarAtt := a.attach(nsID, "app-1.0.0.jar")
	a.exec(`INSERT INTO maven_files (id, namespace_id, maven_package_id, maven_version_id, file_name, blob_storage_attachment_id,
		blob_sha256, sha1, sha512) VALUES ($1, $2, $3, $4, 'app-1.0.0.jar', $5, $6, $7, $8)`, newID(t), nsID, pkg, ver, jarAtt, jar,
		make([]byte, 20), make([]byte, 64))
	a.exec(`INSERT INTO npm_packages (id, namespace_id, npm_repository_id, name, scope)
		SELECT $1, $2, id, '@acme/lib', 'acme' FROM npm_repositories WHERE namespace_id = $2 AND repository_id = $3`, npkg, nsID, npmRepo)
	a.exec(`INSERT INTO npm_versions (id, namespace_id, npm_package_id, version, package_json, created_at)
		VALUES ($1, $2, $3, '2.0.0', '{"name":"@acme/lib","version":"2.0.0"}', $4)`, nver, nsID, npkg, base.Add(time.Hour))
	tgz, tgzAtt := a.attach(nsID, "lib-2.0.0.tgz")
	a.exec(`INSERT INTO npm_files (id, namespace_id, npm_version_id, file_name, blob_storage_attachment_id, blob_sha256)
		VALUES ($1, $2, $3, 'lib-2.0.0.tgz', $4, $5)`, newID(t), nsID, nver, tgzAtt, tgz)

	var hist struct {
		Namespace struct {
			PublishHistory struct {
				Edges []struct {
					Node struct {
						Repository struct{ Name string }
						Artifact   struct {
							Typename    string `json:"__typename"`
							GroupID     string
							PackageName string
							Version     string
						}
					}
				}
			}
		}
	}
	a.admin(`{ namespace(slug: "formats") { publishHistory { edges { node { repository { name } artifact {
		__typename ... on MavenVersion { groupId version } ... on NpmVersion { packageName version } } } } } } }`, nil, &hist)
	h := hist.Namespace.PublishHistory.Edges
	if len(h) != 2 || h[0].Node.Artifact.Typename != "NpmVersion" || h[0].Node.Artifact.PackageName != "@acme/lib" ||
		h[0].Node.Repository.Name != "js" || h[1].Node.Artifact.GroupID != "com.example" || h[1].Node.Repository.Name != "jars" {
		t.Fatalf("history = %+v", h)
	}

	var search struct {
		Namespace struct {
			ChecksumSearch []struct {
				Kind       string
				ParentID   uuid.UUID
				Repository struct{ Name string }
			}
		}
	}
	a.admin(`query($s: String!) { namespace(slug: "formats") { checksumSearch(sha256: $s) { kind parentId repository { name } } } }`,
		map[string]any{"s": digestString(jar)}, &search)
	if m := search.Namespace.ChecksumSearch; len(m) != 1 || m[0].Kind != "MAVEN_FILE" || m[0].ParentID != ver || m[0].Repository.Name != "jars" {
		t.Fatalf("maven search = %+v", m)
	}
	a.admin(`query($s: String!) { namespace(slug: "formats") { checksumSearch(sha256: $s) { kind parentId repository { name } } } }`,
		map[string]any{"s": digestString(tgz)}, &search)
	if m := search.Namespace.ChecksumSearch; len(m) != 1 || m[0].Kind != "NPM_FILE" || m[0].ParentID != nver || m[0].Repository.Name != "js" {
		t.Fatalf("npm search = %+v", m)
	}

	a.exec(`UPDATE maven_versions SET soft_deleted_at = now() - interval '1 minute' WHERE namespace_id = $1 AND id = $2`, nsID, ver)
	a.exec(`UPDATE npm_versions SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`, nsID, nver)
	var trash struct {
		Namespace struct {
			Trash struct {
				Edges []struct {
					Kind string
					Node struct {
						Typename string `json:"__typename"`
						Version  string
					}
				}
			}
		}
	}
	a.admin(`{ namespace(slug: "formats") { trash { edges { kind node { __typename ... on MavenVersion { version } ... on NpmVersion { version } } } } } }`, nil, &trash)
	e := trash.Namespace.Trash.Edges
	if len(e) != 2 || e[0].Kind != "NPM_VERSION" || e[0].Node.Version != "2.0.0" || e[1].Kind != "MAVEN_VERSION" || e[1].Node.Typename != "MavenVersion" {
		t.Fatalf("trash = %+v", e)
	}
}

// testImageListShowsImagesWithLiveManifests: Repository.images leaves out an
// image whose manifests are all in the trash (totalCount too), and shows it
// again once a manifest is restored or pushed.
func testImageListShowsImagesWithLiveManifests(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("emptied")
	repoID := a.createRepository("emptied", "images", "OCI", "PRIVATE")
	app := a.addImage(nsID, repoID, "app")
	_, appD := a.addManifest(nsID, app, "app manifest", 10)
	other := a.addImage(nsID, repoID, "other")
	a.addManifest(nsID, other, "other manifest", 10)
	// Blobs pushed, no manifest yet: not an image to list.
	a.addImage(nsID, repoID, "blobs-only")

	listed := func(what string, want ...string) {
		t.Helper()
		var out struct {
			Repository struct {
				Images struct {
					TotalCount int
					Edges      []struct{ Node struct{ Name string } }
				}
			}
		}
		a.admin(`{ repository(namespace: "emptied", name: "images") { images(first: 10) { totalCount edges { node { name } } } } }`, nil, &out)
		var got []string
		for _, e := range out.Repository.Images.Edges {
			got = append(got, e.Node.Name)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || out.Repository.Images.TotalCount != len(want) {
			t.Fatalf("%s: images %v (totalCount %d), want %v", what, got, out.Repository.Images.TotalCount, want)
		}
	}
	listed("pushed", "app", "other")
	in := map[string]any{"in": map[string]any{"namespace": "emptied", "repository": "images", "image": "app", "digest": digestString(appD)}}
	a.admin(`mutation($in: ContainerManifestRefInput!) { deleteContainerManifest(input: $in) { manifest { id } } }`, in, nil)
	listed("last manifest deleted", "other")
	a.admin(`mutation($in: ContainerManifestRefInput!) { restoreContainerManifest(input: $in) { manifest { id } } }`, in, nil)
	listed("manifest restored", "app", "other")
	a.admin(`mutation($in: ContainerManifestRefInput!) { deleteContainerManifest(input: $in) { manifest { id } } }`, in, nil)
	listed("deleted again", "other")
	// A push adds a manifest to the active image row.
	a.addManifest(nsID, app, "app manifest 2", 12)
	listed("pushed again", "app", "other")
}
