package security

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestListingsAreFiltered covers the rules that serve everyone but filter
// what they return: the OCI catalog, the bearer tokens of /v2/token and
// a namespace's repositories in GraphQL. Every caller sees, or is granted,
// exactly the repositories the read rule allows, across namespaces and
// across repositories.
func TestListingsAreFiltered(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var callers []caller
	for _, c := range w.callers {
		if c.name != "garbage" {
			callers = append(callers, c)
		}
	}
	auth := func(c caller, bearer bool) string {
		switch {
		case c.secret == "":
			return ""
		case bearer:
			return testserver.Bearer(c.secret)
		}
		return testserver.Basic(c.secret)
	}

	t.Run("catalog", func(t *testing.T) {
		for _, c := range callers {
			r := w.Do(http.MethodGet, "/v2/_catalog?n=1000", auth(c, false), nil)
			var doc struct{ Repositories []string }
			if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &doc) != nil {
				t.Errorf("catalog as %s: %d %s", c.name, r.Status, r.Body)
				continue
			}
			for _, tg := range w.targets {
				if tg.format != enum.FormatOCI {
					continue
				}
				name := testserver.Home + "/" + tg.repo + "/img"
				// The catalog lists pushed images; a pull-through cache's
				// cached images are not listed.
				if listed, want := slices.Contains(doc.Repositories, name), allowed(pull, c.name, &tg) && !tg.remote; listed != want {
					t.Errorf("catalog as %s lists %s: %v, want %v", c.name, name, listed, want)
				}
			}
		}
	})

	t.Run("bearer tokens", func(t *testing.T) {
		for _, c := range callers {
			for _, tg := range w.targets {
				if tg.format != enum.FormatOCI {
					continue
				}
				name := testserver.Home + "/" + tg.repo + "/img"
				r := w.Do(http.MethodGet, "/v2/token?service=artifact-registry&scope=repository:"+name+":pull,push", auth(c, false), nil)
				var tok struct{ Token string }
				if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &tok) != nil || tok.Token == "" {
					t.Errorf("token as %s for %s: %d %s", c.name, name, r.Status, r.Body)
					continue
				}
				pullStatus := w.Do(http.MethodGet, "/v2/"+name+"/manifests/v1", testserver.Bearer(tok.Token), nil).Status
				pushStatus := w.Do(http.MethodPost, "/v2/"+name+"/blobs/uploads/", testserver.Bearer(tok.Token), nil).Status
				pulled, pushed := pullStatus == http.StatusOK, pushStatus == http.StatusAccepted
				if tg.remote {
					// A remote's upstream (the server itself) has no such
					// image: an authorized pull is its 404; an authorized
					// push is refused as a push to a remote (405).
					pulled = pullStatus == http.StatusNotFound
					pushed = pushStatus == http.StatusMethodNotAllowed
				}
				if want := allowed(pull, c.name, &tg); pulled != want {
					t.Errorf("token of %s pulls %s: %v, want %v", c.name, name, pulled, want)
				}
				if want := allowed(push, c.name, &tg); pushed != want {
					t.Errorf("token of %s pushes to %s: %v, want %v", c.name, name, pushed, want)
				}
			}
		}
	})

	t.Run("graphql repositories", func(t *testing.T) {
		doc, _ := json.Marshal(map[string]any{
			"query":     `query($s:String!){namespace(slug:$s){repositories(first:100){edges{node{name}}}}}`,
			"variables": map[string]string{"s": testserver.Home},
		})
		for _, c := range callers {
			r := w.Do(http.MethodPost, "/graphql", auth(c, true), doc, "Content-Type", "application/json")
			var res struct {
				Data struct {
					Namespace *struct {
						Repositories struct {
							Edges []struct{ Node struct{ Name string } }
						}
					}
				}
				Errors []any
			}
			if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &res) != nil || res.Data.Namespace == nil || len(res.Errors) > 0 {
				t.Errorf("repositories as %s: %d %s", c.name, r.Status, r.Body)
				continue
			}
			var names []string
			for _, e := range res.Data.Namespace.Repositories.Edges {
				names = append(names, e.Node.Name)
			}
			for _, tg := range w.targets {
				if listed, want := slices.Contains(names, tg.repo), allowed(pull, c.name, &tg); listed != want {
					t.Errorf("repositories of %s as %s list %s: %v, want %v", testserver.Home, c.name, tg.repo, listed, want)
				}
			}
		}
	})
}
