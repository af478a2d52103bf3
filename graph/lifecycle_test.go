package graph

import (
	"fmt"
	"strings"
	"testing"
)

// TestLifecyclePolicyAPI: bad input is INVALID_INPUT and writes nothing;
// a repository override of keep-last-3 over eight tagged manifests
// previews five (paged), a draft previews what it would delete, the run
// moves the five to the trash and the trash names the policy as their
// deleter, while a user's delete names the user.
func TestLifecyclePolicyAPI(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	nsID := a.createNamespace("lc")
	repoID := a.createRepository("lc", "img", "OCI", "PRIVATE")
	img := a.addImage(nsID, repoID, "app")
	extra, _ := a.addManifest(nsID, img, "user-deleted", 100)
	a.addTag(nsID, img, extra, "keep-me")
	for i := 1; i <= 8; i++ {
		m, _ := a.addManifest(nsID, img, fmt.Sprintf("manifest-%d", i), 100)
		a.addTag(nsID, img, m, fmt.Sprintf("v%d", i))
	}

	a.expectError(adminToken, `mutation { setLifecyclePolicy(input: {namespace: "lc", repository: "img", enabled: true,
		rules: [{type: KEEP_REGEX, pattern: "("}]}) { policy { id } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `mutation { setLifecyclePolicy(input: {namespace: "lc", repository: "img", enabled: true,
		rules: [{type: KEEP_LAST_N}]}) { policy { id } } }`, nil, CodeInvalidInput)
	var read struct {
		Repository struct{ LifecyclePolicy *struct{ ID string } }
	}
	a.admin(`{ repository(namespace: "lc", name: "img") { lifecyclePolicy { id } } }`, nil, &read)
	if read.Repository.LifecyclePolicy != nil {
		t.Fatalf("a refused policy was written: %+v", read.Repository.LifecyclePolicy)
	}

	var set struct {
		SetLifecyclePolicy struct {
			Policy struct {
				ID         string
				Enabled    bool
				MinAgeDays int
				Rules      []struct {
					Type  string
					Count *int
				}
			}
		}
	}
	a.admin(`mutation { setLifecyclePolicy(input: {namespace: "lc", repository: "img", enabled: true, minAgeDays: 0,
		rules: [{type: KEEP_LAST_N, count: 3}, {type: KEEP_REGEX, pattern: "keep-.*"}]}) {
		policy { id enabled minAgeDays rules { type count } } } }`, nil, &set)
	p := set.SetLifecyclePolicy.Policy
	if !p.Enabled || p.MinAgeDays != 0 || len(p.Rules) != 2 || p.Rules[0].Type != "KEEP_LAST_N" || *p.Rules[0].Count != 3 {
		t.Fatalf("policy: %+v", p)
	}

	type page struct {
		ArtifactCount int
		SizeBytes     int64
		Items         struct {
			Edges []struct {
				Node struct {
					Kind string
					Name string
					Tags []string
				}
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   string
			}
		}
	}
	var pv struct{ PreviewLifecyclePolicy page }
	const q = `query($after: String) { previewLifecyclePolicy(namespace: "lc", repository: "img") {
		artifactCount sizeBytes items(first: 3, after: $after) { edges { node { kind name tags } } pageInfo { hasNextPage endCursor } } } }`
	a.admin(q, nil, &pv)
	got := pv.PreviewLifecyclePolicy
	if got.ArtifactCount != 5 || got.SizeBytes != 500 || len(got.Items.Edges) != 3 || !got.Items.PageInfo.HasNextPage ||
		got.Items.Edges[0].Node.Tags[0] != "v5" || got.Items.Edges[0].Node.Kind != "CONTAINER_MANIFEST" {
		t.Fatalf("preview: %+v", got)
	}
	a.admin(q, map[string]any{"after": got.Items.PageInfo.EndCursor}, &pv)
	if rest := pv.PreviewLifecyclePolicy.Items; len(rest.Edges) != 2 || rest.PageInfo.HasNextPage || rest.Edges[1].Node.Tags[0] != "v1" {
		t.Fatalf("preview page 2: %+v", rest)
	}
	var draft struct{ PreviewLifecyclePolicy struct{ ArtifactCount int } }
	a.admin(`{ previewLifecyclePolicy(namespace: "lc", repository: "img", policy: {enabled: true, minAgeDays: 0,
		rules: [{type: KEEP_LAST_N, count: 7}]}) { artifactCount } }`, nil, &draft)
	if draft.PreviewLifecyclePolicy.ArtifactCount != 2 {
		t.Fatalf("draft preview: %+v", draft)
	}

	a.admin(`mutation { deleteContainerManifest(input: {namespace: "lc", repository: "img", image: "app",
		digest: "sha256:`+fmt.Sprintf("%x", digestOf("user-deleted"))+`"}) { manifest { id } } }`, nil, nil)
	var run struct{ RunLifecyclePolicy struct{ DeletedCount int } }
	a.admin(`mutation { runLifecyclePolicy(input: {namespace: "lc", repository: "img"}) { deletedCount } }`, nil, &run)
	if run.RunLifecyclePolicy.DeletedCount != 5 {
		t.Fatalf("run: %+v", run)
	}
	var trash struct {
		Namespace struct {
			Trash struct {
				Edges []struct {
					DeletedBy *string
					Node      struct{ Digest string }
				}
			}
		}
	}
	a.admin(`{ namespace(slug: "lc") { trash(first: 20, kind: CONTAINER_MANIFEST) { edges { deletedBy node { ... on ContainerManifest { digest } } } } } }`, nil, &trash)
	byPolicy, byUser := 0, 0
	for _, e := range trash.Namespace.Trash.Edges {
		switch {
		case e.DeletedBy != nil && *e.DeletedBy == "policy:"+p.ID:
			byPolicy++
		case e.DeletedBy != nil && strings.HasPrefix(*e.DeletedBy, "admin:"):
			byUser++
		default:
			t.Errorf("trash item deleted by %v", e.DeletedBy)
		}
	}
	if byPolicy != 5 || byUser != 1 {
		t.Fatalf("trash: %d by the policy, %d by the admin; want 5 and 1", byPolicy, byUser)
	}
}

// TestLifecyclePolicyPermissions: reading and previewing need ADMIN
// reads, setting and running ADMIN; a READ token is refused.
func TestLifecyclePolicyPermissions(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	a.createNamespace("lcp")
	a.createRepository("lcp", "img", "OCI", "PRIVATE")
	read := a.createToken(adminToken, "lcp", "reader", []string{"READ"}, nil).Secret
	admin := a.createToken(adminToken, "lcp", "admin", []string{"ADMIN"}, nil).Secret
	a.expectError(read, `{ previewLifecyclePolicy(namespace: "lcp") { artifactCount } }`, nil, CodeForbidden)
	a.expectError(read, `mutation { setLifecyclePolicy(input: {namespace: "lcp", repository: "img", enabled: true, rules: []}) { policy { id } } }`, nil, CodeForbidden)
	a.expectError(read, `mutation { runLifecyclePolicy(input: {namespace: "lcp", repository: "img"}) { deletedCount } }`, nil, CodeForbidden)
	a.expectError(read, `{ namespace(slug: "lcp") { lifecyclePolicy { id } } }`, nil, CodeForbidden)
	if r := a.post(admin, `mutation { setLifecyclePolicy(input: {namespace: "lcp", enabled: true, rules: [{type: KEEP_LAST_N, count: 1}]}) { policy { id } } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("ADMIN token: %+v", r.Errors)
	}
	if r := a.post(admin, `{ namespace(slug: "lcp") { lifecyclePolicy { rules { type count } } } previewLifecyclePolicy(namespace: "lcp") { artifactCount } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("ADMIN token read: %+v", r.Errors)
	}
}
