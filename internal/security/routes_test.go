package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/internal/testserver"
)

// surface is the protocol a request speaks: it decides how credentials
// travel and what a refusal looks like.
type surface string

const (
	ops    surface = "ops"
	ociS   surface = "oci"
	npmS   surface = "npm"
	mavenS surface = "maven"
	gqlS   surface = "graphql"
	ui     surface = "ui"
)

// op is one request that exercises a rule. Routes served by one handler
// under a prefix (npm, Maven, the OCI fallback, the UI) list the
// operations that handler dispatches to.
type op struct {
	method string // "" is the method of the rule's key
	need   need
	on     surface
	// repo is set for operations on a repository; path receives it ("" for
	// operations without one).
	repo bool
	path func(w *world, repo string) string
	body []byte
	// bodyOf, when set, builds the body from the caller's secret.
	bodyOf func(secret string) []byte
	hdr    []string
}

// manifestBody is an image manifest whose config is the world's config blob.
func manifestBody() []byte {
	b, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": testserver.SHA([]byte(cfgBlob)), "size": len(cfgBlob)},
		"layers": []any{},
	})
	return b
}

func fixed(p string) func(*world, string) string { return func(*world, string) string { return p } }

func image(w *world, repo string) string { return "/v2/" + testserver.Home + "/" + repo + "/img" }

func npmReg(repo string) string { return "/npm/" + testserver.Home + "/" + repo + "/" }

const unknownUpload = "/blobs/uploads/8d1f9a7e-3f51-4b7e-9d6a-0c2f3e4d5a6b"

