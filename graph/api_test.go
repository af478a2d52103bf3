package graph

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
)

func testCreateNamespaceCreatesDefaultCollectionAndStatistics(t *testing.T, a *testAPI) {
	id := a.createNamespace("create-ns")

	var out struct {
		Namespace struct {
			ID          uuid.UUID
			Slug        string
			Status      string
			Statistics  struct{ DeduplicatedSizeBytes, ComponentsCount int64 }
			Collections struct {
				Edges []struct {
					Node struct {
						Name      string
						IsDefault bool
					}
				}
				TotalCount int
			}
		}
	}
	a.admin(`{ namespace(slug: "create-ns") { id slug status statistics { deduplicatedSizeBytes componentsCount }
		collections { edges { node { name isDefault } } totalCount } } }`, nil, &out)
	ns := out.Namespace
	if ns.ID != id || ns.Slug != "create-ns" || ns.Status != "ACTIVE" {
		t.Fatalf("namespace = %+v", ns)
	}
	if ns.Collections.TotalCount != 1 || ns.Collections.Edges[0].Node.Name != "default" || !ns.Collections.Edges[0].Node.IsDefault {
		t.Fatalf("collections = %+v", ns.Collections)
	}
	if ns.Statistics.ComponentsCount != 0 || ns.Statistics.DeduplicatedSizeBytes != 0 {
		t.Fatalf("statistics = %+v", ns.Statistics)
	}
	// Standalone anchors are documented defaults.
	var platform, entityID string
	if err := a.pool.QueryRow(context.Background(), `SELECT platform, entity_id FROM namespaces WHERE id = $1`, id).Scan(&platform, &entityID); err != nil {
		t.Fatal(err)
	}
	if platform != "standalone" || entityID != "create-ns" {
		t.Fatalf("anchor = %s/%s", platform, entityID)
	}

	a.expectError(adminToken, `mutation { createNamespace(input: {slug: "create-ns"}) { namespace { id } } }`, nil, CodeAlreadyExists)
}

func testNamespaceSlugValidation(t *testing.T, a *testAPI) {
	for _, slug := range []string{"", "z", "9lives", "Zeta", "-zeta", "zeta-", "ze--ta", "ze_ta", "ze ta", "graphql", strings.Repeat("z", 64), "é"} {
		r := a.expectError(adminToken, `mutation($s: String!) { createNamespace(input: {slug: $s}) { namespace { id } } }`,
			map[string]any{"s": slug}, CodeInvalidInput)
		if contains(r.Errors[0].Message, "SQL") || contains(r.Errors[0].Message, "violates") {
			t.Fatalf("leaked database error: %s", r.Errors[0].Message)
		}
	}
	for _, slug := range []string{"zz", "zeta", "zeta-corp-2", "z9", strings.Repeat("z", 63)} {
		a.createNamespace(slug)
	}
}

