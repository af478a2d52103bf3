package graph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const adminToken = "test-admin-token"

// stmtCounter is a pgx QueryTracer counting the statements sent to the
// server (queries, execs, and batch / copy are not used by the API).
type stmtCounter struct {
	n   atomic.Int64
	mu  sync.Mutex
	sql []string
}

func (c *stmtCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	c.mu.Lock()
	c.sql = append(c.sql, strings.Join(strings.Fields(d.SQL), " "))
	c.mu.Unlock()
	return ctx
}

func (c *stmtCounter) reset() {
	c.n.Store(0)
	c.mu.Lock()
	c.sql = nil
	c.mu.Unlock()
}

func (c *stmtCounter) statements() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sql...)
}

func (c *stmtCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// testAPI is the GraphQL handler on a fresh migrated database, served by
// an httptest server exactly as curl would reach it.
type testAPI struct {
	t     testing.TB
	srv   *httptest.Server
	pool  *pgxpool.Pool
	st    *store.Store
	stmts *stmtCounter
}

func newTestAPI(t testing.TB) *testAPI {
	t.Helper()
	return newTestAPIWith(t, Options{})
}

func newTestAPIWith(t testing.TB, opts Options) *testAPI {
	t.Helper()
	a := newStoreAPI(t, false)
	r := mux.NewRouter()
	if opts.Logger == nil {
		// Internal errors are logged (and only logged): show them.
		opts.Logger = testsupport.Errors()
	}
	if opts.Auth == nil {
		opts.Auth = auth.New(a.st, auth.Options{AdminToken: adminToken, Logger: opts.Logger})
	}
	Mount(r, a.st, opts)
	a.serve(r)
	return a
}

// newStoreAPI is a store on a fresh database whose statements are counted,
// with a file bucket when objects is set; serve starts its server.
func newStoreAPI(t testing.TB, objects bool) *testAPI {
	t.Helper()
	counter := &stmtCounter{}
	pool := testsupport.Pool(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = counter })
	var st *store.Store
	if objects {
		st = testsupport.Store(t, testsupport.StoreOptions{Pool: pool})
	} else {
		st = store.New(pool, nil, store.Options{})
	}
	return &testAPI{t: t, pool: pool, st: st, stmts: counter}
}

func (a *testAPI) serve(h http.Handler) {
	a.srv = httptest.NewServer(h)
	a.t.Cleanup(a.srv.Close)
}

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

