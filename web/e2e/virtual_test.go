package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestUIVirtualRepository: a virtual OCI repository is created in the UI
// over a pull-through cache (with an allow rule) and a hosted repository
// moved ahead of it, with a deploy target and a reserved name; its page
// shows the resolution order; an image of the hosted upstream pulls
// through it; the list is edited (a new upstream added first) and saved;
// deleting an upstream is refused with the virtual named.
func TestUIVirtualRepository(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	for _, n := range []string{"internal", "team"} {
		s.graphql(t, `mutation($n: String!) { createRepository(input: {namespace: "acme", name: $n, format: OCI, visibility: PRIVATE}) { repository { id } } }`,
			map[string]any{"n": n})
	}
	s.graphql(t, `mutation($u: String!) { createRepository(input: {namespace: "acme", name: "mirror", format: OCI, kind: REMOTE,
		remote: {url: $u}}) { repository { id } } }`, map[string]any{"u": s.URL})
	manifest, _ := s.pushImage(t, "acme/internal/app", "v1", []byte(strings.Repeat("served through the virtual ", 512)))

	b := newBrowser(t, s.URL, 1280, 1100)
	defer b.checkConsole()
	b.open("/sign-in?next=%2Fn%2Facme%2Frepositories%2Fnew")
	b.typeInto("#token", adminToken)
	b.click(button("Sign in"))
	b.see(heading("Create repository"))
	b.typeInto("#repo-name", "all")
	b.click(`//input[@name="format" and @value="OCI"]`)
	b.click(`//input[@name="kind" and @value="VIRTUAL"]`)
	b.waitFor("upstream candidates", `!!document.querySelector('#virtual-add option[value="mirror"]')`)
	b.choose("#virtual-add", "mirror")
	b.click(button("Add"))
	b.choose("#virtual-add", "internal")
	b.click(button("Add"))
	b.click(button("Move internal up"))
	b.click(button("Add rule to mirror"))
	b.typeInto(`input[aria-label="Rule 1 of mirror: pattern"]`, "library/**")
	b.choose("#virtual-deploy", "internal")
	b.typeInto("#virtual-reserved", "acme/*")
	b.shot("60-create-virtual")
	b.click(button("Create repository"))
	b.see(heading("all"))
	b.see(text("Resolution order"))
	b.see(text("allow name library/**"))
	b.see(text("deploy target"))
	b.see(text("Pushes and publishes go to internal."))

	// The Resolve box: the hosted image resolves from internal, the
	// remote after it is skipped, and the list marks internal.
	b.typeInto("#resolve-name", "app")
	b.typeInto("#resolve-version", "v1")
	b.click(button("Resolve"))
	b.see(text("app v1 resolves from internal (hosted, member 1)."))
	b.see(text("Has it, and its rules admit it."))
	b.see(text("Not consulted: an earlier upstream serves it."))
	b.see(text("resolved from here"))
	b.eval(`(() => { [...document.querySelectorAll("h2")].find((h) => h.textContent === "Resolution order").scrollIntoView(); return ""; })()`)
	b.docShot("61-virtual-repository", "virtual-repository")

	// A name the mirror's allow rule admits but nobody has cached: the
	// request would go upstream. User bytes stay text.
	clearInput(b, "#resolve-name")
	clearInput(b, "#resolve-version")
	b.typeInto("#resolve-name", "library/alpine")
	b.click(button("Resolve"))
	b.see(text("No member serves library/alpine from stored or cached content."))
	b.see(text("Admits it but has no cached copy: a request would ask its upstream."))
	b.see(text("asks upstream first"))
	clearInput(b, "#resolve-name")
	b.typeInto("#resolve-name", `<img src=x onerror="document.title='pwned'">`)
	b.click(button("Resolve"))
	b.see(text(`No member serves <img src=x onerror="document.title='pwned'"> from stored or cached content.`))
	b.see(text("No allow rule on the name matches."))
	if got := b.eval(`document.querySelectorAll(".resolve-box img").length + ":" + document.title`); strings.HasPrefix(got, "1") || strings.Contains(got, "pwned") {
		t.Fatalf("the resolved name was rendered as HTML: %s", got)
	}

	// The hosted image pulls through the virtual.
	resp := s.ociDo(t, http.MethodGet, "/v2/acme/all/app/manifests/v1", "", nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || digestOf(body) != manifest {
		t.Fatalf("pull through the virtual: %s %s", resp.Status, body)
	}

	// Edit: team goes first; the saved list comes back in order.
	b.choose("#virtual-add", "team")
	b.click(button("Add"))
	b.click(button("Move team up"))
	b.click(button("Move team up"))
	b.click(button("Save upstreams"))
	b.see(text("Saved."))
	var out struct {
		Repository struct {
			Virtual struct {
				Upstreams []struct {
					Position   int
					Repository struct{ Name string }
				}
			}
		}
	}
	if err := json.Unmarshal(s.graphql(t, `{ repository(namespace: "acme", name: "all") { virtual { upstreams { position repository { name } } } } }`, nil), &out); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, u := range out.Repository.Virtual.Upstreams {
		order = append(order, u.Repository.Name)
	}
	if strings.Join(order, ",") != "team,internal,mirror" {
		t.Fatalf("saved order %v", order)
	}

	// An upstream cannot go while the virtual lists it.
	b.open("/n/acme/r/internal")
	b.click(button("Move to trash"))
	b.see(text("Could not delete the repository"))
	b.see(text("virtual repositories all"))
}

// clearInput empties a React-controlled input as typing would.
func clearInput(b *tab, css string) {
	b.t.Helper()
	b.eval(fmt.Sprintf(`(() => { const i = document.querySelector(%q);
		Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set.call(i, "");
		i.dispatchEvent(new Event("input", {bubbles: true})); return ""; })()`, css))
}
