package accesscontrol

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

const failureLimit = 3

// limitedServer is every surface (OCI, npm, Maven, GraphQL, /metrics) over
// one Authenticator with a failure limit, served in process so that each
// request can come from its own client address.
func limitedServer(t *testing.T) http.Handler {
	t.Helper()
	s := testserver.New(t, testserver.Options{FailureLimit: failureLimit})
	s.Server.Registry().MustRegister(s.Auth.Collectors()...)
	for name, f := range map[string]enum.Format{"npmrepo": enum.FormatNpm, "mvnrepo": enum.FormatMaven, "images": enum.FormatOCI} {
		s.Repo(name, f, enum.VisibilityPrivate)
	}
	return s.Server.Handler()
}

type surface struct {
	name         string
	method, path string
	body         func(secret string) string
	// header puts the secret in the request ("" when it travels in the body).
	header func(secret string) string
	// rightStatus is the status of the right credential.
	rightStatus int
	// check validates the 429 body in the protocol's own format.
	check func(t *testing.T, body string)
}

func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
}

var surfaces = []surface{
	{name: "OCI", method: http.MethodGet, path: "/v2/acme/images/app/tags/list", header: basic, rightStatus: http.StatusNotFound,
		check: func(t *testing.T, body string) {
			var b struct {
				Errors []struct{ Code, Message string }
			}
			decode(t, body, &b)
			if len(b.Errors) != 1 || b.Errors[0].Code != "TOOMANYREQUESTS" {
				t.Errorf("OCI error body %s", body)
			}
		}},
	{name: "OCI token endpoint", method: http.MethodGet, path: "/v2/token?service=artifact-registry", header: basic, rightStatus: http.StatusOK,
		check: func(t *testing.T, body string) {
			if !strings.Contains(body, `"code":"TOOMANYREQUESTS"`) {
				t.Errorf("token endpoint body %s", body)
			}
		}},
	{name: "npm", method: http.MethodGet, path: "/npm/acme/npmrepo/-/whoami", header: bearer, rightStatus: http.StatusOK,
		check: func(t *testing.T, body string) {
			var b struct{ Error string }
			decode(t, body, &b)
			if !strings.Contains(b.Error, "too many failed authentications") {
				t.Errorf("npm error body %s", body)
			}
		}},
	{name: "npm login", method: http.MethodPut, path: "/npm/acme/npmrepo/-/user/org.couchdb.user:ci",
		body:        func(s string) string { return `{"name":"ci","password":"` + s + `"}` },
		rightStatus: http.StatusCreated,
		check: func(t *testing.T, body string) {
			var b struct{ Error string }
			decode(t, body, &b)
			if b.Error == "" {
				t.Errorf("npm login error body %s", body)
			}
		}},
	{name: "UI sign-in", method: http.MethodPost, path: auth.SessionPath,
		body:        func(s string) string { return `{"token":"` + s + `"}` },
		rightStatus: http.StatusCreated,
		check: func(t *testing.T, body string) {
			var b struct{ Code string }
			decode(t, body, &b)
			if b.Code != auth.CodeRateLimited {
				t.Errorf("sign-in error body %s", body)
			}
		}},
	{name: "Maven", method: http.MethodGet, path: "/maven/acme/mvnrepo/org/example/lib/1.0/lib-1.0.pom", header: basic, rightStatus: http.StatusNotFound,
		check: func(*testing.T, string) {}},
	{name: "GraphQL", method: http.MethodPost, path: "/graphql", header: bearer, rightStatus: http.StatusOK,
		body: func(string) string { return `{"query":"{ __typename }"}` },
		check: func(t *testing.T, body string) {
			var b struct {
				Errors []struct {
					Message    string
					Extensions struct{ Code string }
				}
			}
			decode(t, body, &b)
			if len(b.Errors) != 1 || b.Errors[0].Extensions.Code != auth.CodeRateLimited {
				t.Errorf("GraphQL error body %s", body)
			}
		}},
}

func (s surface) send(h http.Handler, addr, secret string) *httptest.ResponseRecorder {
	var body io.Reader
	if s.body != nil {
		body = strings.NewReader(s.body(secret))
	}
	r := httptest.NewRequest(s.method, s.path, body)
	r.RemoteAddr = addr
	if s.header != nil {
		r.Header.Set("Authorization", s.header(secret))
	}
	if s.body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestFailedAuthenticationRateLimit: on every surface, repeated wrong
// tokens from one address end in 429 with Retry-After in the protocol's
// own error format, the right token from that address is refused too
// while the limit holds, the right token from another address works, and
// the metrics count both.
func TestFailedAuthenticationRateLimit(t *testing.T) {
	t.Parallel()
	h := limitedServer(t)
	const wrong = "wrong-token-wrong-token-wrong-token"
	for i, s := range surfaces {
		attacker := "198.51.100." + string(rune('1'+i)) + ":40000"
		for n := range failureLimit {
			if w := s.send(h, attacker, wrong); w.Code != http.StatusUnauthorized {
				t.Fatalf("%s: wrong token %d: %d %s", s.name, n+1, w.Code, w.Body)
			}
		}
		for _, secret := range []string{wrong, adminToken} {
			w := s.send(h, attacker, secret)
			if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
				t.Fatalf("%s: after %d failures: %d Retry-After %q %s", s.name, failureLimit, w.Code, w.Header().Get("Retry-After"), w.Body)
			}
			s.check(t, w.Body.String())
		}
		if w := s.send(h, "203.0.113.1:1", adminToken); w.Code != s.rightStatus {
			t.Fatalf("%s: the right token from another address: %d %s", s.name, w.Code, w.Body)
		}
	}

	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	metrics := w.Body.String()
	for _, want := range []string{
		"artifact_registry_auth_rate_limited_total 14", // two per surface
		`artifact_registry_auth_failures_total{reason="unknown_token"} 21`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(metrics, "artifact_registry_auth_"))
		}
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