func testCreateRepositoryAndLookups(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("lookups")
	id := a.createRepository("lookups", "images", "OCI", "PRIVATE")

	var out struct {
		Repository struct {
			ID          uuid.UUID
			Name        string
			Description *string
			Format      string
			Kind        string
			Visibility  string
			Collections []struct{ Name string }
			Namespace   struct{ Slug string }
			Images      *struct{ TotalCount int }
		}
	}
	a.admin(`{ repository(namespace: "lookups", name: "images") { id name description format kind visibility
		collections { name } namespace { slug } images { totalCount } } }`, nil, &out)
	r := out.Repository
	if r.ID != id || r.Format != "OCI" || r.Kind != "HOSTED" || r.Visibility != "PRIVATE" || r.Description != nil {
		t.Fatalf("repository = %+v", r)
	}
	if len(r.Collections) != 1 || r.Collections[0].Name != "default" || r.Namespace.Slug != "lookups" {
		t.Fatalf("repository links = %+v", r)
	}
	if r.Images == nil || r.Images.TotalCount != 0 {
		t.Fatalf("images = %+v", r.Images)
	}

	// Format child rows of every format.
	for _, f := range []string{"DOCKER", "MAVEN", "NPM"} {
		a.createRepository("lookups", strings.ToLower(f), f, "PUBLIC")
	}
	var n int
	if err := a.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM container_repositories WHERE namespace_id = $1) +
		(SELECT count(*) FROM maven_repositories WHERE namespace_id = $1) +
		(SELECT count(*) FROM npm_repositories WHERE namespace_id = $1)`, nsID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("format child rows = %d, want 4", n)
	}
	var maven struct {
		Repository struct{ Images *struct{ TotalCount int } }
	}
	a.admin(`{ repository(namespace: "lookups", name: "maven") { images { totalCount } } }`, nil, &maven)
	if maven.Repository.Images != nil {
		t.Fatalf("a Maven repository has no images connection")
	}

	// Errors.
	a.expectError(adminToken, `mutation { createRepository(input: {namespace: "lookups", name: "images", format: OCI}) { repository { id } } }`, nil, CodeAlreadyExists)
	a.expectError(adminToken, `mutation { createRepository(input: {namespace: "nope", name: "x", format: OCI}) { repository { id } } }`, nil, CodeNotFound)
	a.expectError(adminToken, `mutation { createRepository(input: {namespace: "lookups", name: "x", format: OCI, kind: REMOTE}) { repository { id } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `{ repository(namespace: "lookups", name: "missing") { id } }`, nil, CodeNotFound)
	a.expectError(adminToken, `{ namespace(slug: "missing") { id } }`, nil, CodeNotFound)
}

