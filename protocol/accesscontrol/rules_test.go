package accesscontrol

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

func scopes(s ...enum.TokenScope) []enum.TokenScope { return s }

// TestUnknownNamesAreHidden: a name that does not exist answers like a
// private repository to those who could not read one, and 404 only to
// the admin and unrestricted tokens of its namespace.
func TestUnknownNamesAreHidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	read, _ := e.mint("acme", "read", auth.TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	other, _ := e.mint("other", "other", auth.TokenSpec{Scopes: scopes(enum.TokenScopeAdmin)})
	for _, tc := range []struct {
		who, secret string
		want        int
	}{{"anonymous", "", 401}, {"other namespace", other, 403}, {"read token", read, 404}, {"admin", adminToken, 404}} {
		for _, ns := range []string{"acme", "nobody"} {
			want := tc.want
			if ns == "nobody" && tc.secret == read {
				want = 403 // not its namespace: it may not know
			}
			b, bb := "", ""
			if tc.secret != "" {
				b, bb = basic(tc.secret), bearer(tc.secret)
			}
			r := e.do(http.MethodGet, "/v2/"+ns+"/missing/img/manifests/v1", b, nil)
			wantCode := map[int]string{401: "UNAUTHORIZED", 403: "DENIED", 404: "NAME_UNKNOWN"}[want]
			if r.status != want || ociError(r.body) != wantCode {
				t.Errorf("OCI %s %s: %d %s, want %d %s", tc.who, ns, r.status, r.body, want, wantCode)
			}
			r = e.do(http.MethodGet, "/npm/"+ns+"/missing/pkg", bb, nil)
			if _, ok := npmError(r.body); r.status != want || !ok {
				t.Errorf("npm %s %s: %d %s, want %d", tc.who, ns, r.status, r.body, want)
			}
			r = e.do(http.MethodGet, "/maven/"+ns+"/missing/com/example/lib/1.0/lib-1.0.pom", b, nil)
			if r.status != want {
				t.Errorf("Maven %s %s: %d %s, want %d", tc.who, ns, r.status, r.body, want)
			}
		}
	}
}

// TestNamespaceConditions: the serving predicate (docs/schema.md "Status
// columns and serving") on every protocol.
// Suspended: reads work, writes are 403 saying so; blocked and disabled:
// nothing is served, even to the admin; the namespace's own tokens get
// nothing anywhere while it is blocked.
func TestNamespaceConditions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.repo("img", enum.FormatOCI, enum.VisibilityPublic)
	e.repo("js", enum.FormatNpm, enum.VisibilityPublic)
	e.repo("jar", enum.FormatMaven, enum.VisibilityPublic)
	e.pushImage("acme/img/app", "v1")
	e.npmPublish("js", "pkg", "1.0.0")
	e.mavenDeploy("jar", "1.0")
	write, _ := e.mint("acme", "write", auth.TokenSpec{Scopes: scopes(enum.TokenScopeWrite)})

	type probe struct {
		proto, method, path, authz string
		body                       []byte
	}
	reads := []probe{
		{"OCI", http.MethodGet, "/v2/acme/img/app/manifests/v1", basic(write), nil},
		{"npm", http.MethodGet, "/npm/acme/js/pkg", bearer(write), nil},
		{"Maven", http.MethodGet, mavenPom("jar", "1.0"), basic(write), nil},
	}
	writes := []probe{
		{"OCI", http.MethodPost, "/v2/acme/img/app/blobs/uploads/", basic(write), nil},
		{"npm", http.MethodPut, "/npm/acme/js/-/package/pkg/dist-tags/next", bearer(write), []byte(`"1.0.0"`)},
		{"Maven", http.MethodPut, mavenPom("jar", "9.0"), basic(write), pom("9.0")},
	}
	check := func(condition string, p probe, want int, says string) {
		t.Helper()
		r := e.do(p.method, p.path, p.authz, p.body, "Content-Type", "application/json")
		if r.status != want || (says != "" && !strings.Contains(r.body, says)) {
			t.Errorf("%s, %s %s %s: %d %s, want %d saying %q", condition, p.proto, p.method, p.path, r.status, r.body, want, says)
		}
		if want == 403 && p.proto == "OCI" && ociError(r.body) != "DENIED" {
			t.Errorf("%s, OCI: %s, want DENIED", condition, r.body)
		}
		if want == 403 && p.proto == "npm" {
			if _, ok := npmError(r.body); !ok {
				t.Errorf("%s, npm: %s, want {\"error\"}", condition, r.body)
			}
		}
	}
	set := func(col string) {
		t.Helper()
		if _, err := e.st.Pool().Exec(e.ctx, `UPDATE namespaces SET suspended_at = NULL, blocked_at = NULL, disabled_at = NULL WHERE slug = 'acme'`); err != nil {
			t.Fatal(err)
		}
		if col != "" {
			if _, err := e.st.Pool().Exec(e.ctx, `UPDATE namespaces SET `+col+` = now() WHERE slug = 'acme'`); err != nil {
				t.Fatal(err)
			}
		}
		e.authn.Forget(e.ns["acme"].ID, uuidOf(t, e, "write")) // token rows carry their namespace's state
	}

	set("suspended_at")
	for _, p := range reads {
		check("suspended", p, 200, "")
	}
	for _, p := range writes {
		check("suspended", p, 403, "suspended")
	}
	for _, col := range []string{"blocked_at", "disabled_at"} {
		set(col)
		word := strings.TrimSuffix(col, "_at")
		for _, p := range append(reads, writes...) {
			check(word, p, 403, word)
			admin := p
			admin.authz = basic(adminToken)
			if p.proto == "npm" {
				admin.authz = bearer(adminToken)
			}
			check(word+" (admin)", admin, 403, word)
		}
	}
	set("")
	for _, p := range append(reads, writes[:2]...) {
		check("restored", p, map[string]int{http.MethodGet: 200, http.MethodPost: 202, http.MethodPut: 201}[p.method], "")
	}
}

