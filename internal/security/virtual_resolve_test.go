package security

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// resolution is the answer of VirtualRepository.resolve.
type resolution struct {
	ResolvedFrom     *struct{ Name string }
	ResolvedPosition *int
	Steps            []struct {
		Position        int
		Hidden          bool
		Kind            *string
		Outcome         string
		Repository      *struct{ Name string }
		DeniedField     *string
		DeniedBy        *struct{ Pattern string }
		ReservedPattern *string
	}
}

// TestVirtualResolveFollowsTheRepositoryRule covers
// VirtualRepository.resolve: it needs READ on the virtual, like
// Repository.virtual, and each member the caller may not read is hidden
// (no repository, no kind, no reason), whatever the member's outcome; a
// hidden member that serves still says so, as a pull through the virtual
// would show. Every hosted OCI repository of the world holds img:v1, so
// the first member serves and the others are skipped.
func TestVirtualResolveFollowsTheRepositoryRule(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	members := []string{"oci-private", "oci-internal", "oci-public"}
	byName := map[string]*target{}
	for i := range w.targets {
		byName[w.targets[i].repo] = &w.targets[i]
	}
	for _, v := range []enum.Visibility{enum.VisibilityPublic, enum.VisibilityPrivate} {
		name := "oci-virtual-" + strings.ToLower(v.String())
		body, _ := json.Marshal(map[string]any{"query": `mutation($in: CreateRepositoryInput!) { createRepository(input: $in) { repository { id } } }`,
			"variables": map[string]any{"in": map[string]any{"namespace": testserver.Home, "name": name, "format": "OCI", "kind": "VIRTUAL",
				"visibility": strings.ToUpper(v.String()), "virtual": map[string]any{"upstreams": []map[string]any{
					{"repository": members[0]}, {"repository": members[1]}, {"repository": members[2]}}}}}})
		if r := w.Do(http.MethodPost, "/graphql", testserver.Bearer(testserver.AdminToken), body, "Content-Type", "application/json"); r.Status != http.StatusOK || strings.Contains(r.Body, `"errors"`) {
			t.Fatalf("create %s: %d %s", name, r.Status, r.Body)
		}
		virtual := &target{format: enum.FormatOCI, vis: v, repo: name}
		for _, c := range w.callers {
			cell := c.name + " on " + name
			body, _ := json.Marshal(map[string]any{"query": `query($r: String!) { repository(namespace: "` + testserver.Home + `", name: $r) {
				virtual { resolve(name: "img", version: "v1") { resolvedFrom { name } resolvedPosition
					steps { position hidden kind outcome repository { name } deniedField deniedBy { pattern } reservedPattern } } } } }`,
				"variables": map[string]any{"r": name}})
			authz := ""
			if c.secret != "" {
				authz = testserver.Bearer(c.secret)
			}
			r := w.Do(http.MethodPost, "/graphql", authz, body, "Content-Type", "application/json")
			var out struct {
				Data *struct {
					Repository *struct {
						Virtual *struct{ Resolve resolution }
					}
				}
			}
			if err := json.Unmarshal([]byte(r.Body), &out); err != nil {
				t.Fatalf("%s: %v %s", cell, err, r.Body)
			}
			var got *resolution
			if out.Data != nil && out.Data.Repository != nil && out.Data.Repository.Virtual != nil {
				got = &out.Data.Repository.Virtual.Resolve
			}
			if !allowed(pull, c.name, virtual) {
				if got != nil {
					t.Errorf("%s: resolved without READ on the virtual: %s", cell, r.Body)
				}
				continue
			}
			if got == nil || len(got.Steps) != len(members) || got.ResolvedPosition == nil || *got.ResolvedPosition != 1 {
				t.Errorf("%s: %s", cell, r.Body)
				continue
			}
			for i, s := range got.Steps {
				visible := allowed(pull, c.name, byName[members[i]])
				want := "SKIPPED"
				if i == 0 {
					want = "SERVES"
				}
				switch {
				case s.Outcome != want:
					t.Errorf("%s: step %d is %s, want %s", cell, i+1, s.Outcome, want)
				case visible && (s.Hidden || s.Repository == nil || s.Repository.Name != members[i] || s.Kind == nil):
					t.Errorf("%s: step %d hides %s, which the caller may read: %s", cell, i+1, members[i], r.Body)
				case !visible && (!s.Hidden || s.Repository != nil || s.Kind != nil || s.DeniedField != nil || s.DeniedBy != nil || s.ReservedPattern != nil):
					t.Errorf("%s: step %d shows %s, which the caller may not read: %s", cell, i+1, members[i], r.Body)
				}
			}
			if from := got.ResolvedFrom; (from != nil) != allowed(pull, c.name, byName[members[0]]) || (from != nil && from.Name != members[0]) {
				t.Errorf("%s: resolvedFrom %+v", cell, from)
			}
		}
	}
}
