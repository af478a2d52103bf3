// Package e2e drives the web UI in Debian's headless Chromium (chromedp)
// against a real server: the protocol routes, the GraphQL API and the
// embedded UI on one router, over a fresh PostgreSQL database.
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gocloud.dev/secrets/localsecrets"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/routes"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/protocol/maven"
	"github.com/artifact-registry/artifact-registry/protocol/npm"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	"github.com/artifact-registry/artifact-registry/upstream"
)

func TestMain(m *testing.M) { testdb.Main(m, stopChromium) }

const adminToken = "e2e-admin-token-0123456789"

// server is the registry as `serve` assembles it (without the River jobs,
// which the UI does not depend on), listening on a loopback port.
type server struct {
	URL   string // http://127.0.0.1:port
	Host  string // 127.0.0.1:port
	Store *store.Store
}

func newServer(t testing.TB) *server {
	t.Helper()
	st := testsupport.Store(t, testsupport.StoreOptions{})
	log := testsupport.Logger("E2E_SERVER_LOG")
	hs := httpserver.New(httpserver.Options{Logger: log})
	authn := auth.New(st, auth.Options{AdminToken: adminToken, Logger: log})
	// The keyring of upstream credentials, over a local root key.
	sk, err := localsecrets.NewRandomKey()
	if err != nil {
		t.Fatal(err)
	}
	keeper := localsecrets.NewKeeper(sk)
	t.Cleanup(func() { _ = keeper.Close() })
	keyring, err := credentials.New(st, credentials.Options{Root: &credentials.RootKey{URI: "base64key://sha256:e2e", Keeper: keeper}})
	if err != nil {
		t.Fatal(err)
	}
	// Every surface and the UI's catch-all, in serve's order.
	routes.Mount(hs.Router(), st, routes.Options{
		OCI:   oci.Options{Auth: authn, Logger: log, Remote: oci.RemoteOptions{Keyring: keyring, Upstream: upstream.Config{SpoolDir: t.TempDir()}}},
		Npm:   npm.Options{Auth: authn, Logger: log, Remote: npm.RemoteOptions{Keyring: keyring, Upstream: upstream.Config{SpoolDir: t.TempDir()}}},
		Maven: maven.Options{Auth: authn, Logger: log},
		Graph: graph.Options{Auth: authn, Logger: log, Keyring: keyring},
	})
	srv := httptest.NewServer(hs.Handler())
	t.Cleanup(srv.Close)
	return &server{URL: srv.URL, Host: strings.TrimPrefix(srv.URL, "http://"), Store: st}
}

// graphql runs one operation as the admin and fails the test on any error.
func (s *server) graphql(t testing.TB, query string, vars map[string]any) json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("graphql: %s: %v", resp.Status, err)
	}
	if len(out.Errors) > 0 {
		t.Fatalf("graphql: %s", out.Errors[0].Message)
	}
	return out.Data
}

// createRepositories creates hosted repositories name-0000 … in batches of
// aliased mutations (gqlgen runs them one after another).
func (s *server) createRepositories(t testing.TB, ns, prefix string, n int, format string) {
	t.Helper()
	const batch = 100
	for start := 0; start < n; start += batch {
		var q strings.Builder
		q.WriteString("mutation {")
		for i := start; i < min(start+batch, n); i++ {
			vis := "PRIVATE"
			if i%3 == 0 {
				vis = "PUBLIC"
			}
			fmt.Fprintf(&q, ` r%d: createRepository(input: {namespace: %q, name: "%s-%04d", format: %s, visibility: %s, description: "seeded repository %d"}) { repository { id } }`,
				i, ns, prefix, i, format, vis, i)
		}
		q.WriteString("}")
		s.graphql(t, q.String(), nil)
	}
}

// mergeCounters applies buffered counter deltas to a repository, as the
// periodic counter flush does (repository counters lag the pushes).
func (s *server) mergeCounters(t testing.TB, ns, repo string, d store.RepositoryCounterDelta) {
	t.Helper()
	var out struct {
		Repository struct {
			ID        string `json:"id"`
			Namespace struct {
				ID string `json:"id"`
			} `json:"namespace"`
		} `json:"repository"`
	}
	data := s.graphql(t, `query($ns: String!, $name: String!) { repository(namespace: $ns, name: $name) { id namespace { id } } }`,
		map[string]any{"ns": ns, "name": repo})
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	d.RepositoryID = uuid.MustParse(out.Repository.ID)
	if err := s.Store.MergeRepositoryCounters(context.Background(), uuid.MustParse(out.Repository.Namespace.ID), []store.RepositoryCounterDelta{d}); err != nil {
		t.Fatal(err)
	}
}

// ociDo sends one OCI request with the admin token.
func (s *server) ociDo(t testing.TB, method, path, contentType string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// pushBlob uploads a blob monolithically (POST ?digest=).
func (s *server) pushBlob(t testing.TB, name string, blob []byte) string {
	t.Helper()
	d := digestOf(blob)
	resp := s.ociDo(t, http.MethodPost, "/v2/"+name+"/blobs/uploads/?digest="+d, "application/octet-stream", blob)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("push blob %s: %s %s", d, resp.Status, b)
	}
	return d
}

// pushImage pushes a one-layer OCI image with the layer's bytes and tags
// it; it returns the manifest digest and the layer digest.
func (s *server) pushImage(t testing.TB, name, tag string, layer []byte) (manifest, layerDigest string) {
	t.Helper()
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["` + digestOf(layer) + `"]}}`)
	cd := s.pushBlob(t, name, config)
	ld := s.pushBlob(t, name, layer)
	m := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": len(config)},
		"layers":        []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": ld, "size": len(layer)}},
	}
	mb, _ := json.Marshal(m)
	resp := s.ociDo(t, http.MethodPut, "/v2/"+name+"/manifests/"+tag, "application/vnd.oci.image.manifest.v1+json", mb)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("push manifest %s:%s: %s %s", name, tag, resp.Status, b)
	}
	return digestOf(mb), ld
}

// tagManifest points another tag at an existing manifest.
func (s *server) tagManifest(t testing.TB, name, digest, tag string) {
	t.Helper()
	resp := s.ociDo(t, http.MethodGet, "/v2/"+name+"/manifests/"+digest, "", nil)
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("get manifest %s: %s", digest, resp.Status)
	}
	resp = s.ociDo(t, http.MethodPut, "/v2/"+name+"/manifests/"+tag, resp.Header.Get("Content-Type"), mb)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("tag %s as %s: %s", digest, tag, resp.Status)
	}
}
