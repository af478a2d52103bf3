package accesscontrol

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/protocol/maven"
	"github.com/artifact-registry/artifact-registry/protocol/npm"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const adminToken = "access-matrix-admin-token"

// clock moves only when told to; the store and the authenticator share it
// so a token can be created valid and then expire.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// env is one server with the three protocol surfaces over one
// Authenticator, a real database and a file bucket.
type env struct {
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	authn *auth.Authenticator
	clock *clock
	url   string
	ns    map[string]*store.Namespace
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	objs, err := objstore.Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	c := &clock{now: time.Now().UTC()}
	st := store.New(testdb.New(t), objs, store.Options{Clock: c})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	authn := auth.New(st, auth.Options{AdminToken: adminToken, Clock: c, Logger: log})
	hs := httpserver.New(httpserver.Options{Logger: log})
	r := hs.Router()
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	oci.Mount(r, st, oci.Options{Auth: authn, Logger: log})
	npm.Mount(r, st, npm.Options{Auth: authn, PublicURL: base, Logger: log})
	maven.Mount(r, st, maven.Options{Auth: authn, Logger: log})
	srv.Config.Handler = hs.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	e := &env{t: t, ctx: ctx, st: st, authn: authn, clock: c, url: base, ns: map[string]*store.Namespace{}}
	for _, slug := range []string{"acme", "other"} {
		ns, err := st.CreateNamespace(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		e.ns[slug] = ns
	}
	return e
}

// repo creates a hosted repository of acme.
func (e *env) repo(name string, f enum.Format, v enum.Visibility) *store.Repository {
	e.t.Helper()
	r, err := e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: "acme", Name: name, Format: f, Kind: enum.KindHosted, Visibility: v})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// mint creates an access token as the super-user.
func (e *env) mint(ns, name string, spec auth.TokenSpec) (string, *store.AccessToken) {
	e.t.Helper()
	spec.Name = name
	tok, secret, err := e.authn.CreateToken(e.ctx, auth.AdminPrincipal(""), auth.NamespaceOf(e.ns[ns]), spec)
	if err != nil {
		e.t.Fatalf("mint %s: %v", name, err)
	}
	return secret, tok
}

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   string
}

// do sends a request; authorization is the whole header value ("" none).
func (e *env) do(method, path, authorization string, body []byte, hdr ...string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(b)}
}

func basic(secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("ci:"+secret))
}

func bearer(secret string) string { return "Bearer " + secret }

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// pushImage pushes a one-config, no-layer OCI image as the admin.
func (e *env) pushImage(name, tag string) {
	e.t.Helper()
	cfg := []byte(`{"architecture":"amd64","os":"linux"}`)
	if r := e.do(http.MethodPost, "/v2/"+name+"/blobs/uploads/?digest="+sha(cfg), basic(adminToken), cfg); r.status != http.StatusCreated {
		e.t.Fatalf("push config of %s: %d %s", name, r.status, r.body)
	}
	man, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha(cfg), "size": len(cfg)},
		"layers": []any{},
	})
	if r := e.do(http.MethodPut, "/v2/"+name+"/manifests/"+tag, basic(adminToken), man,
		"Content-Type", "application/vnd.oci.image.manifest.v1+json"); r.status != http.StatusCreated {
		e.t.Fatalf("push manifest of %s: %d %s", name, r.status, r.body)
	}
}

// npmPublish publishes name@version to an npm registry as the admin.
func (e *env) npmPublish(repo, name, version string) {
	e.t.Helper()
	reg := "/npm/acme/" + repo + "/"
	if r := e.do(http.MethodPut, reg+name, bearer(adminToken), npmPublishBody(e.t, e.url+reg, name, version)); r.status != http.StatusCreated {
		e.t.Fatalf("npm publish %s: %d %s", name, r.status, r.body)
	}
}

func npmPublishBody(t *testing.T, registry, name, version string) []byte {
	pj, _ := json.Marshal(map[string]string{"name": name, "version": version, "license": "MIT"})
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(pj)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(pj)
	_ = tw.Close()
	_ = gz.Close()
	tgz := buf.Bytes()
	s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	file := name + "-" + version + ".tgz"
	doc, _ := json.Marshal(map[string]any{
		"_id": name, "name": name, "dist-tags": map[string]string{"latest": version},
		"versions": map[string]any{version: map[string]any{
			"name": name, "version": version, "license": "MIT", "_id": name + "@" + version,
			"dist": map[string]string{
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
				"shasum":    hex.EncodeToString(s1[:]),
				"tarball":   registry + name + "/-/" + file,
			},
		}},
		"_attachments": map[string]any{file: map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(tgz), "length": len(tgz),
		}},
	})
	return doc
}

// mavenDeploy PUTs a pom as the admin.
func (e *env) mavenDeploy(repo, version string) {
	e.t.Helper()
	if r := e.do(http.MethodPut, mavenPom(repo, version), basic(adminToken), pom(version)); r.status != http.StatusCreated {
		e.t.Fatalf("maven deploy %s: %d %s", repo, r.status, r.body)
	}
}

func mavenPom(repo, version string) string {
	return fmt.Sprintf("/maven/acme/%s/com/example/lib/%s/lib-%s.pom", repo, version, version)
}

func pom(version string) []byte {
	return []byte(`<project><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>lib</artifactId><version>` +
		version + `</version></project>`)
}

// ociError is the code of an OCI error body ("" if none).
func ociError(body string) string {
	var doc struct {
		Errors []struct{ Code string } `json:"errors"`
	}
	if json.Unmarshal([]byte(body), &doc) != nil || len(doc.Errors) == 0 {
		return ""
	}
	return doc.Errors[0].Code
}

// npmError is the message of an npm {"error": ...} body; ok false when the
// body is not that shape.
func npmError(body string) (string, bool) {
	var doc map[string]any
	if json.Unmarshal([]byte(body), &doc) != nil {
		return "", false
	}
	s, ok := doc["error"].(string)
	return s, ok && strings.TrimSpace(s) != ""
}