func testRepositoryInputValidation(t *testing.T, a *testAPI) {
	a.createNamespace("validation")
	create := `mutation($n: String!, $d: String) { createRepository(input: {namespace: "validation", name: $n, format: NPM, description: $d}) { repository { id } } }`
	for _, name := range []string{"", "UPPER", "a/b", "-a", "a-", "a..b", "a b", strings.Repeat("a", 256), "\x00"} {
		a.expectError(adminToken, create, map[string]any{"n": name}, CodeInvalidInput)
	}
	a.expectError(adminToken, create, map[string]any{"n": "ok", "d": strings.Repeat("x", 1025)}, CodeInvalidInput)
	a.expectError(adminToken, create, map[string]any{"n": "ok", "d": "nul\x00byte"}, CodeInvalidInput)
	var out struct {
		CreateRepository struct{ Repository struct{ Description string } }
	}
	a.admin(`mutation($d: String) { createRepository(input: {namespace: "validation", name: "my.repo_1-x", format: NPM, description: $d}) { repository { description } } }`,
		map[string]any{"d": strings.Repeat("é", 1024)}, &out)
	if len([]rune(out.CreateRepository.Repository.Description)) != 1024 {
		t.Fatal("1024-character description was not stored")
	}
	a.createRepository("validation", strings.Repeat("b", 255), "OCI", "PUBLIC")

	// Malformed ids, cursors and page sizes are input errors, not internal ones.
	a.expectError(adminToken, `mutation { deleteRepository(input: {namespace: "validation", id: "not-a-uuid"}) { repository { id } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `mutation { deleteRepository(input: {namespace: "validation"}) { repository { id } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `{ namespace(slug: "validation") { repositories(after: "garbage") { totalCount } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `{ namespace(slug: "validation") { repositories(first: 101) { totalCount } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `{ namespace(slug: "validation") { repositories(first: 0) { totalCount } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `{ namespace(slug: "validation") { repositories(filter: {collection: "nope"}) { totalCount } } }`, nil, CodeNotFound)
	a.expectError(adminToken, `{ namespace(slug: "validation") { checksumSearch(sha256: "xyz") { artifactId } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `{ namespace(slug: "validation") { repositories(orderBy: {field: COLOR, direction: ASC}) { totalCount } } }`, nil, "GRAPHQL_VALIDATION_FAILED")

	// A cursor from one order is refused by another.
	var page struct {
		Namespace struct {
			Repositories struct{ PageInfo struct{ EndCursor string } }
		}
	}
	a.admin(`{ namespace(slug: "validation") { repositories(first: 1, orderBy: {field: NAME, direction: ASC}) { pageInfo { endCursor } } } }`, nil, &page)
	a.expectError(adminToken, `query($c: String) { namespace(slug: "validation") { repositories(after: $c, orderBy: {field: SIZE, direction: ASC}) { totalCount } } }`,
		map[string]any{"c": page.Namespace.Repositories.PageInfo.EndCursor}, CodeInvalidInput)
}

func testAuthorization(t *testing.T, a *testAPI) {
	a.createNamespace("authz")
	a.createRepository("authz", "public-repo", "OCI", "PUBLIC")
	a.createRepository("authz", "private-repo", "OCI", "PRIVATE")
	a.createRepository("authz", "internal-repo", "NPM", "INTERNAL")

	// Anonymous: public repositories only.
	r := a.post("", `{ namespace(slug: "authz") { slug repositories { totalCount edges { node { name } } } } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatalf("anonymous read: %+v", r.Errors)
	}
	var out struct {
		Namespace struct {
			Repositories struct {
				TotalCount int
				Edges      []struct{ Node struct{ Name string } }
			}
		}
	}
	mustJSON(t, r.Data, &out)
	if out.Namespace.Repositories.TotalCount != 1 || out.Namespace.Repositories.Edges[0].Node.Name != "public-repo" {
		t.Fatalf("anonymous sees %+v", out.Namespace.Repositories)
	}
	if r := a.post("", `{ repository(namespace: "authz", name: "public-repo") { name } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("anonymous public read: %+v", r.Errors)
	}
	// Private repositories and missing ones answer alike (names cannot be
	// probed), asking for credentials as every protocol does.
	a.expectError("", `{ repository(namespace: "authz", name: "private-repo") { name } }`, nil, CodeUnauthenticated)
	a.expectError("", `{ repository(namespace: "authz", name: "no-such-repo") { name } }`, nil, CodeUnauthenticated)
	a.expectError("", `{ namespace(slug: "authz") { repositories(filter: {visibility: PRIVATE}) { totalCount } } }`, nil, CodeUnauthenticated)
	a.expectError("", `{ namespace(slug: "authz") { statistics { componentsCount } } }`, nil, CodeUnauthenticated)
	a.expectError("", `{ namespace(slug: "authz") { trash { edges { cursor } } } }`, nil, CodeUnauthenticated)
	a.expectError("", `{ namespace(slug: "authz") { gcQueue { tracked } } }`, nil, CodeUnauthenticated)
	a.expectError("", `{ namespaces { totalCount } }`, nil, CodeUnauthenticated)
	a.expectError("", `mutation { createNamespace(input: {slug: "evil"}) { namespace { id } } }`, nil, CodeUnauthenticated)
	a.expectError("", `mutation { deleteRepository(input: {namespace: "authz", name: "public-repo"}) { repository { id } } }`, nil, CodeUnauthenticated)

	// A wrong token is refused outright (401), not downgraded to anonymous.
	r = a.post("wrong-token", `{ namespace(slug: "authz") { slug } }`, nil)
	if r.Status != http.StatusUnauthorized || r.code() != CodeUnauthenticated {
		t.Fatalf("wrong token: %d %+v", r.Status, r.Errors)
	}

	// Admin sees everything.
	var all struct {
		Namespace struct{ Repositories struct{ TotalCount int } }
	}
	a.admin(`{ namespace(slug: "authz") { repositories { totalCount } } }`, nil, &all)
	if all.Namespace.Repositories.TotalCount != 3 {
		t.Fatalf("admin sees %d repositories", all.Namespace.Repositories.TotalCount)
	}

	// A namespace that does not serve reads is refused to everyone but the
	// super-user, saying why (auth's status mapping, as on every protocol).
	a.admin(`mutation { setNamespaceCondition(slug: "authz", condition: DISABLED, active: true) { namespace { status } } }`, nil, nil)
	for _, q := range []string{`{ namespace(slug: "authz") { slug } }`, `{ repository(namespace: "authz", name: "public-repo") { name } }`} {
		r := a.expectError("", q, nil, auth.CodeNamespaceUnavailable)
		if r.Errors[0].Extensions["reason"] != "disabled" {
			t.Fatalf("%s: extensions %+v", q, r.Errors[0].Extensions)
		}
	}

	// GET works for queries, never for mutations.
	q := url.Values{"query": {`{ namespace(slug: "authz") { status } }`}}
	req, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/graphql?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if r := a.send(req); len(r.Errors) > 0 || !contains(string(r.Data), "DISABLED") {
		t.Fatalf("GET query: %+v %s", r.Errors, r.Data)
	}
	q = url.Values{"query": {`mutation { deleteNamespace(slug: "authz") { namespace { status } } }`}}
	req, _ = http.NewRequest(http.MethodGet, a.srv.URL+"/graphql?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if r := a.send(req); len(r.Errors) == 0 {
		t.Fatalf("GET mutation was accepted: %s", r.Data)
	}
}

func testNamespaceStatusAndConditions(t *testing.T, a *testAPI) {
	a.createNamespace("status")
	status := func(q string) string {
		t.Helper()
		var out map[string]struct{ Namespace struct{ Status string } }
		a.admin(q, nil, &out)
		for _, v := range out {
			return v.Namespace.Status
		}
		return ""
	}
	set := func(cond string, active bool) string {
		t.Helper()
		act := "false"
		if active {
			act = "true"
		}
		return status(`mutation { setNamespaceCondition(slug: "status", condition: ` + cond + `, active: ` + act + `) { namespace { status } } }`)
	}
	if got := set("SUSPENDED", true); got != "SUSPENDED" {
		t.Fatalf("status = %s", got)
	}
	// Suspended: read-only, so repository changes are refused.
	a.expectError(adminToken, `mutation { createRepository(input: {namespace: "status", name: "x", format: OCI}) { repository { id } } }`, nil, CodeForbidden)
	if got := set("DISABLED", true); got != "DISABLED" {
		t.Fatalf("status = %s", got)
	}
	if got := set("BLOCKED", true); got != "BLOCKED" {
		t.Fatalf("status = %s", got)
	}
	if got := status(`mutation { deleteNamespace(slug: "status") { namespace { status } } }`); got != "DELETED" {
		t.Fatalf("status = %s", got)
	}
	// Lifting one condition leaves the others.
	if got := status(`mutation { restoreNamespace(slug: "status") { namespace { status } } }`); got != "BLOCKED" {
		t.Fatalf("status = %s", got)
	}
	if got := set("BLOCKED", false); got != "DISABLED" {
		t.Fatalf("status = %s", got)
	}
	if got := set("DISABLED", false); got != "SUSPENDED" {
		t.Fatalf("status = %s", got)
	}
	if got := set("SUSPENDED", false); got != "ACTIVE" {
		t.Fatalf("status = %s", got)
	}
	a.expectError(adminToken, `mutation { restoreNamespace(slug: "status") { namespace { status } } }`, nil, CodeConflict)
	a.expectError(adminToken, `mutation { setNamespaceCondition(slug: "nope", condition: BLOCKED, active: true) { namespace { status } } }`, nil, CodeNotFound)

	// Purged wins over everything.
	a.exec(`UPDATE namespaces SET purged_at = now(), deleted_at = now(), blocked_at = now() WHERE slug = 'status'`)
	var q struct{ Namespace struct{ Status string } }
	a.admin(`{ namespace(slug: "status") { status } }`, nil, &q)
	if q.Namespace.Status != "PURGED" {
		t.Fatalf("status = %s", q.Namespace.Status)
	}
}

func testRepositoryLifecycle(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("lifecycle")
	repoID := a.createRepository("lifecycle", "web", "DOCKER", "PRIVATE")

	var upd struct {
		UpdateRepository struct {
			Repository struct {
				Description *string
				Visibility  string
			}
		}
	}
	a.admin(`mutation { updateRepository(input: {namespace: "lifecycle", name: "web", description: "front end", visibility: PUBLIC}) {
		repository { description visibility } } }`, nil, &upd)
	if d := upd.UpdateRepository.Repository.Description; d == nil || *d != "front end" || upd.UpdateRepository.Repository.Visibility != "PUBLIC" {
		t.Fatalf("update = %+v", upd)
	}
	a.admin(`mutation { updateRepository(input: {namespace: "lifecycle", name: "web", description: ""}) { repository { description } } }`, nil, &upd)
	if upd.UpdateRepository.Repository.Description != nil {
		t.Fatal("empty description did not clear it")
	}
	a.expectError(adminToken, `mutation { updateRepository(input: {namespace: "lifecycle", name: "web"}) { repository { id } } }`, nil, CodeInvalidInput)

	// Purge is refused outside the trash.
	a.expectError(adminToken, `mutation { purgeRepository(input: {namespace: "lifecycle", name: "web"}) { id } }`, nil, CodeConflict)
	// Delete (soft) by id, then it is gone from lookups and listings but in the trash.
	a.admin(`mutation($id: ID) { deleteRepository(input: {namespace: "lifecycle", id: $id}) { repository { softDeletedAt } } }`,
		map[string]any{"id": repoID.String()}, nil)
	a.expectError(adminToken, `{ repository(namespace: "lifecycle", name: "web") { id } }`, nil, CodeNotFound)
	a.expectError(adminToken, `mutation { deleteRepository(input: {namespace: "lifecycle", name: "web"}) { repository { id } } }`, nil, CodeConflict)
	a.expectError(adminToken, `mutation { createRepository(input: {namespace: "lifecycle", name: "web", format: OCI}) { repository { id } } }`, nil, CodeAlreadyExists)
	var trash struct {
		Namespace struct {
			Trash struct {
				Edges []struct {
					Kind string
					Node struct {
						Typename string `json:"__typename"`
						Name     string
					}
				}
			}
			Repositories struct{ TotalCount int }
		}
	}
	a.admin(`{ namespace(slug: "lifecycle") { repositories { totalCount } trash { edges { kind node { __typename ... on Repository { name } } } } } }`, nil, &trash)
	if trash.Namespace.Repositories.TotalCount != 0 || len(trash.Namespace.Trash.Edges) != 1 ||
		trash.Namespace.Trash.Edges[0].Node.Name != "web" || trash.Namespace.Trash.Edges[0].Kind != "REPOSITORY" {
		t.Fatalf("after delete: %+v", trash)
	}
	// Restore, then delete again and purge: the repository goes with its
	// images, manifests and their attachments.
	a.admin(`mutation { restoreRepository(input: {namespace: "lifecycle", name: "web"}) { repository { softDeletedAt } } }`, nil, nil)
	a.expectError(adminToken, `mutation { restoreRepository(input: {namespace: "lifecycle", name: "web"}) { repository { id } } }`, nil, CodeConflict)
	img := a.addImage(nsID, repoID, "app")
	_, payload := a.addManifest(nsID, img, "web-manifest", 10)
	a.admin(`mutation { deleteRepository(input: {namespace: "lifecycle", name: "web"}) { repository { id } } }`, nil, nil)
	var purged struct {
		PurgeRepository struct {
			ID, Name    string
			PurgedCount int
		}
	}
	a.admin(`mutation { purgeRepository(input: {namespace: "lifecycle", name: "web"}) { id name purgedCount } }`, nil, &purged)
	if purged.PurgeRepository.Name != "web" || purged.PurgeRepository.ID != repoID.String() || purged.PurgeRepository.PurgedCount != 2 {
		t.Fatalf("purge = %+v", purged)
	}
	var left int
	if err := a.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM repositories WHERE namespace_id = $1) +
		(SELECT count(*) FROM container_repositories WHERE namespace_id = $1) +
		(SELECT count(*) FROM container_images WHERE namespace_id = $1) +
		(SELECT count(*) FROM container_manifests WHERE namespace_id = $1) +
		(SELECT count(*) FROM blob_storage_attachments WHERE namespace_id = $1 AND sha256 = $2) +
		(SELECT count(*) FROM repository_collection_repositories WHERE namespace_id = $1)`, nsID, payload).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d rows left after purge", left)
	}
	// The name is free again.
	a.createRepository("lifecycle", "web", "OCI", "PUBLIC")
}

func testPurgeRefusedForVirtualUpstream(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("virtual")
	up := a.createRepository("virtual", "upstream", "NPM", "PRIVATE")
	// A repository in the trash that a virtual lists (only possible when
	// it was listed before the move): purging it is refused too.
	a.admin(`mutation { deleteRepository(input: {namespace: "virtual", name: "upstream"}) { repository { id } } }`, nil, nil)
	virt, child := newID(t), newID(t)
	a.exec(`INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, 'virt', 2, 1, 1)`, virt, nsID)
	a.exec(`INSERT INTO npm_virtual_repositories (id, namespace_id, repository_id) VALUES ($1, $2, $3)`, child, nsID, virt)
	a.exec(`INSERT INTO npm_virtual_repository_upstreams (id, namespace_id, npm_virtual_repository_id, upstream_repository_id, position)
		VALUES ($1, $2, $3, $4, 1)`, newID(t), nsID, child, up)
	r := a.expectError(adminToken, `mutation { purgeRepository(input: {namespace: "virtual", name: "upstream"}) { id } }`, nil, CodeConflict)
	if !contains(r.Errors[0].Message, "upstream of a virtual repository") {
		t.Fatalf("message: %s", r.Errors[0].Message)
	}
	// An active upstream cannot even go to the trash; the error names
	// the virtual repositories that list it.
	a.createRepository("virtual", "hosted", "NPM", "PRIVATE")
	a.admin(`mutation { createRepository(input: {namespace: "virtual", name: "all", format: NPM, kind: VIRTUAL,
		virtual: {upstreams: [{repository: "hosted"}]}}) { repository { id } } }`, nil, nil)
	r = a.expectError(adminToken, `mutation { deleteRepository(input: {namespace: "virtual", name: "hosted"}) { repository { id } } }`, nil, CodeConflict)
	if !contains(r.Errors[0].Message, "all") {
		t.Fatalf("message: %s", r.Errors[0].Message)
	}
}

func testCollections(t *testing.T, a *testAPI) {
	a.createNamespace("collections")
	a.createRepository("collections", "r1", "OCI", "PUBLIC")
	a.createRepository("collections", "r2", "OCI", "PUBLIC")
	a.admin(`mutation { createRepositoryCollection(input: {namespace: "collections", name: "team-a"}) { collection { id name isDefault } } }`, nil, nil)
	a.expectError(adminToken, `mutation { createRepositoryCollection(input: {namespace: "collections", name: "team-a"}) { collection { id } } }`, nil, CodeAlreadyExists)
	a.expectError(adminToken, `mutation { createRepositoryCollection(input: {namespace: "collections", name: "Team A"}) { collection { id } } }`, nil, CodeInvalidInput)

	var linked struct {
		LinkRepositoryToCollection struct {
			Repository struct{ Collections []struct{ Name string } }
		}
	}
	q := `mutation { linkRepositoryToCollection(input: {namespace: "collections", repository: "r1", collection: "team-a"}) { repository { collections { name } } } }`
	a.admin(q, nil, &linked)
	a.admin(q, nil, &linked) // idempotent
	if cs := linked.LinkRepositoryToCollection.Repository.Collections; len(cs) != 2 || cs[0].Name != "default" || cs[1].Name != "team-a" {
		t.Fatalf("collections = %+v", cs)
	}
	var filtered struct {
		Namespace struct {
			Repositories struct {
				TotalCount int
				Edges      []struct{ Node struct{ Name string } }
			}
		}
	}
	a.admin(`{ namespace(slug: "collections") { repositories(filter: {collection: "team-a"}) { totalCount edges { node { name } } } } }`, nil, &filtered)
	if filtered.Namespace.Repositories.TotalCount != 1 || filtered.Namespace.Repositories.Edges[0].Node.Name != "r1" {
		t.Fatalf("filtered = %+v", filtered)
	}
	// Unlink: allowed while another link remains, refused for the last one.
	a.admin(`mutation { unlinkRepositoryFromCollection(input: {namespace: "collections", repository: "r1", collection: "default"}) { repository { id } } }`, nil, nil)
	a.expectError(adminToken, `mutation { unlinkRepositoryFromCollection(input: {namespace: "collections", repository: "r1", collection: "team-a"}) { repository { id } } }`, nil, CodeConflict)
	a.expectError(adminToken, `mutation { unlinkRepositoryFromCollection(input: {namespace: "collections", repository: "r2", collection: "team-a"}) { repository { id } } }`, nil, CodeNotFound)
	a.expectError(adminToken, `mutation { linkRepositoryToCollection(input: {namespace: "collections", repository: "r2", collection: "nope"}) { repository { id } } }`, nil, CodeNotFound)
}

// testNamespacesListing: the admin's list walks every namespace once in
// the order asked for (slug in byte order by default, or creation time),
// narrowed by a slug prefix, with each namespace's active repository count.
func testNamespacesListing(t *testing.T, a *testAPI) {
	created := []string{"list-c", "list-a1", "list-b", "list-a-2", "list-a", "list-d", "list-e"}
	for _, s := range created {
		a.createNamespace(s)
	}
	type page struct {
		Namespaces struct {
			Edges []struct {
				Node struct {
					Slug              string
					RepositoriesCount int
				}
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   string
			}
			TotalCount int
		}
	}
	const q = `query($a: String, $o: NamespaceOrder, $s: String) {
		namespaces(first: 2, after: $a, orderBy: $o, search: $s) {
			edges { node { slug repositoriesCount } } pageInfo { hasNextPage endCursor } totalCount } }`
	// walk returns the slugs with the prefix "list-" of every page, and
	// checks totalCount against the rows walked.
	walk := func(order map[string]any, search any) []string {
		t.Helper()
		var seen []string
		var after *string
		total := 0
		for {
			var out page
			a.admin(q, map[string]any{"a": after, "o": order, "s": search}, &out)
			for _, e := range out.Namespaces.Edges {
				total++
				if strings.HasPrefix(e.Node.Slug, "list-") {
					seen = append(seen, e.Node.Slug)
				}
			}
			if !out.Namespaces.PageInfo.HasNextPage {
				if out.Namespaces.TotalCount != total {
					t.Fatalf("order %v search %v: totalCount = %d, walked %d", order, search, out.Namespaces.TotalCount, total)
				}
				return seen
			}
			c := out.Namespaces.PageInfo.EndCursor
			after = &c
		}
	}
	want := func(what string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: walked %v, want %v", what, got, want)
		}
	}
	reversed := func(s []string) []string { r := slices.Clone(s); slices.Reverse(r); return r }
	// Byte order: "-" sorts before digits and letters, whatever the
	// database's collation.
	bySlug := []string{"list-a", "list-a-2", "list-a1", "list-b", "list-c", "list-d", "list-e"}
	want("default order", walk(nil, nil), bySlug...)
	want("SLUG ASC", walk(map[string]any{"field": "SLUG", "direction": "ASC"}, nil), bySlug...)
	want("SLUG DESC", walk(map[string]any{"field": "SLUG", "direction": "DESC"}, nil), reversed(bySlug)...)
	want("CREATED_AT ASC", walk(map[string]any{"field": "CREATED_AT", "direction": "ASC"}, nil), created...)
	want("CREATED_AT DESC", walk(map[string]any{"field": "CREATED_AT", "direction": "DESC"}, nil), reversed(created)...)

	// Search: a slug prefix, case-insensitive, with its own totalCount.
	want("search list-a", walk(nil, " LIST-A "), "list-a", "list-a-2", "list-a1")
	want("search list-a newest first", walk(map[string]any{"field": "CREATED_AT", "direction": "DESC"}, "list-a"), "list-a", "list-a-2", "list-a1")
	want("search list-a-", walk(nil, "list-a-"), "list-a-2")
	want("search no match", walk(nil, "list-zz"))
	// Characters no slug holds match nothing (not wildcards).
	want("search list_", walk(nil, "list_"))
	want("search list%", walk(nil, "list%"))
	var everything page
	a.admin(q, map[string]any{"s": ""}, &everything)
	var count struct{ Namespaces struct{ TotalCount int } }
	a.admin(`{ namespaces { totalCount } }`, nil, &count)
	if everything.Namespaces.TotalCount != count.Namespaces.TotalCount {
		t.Fatalf("empty search counts %d, no search %d", everything.Namespaces.TotalCount, count.Namespaces.TotalCount)
	}
	a.expectError(adminToken, q, map[string]any{"s": strings.Repeat("a", 256)}, CodeInvalidInput)
	// A cursor only continues the order it came from.
	var first page
	a.admin(q, map[string]any{"o": map[string]any{"field": "CREATED_AT", "direction": "ASC"}}, &first)
	a.expectError(adminToken, q, map[string]any{"a": first.Namespaces.PageInfo.EndCursor}, CodeInvalidInput)

	// Repository counts: active repositories, the trash left out.
	a.createRepository("list-b", "one", "OCI", "PRIVATE")
	a.createRepository("list-b", "two", "NPM", "PUBLIC")
	a.createRepository("list-b", "gone", "MAVEN", "PRIVATE")
	a.admin(`mutation { deleteRepository(input: {namespace: "list-b", name: "gone"}) { repository { id } } }`, nil, nil)
	a.createRepository("list-c", "only", "OCI", "PRIVATE")
	var counts page
	a.admin(`query { namespaces(first: 100, search: "list-") { edges { node { slug repositoriesCount } } } }`, nil, &counts)
	got := map[string]int{}
	for _, e := range counts.Namespaces.Edges {
		got[e.Node.Slug] = e.Node.RepositoriesCount
	}
	if got["list-b"] != 2 || got["list-c"] != 1 || got["list-a"] != 0 || len(got) != len(created) {
		t.Fatalf("repository counts %v", got)
	}
}

func testInternalErrorsAreNotLeaked(t *testing.T, a *testAPI) {
	a.createNamespace("internal")
	// Break the database under the API: the client gets a generic INTERNAL error.
	a.exec(`ALTER TABLE repositories RENAME COLUMN description TO description_gone`)
	t.Cleanup(func() { a.exec(`ALTER TABLE repositories RENAME COLUMN description_gone TO description`) })
	r := a.expectError(adminToken, `{ namespace(slug: "internal") { repositories { totalCount edges { node { name } } } } }`, nil, CodeInternal)
	if r.Errors[0].Message != "internal error" {
		t.Fatalf("leaked: %q", r.Errors[0].Message)
	}
}

// TestAPI runs the API scenarios on one database (cloning a migrated
// database is the slow part of a test); each scenario uses its own
// namespaces, which is all the isolation the API needs.
func TestAPI(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *testAPI)
	}{
		{"CreateNamespace", testCreateNamespaceCreatesDefaultCollectionAndStatistics},
		{"NamespaceSlugValidation", testNamespaceSlugValidation},
		{"CreateRepositoryAndLookups", testCreateRepositoryAndLookups},
		{"RepositoryInputValidation", testRepositoryInputValidation},
		{"Authorization", testAuthorization},
		{"NamespaceStatusAndConditions", testNamespaceStatusAndConditions},
		{"RepositoryLifecycle", testRepositoryLifecycle},
		{"PurgeRefusedForVirtualUpstream", testPurgeRefusedForVirtualUpstream},
		{"Collections", testCollections},
		{"NamespacesListing", testNamespacesListing},
		{"ContainerArtifacts", testContainerArtifacts},
		{"ContainerMutations", testContainerMutations},
		{"ImageListShowsImagesWithLiveManifests", testImageListShowsImagesWithLiveManifests},
		{"TrashHistoryAndChecksumSearch", testTrashHistoryAndChecksumSearch},
		{"TrashRetentionAndPurge", testTrashRetentionAndPurge},
		{"MavenAndNpmArtifacts", testMavenAndNpmArtifacts},
		{"GCQueue", testGCQueue},
		{"QueryLimits", testQueryLimits},
		{"NoNPlusOne", testNoNPlusOne},
		{"PaginationWalksEveryRowOnce", testPaginationWalksEveryRowOnce},
		{"InternalErrorsAreNotLeaked", testInternalErrorsAreNotLeaked}, // last: alters the schema
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, a.with(t)) })
	}
}