func uuidOf(t *testing.T, e *env, name string) [16]byte {
	t.Helper()
	var id [16]byte
	if err := e.st.Pool().QueryRow(e.ctx, `SELECT id FROM access_tokens WHERE name = $1`, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestOCITokenFlow: the challenge's realm issues bearer tokens for the
// requested scope; a bearer token works only for what it was issued for
// (401 insufficient_scope otherwise), and a revoked access token stops its
// bearer tokens too.
func TestOCITokenFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.repo("priv", enum.FormatOCI, enum.VisibilityPrivate)
	e.repo("pub", enum.FormatOCI, enum.VisibilityPublic)
	e.pushImage("acme/priv/app", "v1")
	e.pushImage("acme/pub/app", "v1")
	read, tok := e.mint("acme", "read", auth.TokenSpec{Scopes: scopes(enum.TokenScopeRead)})

	r := e.do(http.MethodGet, "/v2/acme/priv/app/manifests/v1", "", nil)
	realm, service, scope := parseChallenge(t, r.header.Get("WWW-Authenticate"))
	if realm != e.url+"/v2/token" || service != "artifact-registry" || scope != "repository:acme/priv/app:pull" {
		t.Fatalf("challenge %q", r.header.Get("WWW-Authenticate"))
	}
	token := func(authz string, scope ...string) string {
		t.Helper()
		q := url.Values{"service": {service}, "scope": scope}
		r := e.do(http.MethodGet, "/v2/token?"+q.Encode(), authz, nil)
		var body struct{ Token string }
		if r.status != 200 || json.Unmarshal([]byte(r.body), &body) != nil || body.Token == "" {
			t.Fatalf("token endpoint: %d %s", r.status, r.body)
		}
		return body.Token
	}
	pullToken := token(basic(read), "repository:acme/priv/app:pull,push")
	if r := e.do(http.MethodGet, "/v2/acme/priv/app/manifests/v1", bearer(pullToken), nil); r.status != 200 {
		t.Fatalf("pull with a bearer token: %d %s", r.status, r.body)
	}
	// push was requested but a READ token is not granted it: 403 (the
	// permission is missing, a new token would not help).
	if r := e.do(http.MethodPost, "/v2/acme/priv/app/blobs/uploads/", bearer(pullToken), nil); r.status != 403 || ociError(r.body) != "DENIED" {
		t.Fatalf("push with a pull-only bearer token: %d %s", r.status, r.body)
	}
	// Another repository was not in the token: 401 insufficient_scope.
	r = e.do(http.MethodGet, "/v2/acme/pub/app/manifests/v1", bearer(pullToken), nil)
	if r.status != 401 || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Fatalf("bearer token used outside its scope: %d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
	}
	// Anonymous tokens pull public repositories only.
	anon := token("", "repository:acme/pub/app:pull", "repository:acme/priv/app:pull")
	if r := e.do(http.MethodGet, "/v2/acme/pub/app/manifests/v1", bearer(anon), nil); r.status != 200 {
		t.Fatalf("anonymous bearer pull of a public image: %d %s", r.status, r.body)
	}
	if r := e.do(http.MethodGet, "/v2/acme/priv/app/manifests/v1", bearer(anon), nil); r.status != 401 {
		t.Fatalf("anonymous bearer pull of a private image: %d %s", r.status, r.body)
	}
	// Bad credentials at the token endpoint: 401 with a Basic challenge.
	if r := e.do(http.MethodGet, "/v2/token?scope=repository:acme/priv/app:pull", basic("arp_wrong"), nil); r.status != 401 ||
		r.header.Get("WWW-Authenticate") != auth.BasicChallenge {
		t.Fatalf("token endpoint with a bad password: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	// Revoking the access token stops its bearer tokens at once here.
	if _, err := e.authn.RevokeToken(e.ctx, auth.AdminPrincipal(""), auth.NamespaceOf(e.ns["acme"]), tok.ID); err != nil {
		t.Fatal(err)
	}
	if r := e.do(http.MethodGet, "/v2/acme/priv/app/manifests/v1", bearer(pullToken), nil); r.status != 401 || ociError(r.body) != "UNAUTHORIZED" {
		t.Fatalf("bearer token of a revoked access token: %d %s", r.status, r.body)
	}
}

func parseChallenge(t *testing.T, h string) (realm, service, scope string) {
	t.Helper()
	rest, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		t.Fatalf("not a Bearer challenge: %q", h)
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		v = strings.Trim(v, `"`)
		switch k {
		case "realm":
			realm = v
		case "service":
			service = v
		case "scope":
			scope = v
		}
	}
	return realm, service, scope
}

// TestCatalogIsFiltered: /v2/_catalog lists what the caller may pull.
func TestCatalogIsFiltered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, v := range enum.VisibilityValues() {
		name := strings.ToLower(v.String())
		e.repo(name, enum.FormatOCI, v)
		e.pushImage("acme/"+name+"/app", "v1")
	}
	read, _ := e.mint("acme", "read", auth.TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	other, _ := e.mint("other", "other", auth.TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	only, _ := e.mint("acme", "only", auth.TokenSpec{Scopes: scopes(enum.TokenScopeRead), Repositories: []string{"private"}})
	for _, tc := range []struct{ who, authz, want string }{
		{"anonymous", "", "acme/public/app"},
		{"admin", basic(adminToken), "acme/internal/app acme/private/app acme/public/app"},
		{"read", basic(read), "acme/internal/app acme/private/app acme/public/app"},
		{"other namespace", basic(other), "acme/internal/app acme/public/app"},
		{"restricted", basic(only), "acme/private/app acme/public/app"},
	} {
		r := e.do(http.MethodGet, "/v2/_catalog", tc.authz, nil)
		var body struct{ Repositories []string }
		if r.status != 200 || json.Unmarshal([]byte(r.body), &body) != nil {
			t.Fatalf("catalog as %s: %d %s", tc.who, r.status, r.body)
		}
		if got := strings.Join(body.Repositories, " "); got != tc.want {
			t.Errorf("catalog as %s: %q, want %q", tc.who, got, tc.want)
		}
	}
	if r := e.do(http.MethodGet, "/v2/_catalog", basic("arp_bad"), nil); r.status != 401 {
		t.Errorf("catalog with a bad token: %d", r.status)
	}
}

// TestUploadBoundToRepository: an upload session started in one
// repository cannot be continued under another's URL, even by a caller
// who may write to both.
func TestUploadBoundToRepository(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.repo("a", enum.FormatOCI, enum.VisibilityPrivate)
	e.repo("b", enum.FormatOCI, enum.VisibilityPrivate)
	write, _ := e.mint("acme", "write", auth.TokenSpec{Scopes: scopes(enum.TokenScopeWrite)})
	r := e.do(http.MethodPost, "/v2/acme/a/app/blobs/uploads/", basic(write), nil)
	loc := r.header.Get("Location")
	if r.status != 202 || loc == "" {
		t.Fatalf("start upload: %d %s", r.status, r.body)
	}
	i := strings.LastIndex(loc, "/")
	id := loc[i+1:]
	if j := strings.IndexByte(id, '?'); j >= 0 {
		id = id[:j]
	}
	blob := []byte("bound")
	r = e.do(http.MethodPut, "/v2/acme/b/app/blobs/uploads/"+id+"?digest="+sha(blob), basic(write), blob)
	if r.status != 404 || ociError(r.body) != "BLOB_UPLOAD_UNKNOWN" {
		t.Fatalf("upload continued under another repository: %d %s", r.status, r.body)
	}
	r = e.do(http.MethodPut, "/v2/acme/a/app/blobs/uploads/"+id+"?digest="+sha(blob), basic(write), blob)
	if r.status != 201 {
		t.Fatalf("upload under its own repository: %d %s", r.status, r.body)
	}
}