// routeRules is the authorization rule of every route of the server, keyed
// "METHOD template" as the router declares it ("ANY" for a prefix that
// takes every method). A route the router serves without an entry here
// fails TestEveryRouteHasARule: add its rule (and its probe) here.
var routeRules = map[string][]op{
	"GET /-/health":  {{need: anyone, on: ops, path: fixed("/-/health")}},
	"HEAD /-/health": {{need: anyone, on: ops, path: fixed("/-/health")}},
	"GET /-/ready":   {{need: anyone, on: ops, path: fixed("/-/ready")}},
	"HEAD /-/ready":  {{need: anyone, on: ops, path: fixed("/-/ready")}},
	// Prometheus metrics carry route templates and counts, never names or
	// secrets; deployments keep /metrics off the public listener.
	"GET /metrics": {{need: anyone, on: ops, path: fixed("/metrics")}},

	"GET /v2/":  {{need: credential, on: ociS, path: fixed("/v2/")}},
	"HEAD /v2/": {{need: credential, on: ociS, path: fixed("/v2/")}},
	"GET /v2":   {{need: credential, on: ociS, path: fixed("/v2")}},
	"HEAD /v2":  {{need: credential, on: ociS, path: fixed("/v2")}},
	// The catalog lists only what the caller may pull (TestListingsAreFiltered).
	"GET /v2/_catalog": {{need: anyone, on: ociS, path: fixed("/v2/_catalog")}},
	// Tokens carry only the scopes the caller holds (TestListingsAreFiltered).
	"GET /v2/token":  {{need: anyone, on: ociS, path: fixed("/v2/token?service=artifact-registry")}},
	"HEAD /v2/token": {{need: anyone, on: ociS, path: fixed("/v2/token?service=artifact-registry")}},
	// The OAuth2 password grant (containerd) needs the token as password.
	"POST /v2/token": {{need: credential, on: ociS, path: fixed("/v2/token"), hdr: []string{"Content-Type", "application/x-www-form-urlencoded"},
		bodyOf: func(secret string) []byte {
			return []byte(url.Values{"grant_type": {"password"}, "service": {"artifact-registry"}, "username": {"ci"}, "password": {secret}}.Encode())
		}}},

	"POST /v2/{name:.+}/blobs/uploads/": {{need: push, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/blobs/uploads/" }}},
	"GET /v2/{name:.+}/blobs/uploads/{upload}": {{need: push, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + unknownUpload }}},
	"PATCH /v2/{name:.+}/blobs/uploads/{upload}": {{need: push, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + unknownUpload }, body: []byte("x")}},
	"PUT /v2/{name:.+}/blobs/uploads/{upload}": {{need: push, on: ociS, repo: true,
		path: func(w *world, r string) string {
			return image(w, r) + unknownUpload + "?digest=" + testserver.SHA([]byte("x"))
		}, body: []byte("x")}},
	"DELETE /v2/{name:.+}/blobs/uploads/{upload}": {{need: push, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + unknownUpload }}},
	"GET /v2/{name:.+}/blobs/{digest}": {{need: pull, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/blobs/" + testserver.SHA([]byte(cfgBlob)) }}},
	"HEAD /v2/{name:.+}/blobs/{digest}": {{need: pull, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/blobs/" + testserver.SHA([]byte(cfgBlob)) }}},
	"DELETE /v2/{name:.+}/blobs/{digest}": {{need: del, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/blobs/" + testserver.SHA([]byte("absent")) }}},
	"GET /v2/{name:.+}/manifests/{reference}": {{need: pull, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/manifests/v1" }}},
	"HEAD /v2/{name:.+}/manifests/{reference}": {{need: pull, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/manifests/" + w.digest[r] }}},
	"PUT /v2/{name:.+}/manifests/{reference}": {{need: push, on: ociS, repo: true,
		// A valid manifest: the body is parsed before the name is resolved
		// (stateless, it tells nothing about the repository), so an invalid
		// one would be refused before authorization is reached.
		path: func(w *world, r string) string { return image(w, r) + "/manifests/v2" },
		body: manifestBody(), hdr: []string{"Content-Type", "application/vnd.oci.image.manifest.v1+json"}}},
	"DELETE /v2/{name:.+}/manifests/{reference}": {{need: del, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/manifests/nope" }}},
	"GET /v2/{name:.+}/tags/list": {{need: pull, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/tags/list" }}},
	"GET /v2/{name:.+}/referrers/{digest}": {{need: pull, on: ociS, repo: true,
		path: func(w *world, r string) string { return image(w, r) + "/referrers/" + w.digest[r] }}},
	// Everything else under /v2/ is a 404 or 405 in the OCI format.
	"ANY /v2/": {{method: http.MethodPost, need: anyone, on: ociS, path: fixed("/v2/_catalog")}},

	"ANY /npm/": {
		{method: http.MethodGet, need: pull, on: npmS, repo: true, path: func(_ *world, r string) string { return npmReg(r) + "pkg" }},
		{method: http.MethodGet, need: pull, on: npmS, repo: true, path: func(_ *world, r string) string { return npmReg(r) + "pkg/-/pkg-1.0.0.tgz" }},
		{method: http.MethodGet, need: pull, on: npmS, repo: true, path: func(_ *world, r string) string { return npmReg(r) + "-/package/pkg/dist-tags" }},
		{method: http.MethodPut, need: push, on: npmS, repo: true, path: func(_ *world, r string) string { return npmReg(r) + "-/package/pkg/dist-tags/stable" },
			body: []byte(`"1.0.0"`), hdr: []string{"Content-Type", "application/json"}},
		{method: http.MethodDelete, need: push, on: npmS, repo: true, path: func(_ *world, r string) string { return npmReg(r) + "-/package/pkg/dist-tags/nope" }},
		{method: http.MethodDelete, need: del, on: npmS, repo: true, path: func(_ *world, r string) string { return npmReg(r) + "pkg/-rev/0-stale" }},
		{method: http.MethodGet, need: credential, on: npmS, path: fixed(npmReg("npm-private") + "-/whoami")},
		{method: http.MethodGet, need: nsAdmin, on: npmS, path: fixed(npmReg("npm-private") + "-/npm/v1/tokens")},
	},
	"ANY /maven/": {
		{method: http.MethodGet, need: pull, on: mavenS, repo: true, path: func(_ *world, r string) string { return testserver.MavenPom(r, "1.0") }},
		{method: http.MethodHead, need: pull, on: mavenS, repo: true, path: func(_ *world, r string) string { return testserver.MavenPom(r, "1.0") }},
		{method: http.MethodGet, need: pull, on: mavenS, repo: true, path: func(_ *world, r string) string {
			return "/maven/" + testserver.Home + "/" + r + "/com/example/lib/maven-metadata.xml"
		}},
		{method: http.MethodPut, need: push, on: mavenS, repo: true, path: func(_ *world, r string) string { return testserver.MavenPom(r, "9.9-SNAPSHOT") },
			body: testserver.Pom("9.9-SNAPSHOT")},
	},
	// The endpoint serves everyone; TestEveryGraphQLFieldHasARule and
	// TestGraphQLMatrix hold its fields' rules.
	"POST /graphql": {{need: perField, on: gqlS, path: fixed("/graphql"), body: []byte(`{"query":"{viewer{__typename}}"}`),
		hdr: []string{"Content-Type", "application/json"}}},
	"GET /graphql": {{need: perField, on: gqlS, path: fixed("/graphql?query=%7Bviewer%7B__typename%7D%7D")}},
	// The playground page holds no data: its queries go to /graphql as the
	// session or the header typed into it.
	"GET /graphql/playground":  {{need: anyone, on: ui, path: fixed("/graphql/playground")}},
	"HEAD /graphql/playground": {{need: anyone, on: ui, path: fixed("/graphql/playground")}},
	// The UI's sign-in: a session for a valid credential only; asking for
	// or ending one acts on the caller's own cookie (none here).
	"ANY /-/session": {
		{method: http.MethodPost, need: credential, on: gqlS, path: fixed("/-/session"),
			bodyOf: func(secret string) []byte { return []byte(`{"token":"` + secret + `"}`) },
			hdr:    []string{"Content-Type", "application/json"}},
		{method: http.MethodGet, need: anyone, on: ui, path: fixed("/-/session")},
		{method: http.MethodDelete, need: anyone, on: ui, path: fixed("/-/session")},
	},
	// The UI's static files: no data without the API.
	"ANY /": {{method: http.MethodGet, need: anyone, on: ui, path: fixed("/")}},
}

// routeKeys walks the router: "METHOD template" for every route and
// method, "ANY template" for a route without methods.
func routeKeys(t *testing.T, r *mux.Router) []string {
	t.Helper()
	var keys []string
	err := r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return nil // a subrouter without a path of its own
		}
		methods, err := route.GetMethods()
		if err != nil || len(methods) == 0 {
			methods = []string{"ANY"}
		}
		for _, m := range methods {
			keys = append(keys, m+" "+tpl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func missingRules(served []string) []string {
	var missing []string
	for _, k := range served {
		if _, ok := routeRules[k]; !ok {
			missing = append(missing, k)
		}
	}
	return missing
}

func TestEveryRouteHasARule(t *testing.T) {
	t.Parallel()
	e := testserver.New(t, testserver.Options{})
	served := routeKeys(t, e.Server.Router())
	if len(served) < 20 {
		t.Fatalf("walked only %d routes: %v", len(served), served)
	}
	for _, k := range missingRules(served) {
		t.Errorf("route %q has no authorization rule: add it to routeRules in internal/security/routes_test.go", k)
	}
	// The check itself: a route mounted without a rule is reported.
	e.Server.Router().HandleFunc("/-/mounted-without-a-rule", http.NotFound).Methods(http.MethodPost)
	if got := missingRules(routeKeys(t, e.Server.Router())); !slices.Equal(got, []string{"POST /-/mounted-without-a-rule"}) {
		t.Errorf("a route without a rule was reported as %v", got)
	}
	for k, ops := range routeRules {
		if !slices.Contains(served, k) {
			t.Errorf("routeRules has %q, which the router does not serve: remove or rename it", k)
		}
		if len(ops) == 0 {
			t.Errorf("route %q has a rule without a probe", k)
		}
	}
}

// TestRouteMatrix sends every probe of every route as every caller, on
// every repository of its format, and checks the refusals and the passes.
func TestRouteMatrix(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	keys := make([]string, 0, len(routeRules))
	for k := range routeRules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cells := 0
	for _, k := range keys {
		method, _, _ := strings.Cut(k, " ")
		for i, o := range routeRules[k] {
			m := o.method
			if m == "" {
				m = method
			}
			for _, c := range w.callers {
				if !o.repo {
					w.check(t, fmt.Sprintf("%s #%d as %s", k, i, c.name), m, o, c, "", allowed(o.need, c.name, nil))
					cells++
					continue
				}
				for _, tg := range w.targets {
					if tg.format != formatOf(o.on) {
						continue
					}
					w.check(t, fmt.Sprintf("%s #%d as %s on %s", k, i, c.name, tg.repo), m, o, c, tg.repo, allowed(o.need, c.name, &tg))
					cells++
				}
			}
		}
	}
	t.Logf("%d route cells", cells)
}

// check sends one probe and asserts the refusal or the pass in the
// surface's own format.
func (w *world) check(t *testing.T, cell, method string, o op, c caller, repo string, ok bool) {
	t.Helper()
	authz := ""
	if c.secret != "" {
		authz = testserver.Basic(c.secret)
		if o.on == npmS || o.on == gqlS {
			authz = testserver.Bearer(c.secret)
		}
	}
	if c.name == "garbage" && o.on != ops && o.on != ui {
		ok = false // a bad credential is refused, never taken as anonymous
	}
	body := o.body
	if o.bodyOf != nil {
		body = o.bodyOf(c.secret)
	}
	r := w.Do(method, o.path(w, repo), authz, body, o.hdr...)
	refused := r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden
	if ok {
		if refused || r.Status >= 500 {
			t.Errorf("%s: %d %.200s, want it allowed (rule %s)", cell, r.Status, r.Body, o.need)
			return
		}
		if tg := w.target(repo); tg != nil && tg.remote {
			w.checkRemote(t, cell, method, o, tg, r)
		}
		return
	}
	if !refused {
		t.Errorf("%s: %d %.200s, want 401 or 403 (rule %s)", cell, r.Status, r.Body, o.need)
		return
	}
	if method == http.MethodHead {
		return
	}
	switch o.on {
	case ociS:
		if code := testserver.OCIError(r.Body); code != "UNAUTHORIZED" && code != "DENIED" {
			t.Errorf("%s: refusal %d %.200s is not an OCI error", cell, r.Status, r.Body)
		}
	case npmS:
		if _, isErr := testserver.NpmError(r.Body); !isErr {
			t.Errorf("%s: refusal %d %.200s is not an npm error", cell, r.Status, r.Body)
		}
	}
}

func (w *world) target(repo string) *target {
	for i := range w.targets {
		if w.targets[i].repo == repo {
			return &w.targets[i]
		}
	}
	return nil
}

// checkRemote checks what an allowed caller gets from a pull-through
// cache: a change is refused 405 in the protocol's format (after the
// authorization that let it through); an npm read is the upstream's
// content (its upstream, the public hosted repository, has it).
func (w *world) checkRemote(t *testing.T, cell, method string, o op, tg *target, r testserver.Response) {
	t.Helper()
	read := method == http.MethodGet || method == http.MethodHead
	switch {
	case !read && r.Status != http.StatusMethodNotAllowed:
		t.Errorf("%s: %d %.200s, want 405 from a remote repository", cell, r.Status, r.Body)
	case !read && o.on == npmS:
		if msg, isErr := testserver.NpmError(r.Body); !isErr || !strings.Contains(msg, "remote repository") {
			t.Errorf("%s: refusal %.200s is not npm's error naming the remote", cell, r.Body)
		}
	case read && o.on == npmS && r.Status != http.StatusOK:
		t.Errorf("%s: %d %.200s, want the upstream's content", cell, r.Status, r.Body)
	}
}
