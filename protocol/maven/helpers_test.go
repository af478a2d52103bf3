package maven

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/countbuf"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const testToken = "test-admin-token"

// testServer is a real registry (database, file bucket, HTTP on a loopback
// port) with the Maven surface mounted.
type testServer struct {
	URL   string
	Store *store.Store
	Authn *auth.Authenticator
	srv   *httptest.Server
	// counts holds what downloads and proxy answers counted until its
	// next write: tests that read counter_deltas Flush it first.
	counts *countbuf.Buffer[mavenstore.Count]
}

type serverOpts struct {
	// rootRouter mounts on the production root router (internal/httpserver,
	// which cleans paths with a 301) instead of the standalone Handler.
	rootRouter bool
	maven      Options
	// stats, when set, records every request's server-side duration.
	stats *reqStats
	store store.Options
}

// reqStats records server-side request times (benchmarks attribute a
// client's wall time to the server and to itself).
type reqStats struct {
	mu        sync.Mutex
	durations []time.Duration
}

func (r *reqStats) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		h.ServeHTTP(w, req)
		d := time.Since(start)
		r.mu.Lock()
		r.durations = append(r.durations, d)
		r.mu.Unlock()
	})
}

// reset returns the times recorded since the last reset.
func (r *reqStats) reset() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.durations
	r.durations = nil
	return d
}