type gqlResponse struct {
	Status int
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

func (r *gqlResponse) code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

// post sends a GraphQL request; token "" is anonymous.
func (a *testAPI) post(token, query string, vars map[string]any) *gqlResponse {
	a.t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return a.send(req)
}

func (a *testAPI) send(req *http.Request) *gqlResponse {
	a.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := &gqlResponse{Status: resp.StatusCode}
	if err := json.Unmarshal(raw, out); err != nil {
		a.t.Fatalf("response is not JSON (%d): %s", resp.StatusCode, raw)
	}
	return out
}

// admin runs a request as admin and fails the test on any error.
func (a *testAPI) admin(query string, vars map[string]any, into any) {
	a.t.Helper()
	r := a.post(adminToken, query, vars)
	if len(r.Errors) > 0 {
		a.t.Fatalf("unexpected errors: %+v", r.Errors)
	}
	if into != nil {
		if err := json.Unmarshal(r.Data, into); err != nil {
			a.t.Fatalf("decode %s: %v", r.Data, err)
		}
	}
}

// expectError runs a request and checks the first error's code.
func (a *testAPI) expectError(token, query string, vars map[string]any, code string) *gqlResponse {
	a.t.Helper()
	r := a.post(token, query, vars)
	if got := r.code(); got != code {
		a.t.Fatalf("want error %s, got %q: errors %+v data %s", code, got, r.Errors, r.Data)
	}
	return r
}

func (a *testAPI) createNamespace(slug string) uuid.UUID {
	a.t.Helper()
	var out struct {
		CreateNamespace struct{ Namespace struct{ ID uuid.UUID } }
	}
	a.admin(`mutation($s: String!) { createNamespace(input: {slug: $s}) { namespace { id slug } } }`,
		map[string]any{"s": slug}, &out)
	return out.CreateNamespace.Namespace.ID
}

func (a *testAPI) createRepository(ns, name, format, visibility string) uuid.UUID {
	a.t.Helper()
	var out struct {
		CreateRepository struct{ Repository struct{ ID uuid.UUID } }
	}
	a.admin(`mutation($ns: String!, $n: String!, $f: Format!, $v: Visibility!) {
		createRepository(input: {namespace: $ns, name: $n, format: $f, kind: HOSTED, visibility: $v}) { repository { id name } } }`,
		map[string]any{"ns": ns, "n": name, "f": format, "v": visibility}, &out)
	return out.CreateRepository.Repository.ID
}

// ---- fixtures: container artifacts ------------------------------------------
// The OCI push path lives in another package; these fixtures write the rows
// a push would leave (blob, attachment, image, manifest, tag) directly.

func (a *testAPI) exec(sql string, args ...any) {
	a.t.Helper()
	if _, err := a.pool.Exec(context.Background(), sql, args...); err != nil {
		a.t.Fatalf("fixture: %v", err)
	}
}

func newID(t testing.TB) uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func digestOf(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// addImage adds an image to a container repository (by repositories.id).
func (a *testAPI) addImage(nsID, repoID uuid.UUID, name string) uuid.UUID {
	a.t.Helper()
	id := newID(a.t)
	a.exec(`INSERT INTO container_images (id, namespace_id, container_repository_id, name)
		SELECT $1, $2, id, $4 FROM container_repositories WHERE namespace_id = $2 AND repository_id = $3`,
		id, nsID, repoID, name)
	return id
}

// addManifest adds a manifest (and its blob + attachment) to an image.
func (a *testAPI) addManifest(nsID, imageID uuid.UUID, content string, size int64) (uuid.UUID, []byte) {
	a.t.Helper()
	d := digestOf(content)
	a.exec(`INSERT INTO blob_storage_blobs (namespace_id, sha256, object_storage_key, size)
		VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, nsID, d, fmt.Sprintf("blobs/%x", d), size)
	var attID int64
	if err := a.pool.QueryRow(context.Background(), `INSERT INTO blob_storage_attachments (namespace_id, sha256)
		VALUES ($1, $2) RETURNING id`, nsID, d).Scan(&attID); err != nil {
		a.t.Fatal(err)
	}
	id := newID(a.t)
	a.exec(`INSERT INTO container_manifests (id, namespace_id, container_image_id, digest, media_type,
		blob_storage_attachment_id, blob_sha256, size)
		VALUES ($1, $2, $3, $4, 'application/vnd.oci.image.manifest.v1+json', $5, $4, $6)`,
		id, nsID, imageID, d, attID, size)
	return id, d
}

func (a *testAPI) addTag(nsID, imageID, manifestID uuid.UUID, name string) {
	a.t.Helper()
	a.exec(`INSERT INTO container_tags (id, namespace_id, container_image_id, container_manifest_id, name)
		VALUES ($1, $2, $3, $4, $5)`, newID(a.t), nsID, imageID, manifestID, name)
}

func (a *testAPI) addRelationship(nsID, imageID, parent, child uuid.UUID) {
	a.t.Helper()
	a.exec(`INSERT INTO container_manifest_relationships (id, namespace_id, container_image_id,
		parent_container_manifest_id, child_container_manifest_id) VALUES ($1, $2, $3, $4, $5)`,
		newID(a.t), nsID, imageID, parent, child)
}

func (a *testAPI) addLayer(nsID, imageID uuid.UUID, content string) {
	a.t.Helper()
	d := digestOf(content)
	a.exec(`INSERT INTO blob_storage_blobs (namespace_id, sha256, object_storage_key, size)
		VALUES ($1, $2, $3, 10) ON CONFLICT DO NOTHING`, nsID, d, fmt.Sprintf("blobs/%x", d))
	var attID int64
	if err := a.pool.QueryRow(context.Background(), `INSERT INTO blob_storage_attachments (namespace_id, sha256)
		VALUES ($1, $2) RETURNING id`, nsID, d).Scan(&attID); err != nil {
		a.t.Fatal(err)
	}
	a.exec(`INSERT INTO container_blobs (id, namespace_id, container_image_id, digest, media_type,
		blob_storage_attachment_id, blob_sha256)
		VALUES ($1, $2, $3, $4, 'application/vnd.oci.image.layer.v1.tar+gzip', $5, $4)`,
		newID(a.t), nsID, imageID, d, attID)
}

func mustJSON(t testing.TB, raw json.RawMessage, into any) {
	t.Helper()
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// with returns the API bound to another (sub)test for failures.
func (a *testAPI) with(t testing.TB) *testAPI {
	c := *a
	c.t = t
	return &c
}
