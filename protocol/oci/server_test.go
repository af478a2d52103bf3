package oci

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const testToken = "test-admin-token"

// testServer is a real registry over a fresh database and a file bucket,
// listening on a loopback port.
type testServer struct {
	URL   string // http://127.0.0.1:port
	Host  string // 127.0.0.1:port
	Store *store.Store
	Authn *auth.Authenticator
	srv   *httptest.Server
}

type serverOpts struct {
	mem   bool // mem:// bucket instead of file://
	store store.Options
}

func newTestServer(t testing.TB, so ...serverOpts) *testServer {
	t.Helper()
	var o serverOpts
	if len(so) > 0 {
		o = so[0]
	}
	st := testsupport.Store(t, testsupport.StoreOptions{Mem: o.mem, Store: o.store})
	log := testsupport.Logger("OCI_TEST_LOG")
	hs := httpserver.New(httpserver.Options{Logger: log})
	authn := auth.New(st, auth.Options{AdminToken: testToken, Logger: log})
	Mount(hs.Router(), st, Options{Auth: authn, Logger: log})
	srv := httptest.NewServer(hs.Handler())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return &testServer{URL: srv.URL, Host: u.Host, Store: st, Authn: authn, srv: srv}
}

// token mints an access token of namespace ns (which must exist) as the
// super-user and returns its secret.
func (s *testServer) token(t testing.TB, ns, name string, scopes ...enum.TokenScope) string {
	t.Helper()
	ctx := context.Background()
	n, err := s.Store.NamespaceBySlug(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := s.Authn.CreateToken(ctx, auth.AdminPrincipal(""), auth.NamespaceOf(n), auth.TokenSpec{Name: name, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// repo creates a namespace (if needed) and a hosted container repository.
// Plain SQL fixture rows (the management API creates the same rows with
// its collections and statistics; the OCI surface needs only these).
func (s *testServer) repo(t testing.TB, ns, name string, format enum.Format, vis enum.Visibility) {
	t.Helper()
	ctx := context.Background()
	pool := s.Store.Pool()
	nsID := uuid.Must(uuid.NewV7())
	if err := pool.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
			VALUES ($1, $2, 'test', 'namespace', $2, 'test', $2)
			ON CONFLICT DO NOTHING RETURNING id)
		SELECT id FROM ins UNION ALL SELECT id FROM namespaces WHERE slug = $2`, nsID, ns).Scan(&nsID); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
	repoID, crID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	if _, err := pool.Exec(ctx, `
		WITH r AS (
			INSERT INTO repositories (id, namespace_id, name, format, kind, visibility)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id)
		INSERT INTO container_repositories (id, namespace_id, repository_id) SELECT $7, $2, id FROM r`,
		repoID, nsID, name, int16(format), int16(enum.KindHosted), int16(vis), crID); err != nil {
		t.Fatalf("create repository %s/%s: %v", ns, name, err)
	}
}

// do sends a request with the admin token unless auth is false.
func (s *testServer) do(t testing.TB, method, path string, body io.Reader, hdr map[string]string, auth bool) *http.Response {
	t.Helper()
	u := path
	if !strings.HasPrefix(path, "http") {
		u = s.URL + path
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if auth {
		req.SetBasicAuth("anyone", testToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readBody(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