func newTestServer(t testing.TB, so ...serverOpts) *testServer {
	t.Helper()
	var o serverOpts
	if len(so) > 0 {
		o = so[0]
	}
	st := testsupport.Store(t, testsupport.StoreOptions{Store: o.store})
	log := testsupport.Logger("MAVEN_TEST_LOG")
	mo := o.maven
	mo.Logger = log
	if mo.Auth == nil {
		mo.Auth = auth.New(st, auth.Options{AdminToken: testToken, Logger: log})
	}
	var (
		h  http.Handler
		mh *handler
	)
	if o.rootRouter {
		hs := httpserver.New(httpserver.Options{Logger: log})
		mh = mount(hs.Router(), st, mo)
		h = hs.Handler()
	} else {
		r := mux.NewRouter().SkipClean(true)
		mh = mount(r, st, mo)
		h = r
	}
	if o.stats != nil {
		h = o.stats.wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{URL: srv.URL, Store: st, Authn: mo.Auth, srv: srv, counts: mh.counts}
}

// token mints an access token of namespace ns as the super-user and
// returns its secret.
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

// repo creates a namespace (if needed) and a hosted repository.
func (s *testServer) repo(t testing.TB, ns, name string, format enum.Format, vis enum.Visibility) {
	t.Helper()
	if _, err := s.Store.NamespaceBySlug(context.Background(), ns); err != nil {
		testsupport.Namespace(t, s.Store, ns)
	}
	testsupport.Repository(t, s.Store, ns, name, format, vis)
}

type result struct {
	status int
	header http.Header
	body   string
}

// do sends a request (admin Basic auth unless auth is false) and reads the
// whole response.
func (s *testServer) do(t testing.TB, method, path string, body []byte, auth bool, hdr ...string) result {
	t.Helper()
	u := path
	if !strings.HasPrefix(path, "http") {
		u = s.URL + path
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if auth {
		req.SetBasicAuth("deployer", testToken)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (s *testServer) put(t testing.TB, path string, body []byte, want int) result {
	t.Helper()
	r := s.do(t, http.MethodPut, path, body, true)
	if r.status != want {
		t.Fatalf("PUT %s: %d %q, want %d", path, r.status, r.body, want)
	}
	return r
}

func (s *testServer) get(t testing.TB, path string, want int) result {
	t.Helper()
	r := s.do(t, http.MethodGet, path, nil, true)
	if r.status != want {
		t.Fatalf("GET %s: %d %q, want %d", path, r.status, r.body, want)
	}
	return r
}

// deployFile PUTs a file and its .sha1 and .md5, as mvn does.
func (s *testServer) deployFile(t testing.TB, path string, body []byte) {
	t.Helper()
	s.put(t, path, body, http.StatusCreated)
	s.put(t, path+".sha1", []byte(hexSum("sha1", body)), http.StatusOK)
	s.put(t, path+".md5", []byte(hexSum("md5", body)), http.StatusOK)
}

func hexSum(alg string, b []byte) string {
	switch alg {
	case "md5":
		s := md5.Sum(b)
		return hex.EncodeToString(s[:])
	case "sha1":
		s := sha1.Sum(b)
		return hex.EncodeToString(s[:])
	case "sha256":
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	case "sha512":
		s := sha512.Sum512(b)
		return hex.EncodeToString(s[:])
	}
	panic(alg)
}

// checkInvariants asserts the blob-protocol invariants for Maven rows:
// every active or trashed maven_files row owns exactly one attachment
// (same digest), no attachment is left without its row, no upload session
// is left behind, and each version's size_bytes is the sum of its files.
func (s *testServer) checkInvariants(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	var n int64
	q := func(sql string) int64 {
		t.Helper()
		if err := s.Store.Pool().QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return n
	}
	for _, table := range []string{"maven_files", "maven_remote_files"} {
		if c := q(`SELECT count(*) FROM ` + table + ` f LEFT JOIN blob_storage_attachments a
		ON a.namespace_id = f.namespace_id AND a.id = f.blob_storage_attachment_id AND a.sha256 = f.blob_sha256
		WHERE a.id IS NULL`); c != 0 {
			t.Errorf("%d %s rows without their attachment", c, table)
		}
	}
	if c := q(`SELECT (SELECT count(*) FROM blob_storage_attachments) - (SELECT count(*) FROM maven_files)
		- (SELECT count(*) FROM maven_remote_files)`); c != 0 {
		t.Errorf("%d attachments more than maven_files and maven_remote_files rows", c)
	}
	// Joins, not correlated subqueries: a subquery per version joining two
	// partitioned tables is planned over every partition and took seconds.
	if c := q(`SELECT count(*) FROM maven_remote_versions v LEFT JOIN (
		SELECT f.namespace_id, f.maven_remote_version_id, sum(f.size) AS size FROM maven_remote_files f
		WHERE f.soft_deleted_at IS NULL GROUP BY 1, 2) s
		ON s.namespace_id = v.namespace_id AND s.maven_remote_version_id = v.id
		WHERE v.size_bytes <> COALESCE(s.size, 0)`); c != 0 {
		t.Errorf("%d cached versions whose size_bytes is not the sum of their files", c)
	}
	if c := q(`SELECT count(*) FROM maven_remote_files f JOIN blob_storage_blobs b
		ON b.namespace_id = f.namespace_id AND b.sha256 = f.blob_sha256 WHERE b.size <> f.size`); c != 0 {
		t.Errorf("%d cached files whose size is not their blob's", c)
	}
	if c := q(`SELECT count(*) FROM upload_sessions`); c != 0 {
		t.Errorf("%d upload sessions left behind", c)
	}
	if c := q(`SELECT count(*) FROM maven_versions v LEFT JOIN (
		SELECT f.namespace_id, f.maven_version_id, sum(b.size) AS size FROM maven_files f
		JOIN blob_storage_blobs b ON b.namespace_id = f.namespace_id AND b.sha256 = f.blob_sha256
		WHERE f.soft_deleted_at IS NULL GROUP BY 1, 2) s
		ON s.namespace_id = v.namespace_id AND s.maven_version_id = v.id
		WHERE v.size_bytes <> COALESCE(s.size, 0)`); c != 0 {
		t.Errorf("%d versions whose size_bytes is not the sum of their files", c)
	}
	// Buffered counters (recorded by the accounting triggers): the deltas
	// add up to what the rows say. Repository sizes count each digest
	// once per repository.
	if c := q(`SELECT COALESCE((SELECT sum(delta) FROM counter_deltas WHERE target = 0 AND field = 2), 0) -
		COALESCE((SELECT sum(b.size) FROM (SELECT DISTINCT p.maven_repository_id, f.blob_sha256, f.namespace_id FROM maven_files f
			JOIN maven_packages p ON p.namespace_id = f.namespace_id AND p.id = f.maven_package_id
			UNION SELECT DISTINCT p.maven_remote_repository_id, f.blob_sha256, f.namespace_id FROM maven_remote_files f
			JOIN maven_remote_packages p ON p.namespace_id = f.namespace_id AND p.id = f.maven_remote_package_id) d
			JOIN blob_storage_blobs b ON b.namespace_id = d.namespace_id AND b.sha256 = d.blob_sha256), 0)`); c != 0 {
		t.Errorf("repository size_bytes deltas differ from the stored files by %d bytes", c)
	}
	if c := q(`SELECT COALESCE((SELECT sum(delta) FROM counter_deltas WHERE target = 0 AND field = 0), 0) - (SELECT count(*) FROM maven_versions)
		- (SELECT count(*) FROM maven_remote_versions)`); c != 0 {
		t.Errorf("artifacts_count deltas differ from the versions by %d", c)
	}
	if c := q(`SELECT COALESCE((SELECT sum(delta) FROM counter_deltas WHERE target = 1 AND field = 6), 0) - (SELECT count(*) FROM maven_versions)
		- (SELECT count(*) FROM maven_remote_versions)`); c != 0 {
		t.Errorf("components_count deltas differ from the versions by %d", c)
	}
	if c := q(`SELECT COALESCE((SELECT sum(delta) FROM counter_deltas WHERE target = 1 AND field = 5), 0) -
		COALESCE((SELECT sum(size) FROM blob_storage_blobs), 0)`); c != 0 {
		t.Errorf("deduplicated_size_bytes deltas differ from the blob rows by %d bytes", c)
	}
	if c := q(`SELECT count(*) FROM blob_storage_blobs b WHERE NOT EXISTS (
		SELECT 1 FROM blob_storage_attachments a WHERE a.namespace_id = b.namespace_id AND a.sha256 = b.sha256)
		AND NOT EXISTS (SELECT 1 FROM gc_blob_review_queue g WHERE g.namespace_id = b.namespace_id AND g.sha256 = b.sha256)`); c != 0 {
		t.Logf("%d blob rows with neither an attachment nor a GC candidate (committed but never attached)", c)
	}
}

func (s *testServer) count(t testing.TB, sql string) int64 {
	t.Helper()
	var n int64
	if err := s.Store.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
