package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/auth"

	"github.com/artifact-registry/artifact-registry/graph"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
)

// TestDatabaseDownAnswers503 points a whole server at a port where no
// database listens: every surface must answer 503 with Retry-After in its
// own format, for anonymous callers and for tokens (whose lookup needs the
// database too), never a 500.
func TestDatabaseDownAnswers503(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	pool, err := pgxpool.New(context.Background(), fmt.Sprintf("postgres://registry@127.0.0.1:%d/registry?connect_timeout=2", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	e := testserver.New(t, testserver.Options{Pool: pool})
	// A well-formed secret: only the database can say whether it exists.
	token, err := auth.NewSecret(uuid.Must(uuid.NewV7()))
	if err != nil {
		t.Fatal(err)
	}

	gqlDoc, _ := json.Marshal(map[string]string{"query": `{repository(namespace:"acme",name:"r"){id}}`})
	for _, c := range []struct {
		name, method, path, authz string
		body                      []byte
		format                    string
	}{
		{"OCI manifest, anonymous", http.MethodGet, "/v2/acme/r/img/manifests/v1", "", nil, "oci"},
		{"OCI manifest, token", http.MethodGet, "/v2/acme/r/img/manifests/v1", testserver.Basic(token), nil, "oci"},
		{"OCI upload, super-user", http.MethodPost, "/v2/acme/r/img/blobs/uploads/", testserver.Basic(testserver.AdminToken), nil, "oci"},
		{"OCI catalog, token", http.MethodGet, "/v2/_catalog", testserver.Basic(token), nil, "oci"},
		{"OCI token endpoint", http.MethodGet, "/v2/token?service=artifact-registry&scope=repository:acme/r/img:pull", testserver.Basic(token), nil, "oci"},
		{"npm packument, anonymous", http.MethodGet, "/npm/acme/r/pkg", "", nil, "npm"},
		{"npm packument, token", http.MethodGet, "/npm/acme/r/pkg", testserver.Bearer(token), nil, "npm"},
		{"npm whoami, token", http.MethodGet, "/npm/acme/r/-/whoami", testserver.Bearer(token), nil, "npm"},
		{"Maven pom, anonymous", http.MethodGet, testserver.MavenPom("r", "1.0"), "", nil, "maven"},
		{"Maven deploy, super-user", http.MethodPut, testserver.MavenPom("r", "1.0"), testserver.Basic(testserver.AdminToken), testserver.Pom("1.0"), "maven"},
		{"GraphQL, anonymous", http.MethodPost, "/graphql", "", gqlDoc, "graphql"},
		{"GraphQL, token", http.MethodPost, "/graphql", testserver.Bearer(token), gqlDoc, "graphql"},
		{"GraphQL, super-user", http.MethodPost, "/graphql", testserver.Bearer(testserver.AdminToken), gqlDoc, "graphql"},
	} {
		r := e.Do(c.method, c.path, c.authz, c.body, "Content-Type", "application/json")
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d Retry-After %q %s, want 503 with Retry-After", c.name, r.Status, r.Header.Get("Retry-After"), r.Body)
			continue
		}
		switch c.format {
		case "oci":
			if code := testserver.OCIError(r.Body); code != "UNAVAILABLE" {
				t.Errorf("%s: body %s, want an OCI UNAVAILABLE error", c.name, r.Body)
			}
		case "npm":
			if _, ok := testserver.NpmError(r.Body); !ok {
				t.Errorf("%s: body %s, want npm's {\"error\"}", c.name, r.Body)
			}
		case "graphql":
			var res gqlResult
			if json.Unmarshal([]byte(r.Body), &res) != nil || len(res.Errors) == 0 || res.Errors[0].Extensions.Code != graph.CodeUnavailable {
				t.Errorf("%s: body %s, want a GraphQL error with code %s", c.name, r.Body, graph.CodeUnavailable)
			}
		}
		if strings.Contains(r.Body, "127.0.0.1") || strings.Contains(r.Body, "dial") {
			t.Errorf("%s: the error body leaks connection details: %s", c.name, r.Body)
		}
	}
}
