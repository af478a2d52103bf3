package blobredirect_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// env is a whole server over an S3 bucket with redirects on.
type env struct {
	*testserver.Env
	// s3Host is the host:port signed URLs must point at.
	s3Host string
	logs   *syncBuffer
}

// syncBuffer is a log sink the server's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newEnv starts an S3 server and a registry storing in it, reached as
// "localhost" while the registry is 127.0.0.1: two hosts, as in a real
// deployment, so that clients do not send the registry's credentials to
// the object store.
func newEnv(t *testing.T) *env {
	t.Helper()
	srv := ocitools.StartS3(t, "redirect")
	port := srv.Endpoint[strings.LastIndex(srv.Endpoint, ":")+1:]
	bucketURL, _ := srv.NewBucket(t, "http://localhost:"+port)
	objs, err := objstore.Open(context.Background(), bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = objs.Close() })
	if err := objs.CanSign(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := testserver.New(t, testserver.Options{Objects: objs, RedirectDownloads: true, Logger: log})
	return &env{Env: e, s3Host: "localhost:" + port, logs: logs}
}

// noFollow is a client that shows redirects instead of following them.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

type response struct {
	status int
	header http.Header
	body   []byte
}

func send(t *testing.T, c *http.Client, method, u, authorization string, hdr ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// redirected checks that a GET of path answers a signed redirect to the
// S3 server, follows it (without credentials) and checks the object
// store's answer: the bytes and the headers the signature forces.
func (e *env) redirected(t *testing.T, path, authorization string, want []byte, contentType, filename string) {
	t.Helper()
	r := send(t, noFollow, http.MethodGet, e.URL+path, authorization)
	if r.status != http.StatusTemporaryRedirect {
		t.Fatalf("GET %s: %d %s, want 307", path, r.status, r.body)
	}
	loc, err := url.Parse(r.header.Get("Location"))
	if err != nil || loc.Host != e.s3Host {
		t.Fatalf("GET %s: Location %q, want a URL of %s", path, r.header.Get("Location"), e.s3Host)
	}
	if cc := r.header.Get("Cache-Control"); !strings.Contains(cc, "no-store") || !strings.Contains(cc, "private") {
		t.Errorf("GET %s: redirect Cache-Control %q, want no-store, private", path, cc)
	}
	if len(r.body) != 0 || r.header.Get("ETag") != "" || r.header.Get("Content-Type") != "" {
		t.Errorf("GET %s: redirect carries a body or body headers: %q %v", path, r.body, r.header)
	}
	got := send(t, http.DefaultClient, http.MethodGet, loc.String(), "")
	if got.status != http.StatusOK || !bytes.Equal(got.body, want) {
		t.Fatalf("signed GET of %s: %d %q, want 200 %q", path, got.status, got.body, want)
	}
	if ct := got.header.Get("Content-Type"); ct != contentType {
		t.Errorf("signed GET of %s: Content-Type %q, want %q", path, ct, contentType)
	}
	if cd := got.header.Get("Content-Disposition"); cd != httpsafe.Disposition(filename) || !strings.HasPrefix(cd, "attachment") {
		t.Errorf("signed GET of %s: Content-Disposition %q, want attachment naming %s", path, cd, filename)
	}
	// A range is redirected too, and the object store serves it.
	rr := send(t, noFollow, http.MethodGet, e.URL+path, authorization, "Range", "bytes=1-3")
	if rr.status != http.StatusTemporaryRedirect {
		t.Fatalf("ranged GET %s: %d, want 307", path, rr.status)
	}
	part := send(t, http.DefaultClient, http.MethodGet, rr.header.Get("Location"), "", "Range", "bytes=1-3")
	if part.status != http.StatusPartialContent || !bytes.Equal(part.body, want[1:4]) {
		t.Errorf("signed ranged GET of %s: %d %q, want 206 %q", path, part.status, part.body, want[1:4])
	}
	// HEAD stays here.
	if h := send(t, noFollow, http.MethodHead, e.URL+path, authorization); h.status != http.StatusOK || h.header.Get("Location") != "" {
		t.Errorf("HEAD %s: %d Location %q, want 200 and none", path, h.status, h.header.Get("Location"))
	}
}

// refused checks that callers without read access get 401 or 404 and no
// Location.
func (e *env) refused(t *testing.T, path string, callers map[string]string) {
	t.Helper()
	for name, authorization := range callers {
		r := send(t, noFollow, http.MethodGet, e.URL+path, authorization)
		if (r.status != http.StatusUnauthorized && r.status != http.StatusNotFound && r.status != http.StatusForbidden) || r.header.Get("Location") != "" {
			t.Errorf("%s: GET %s: %d Location %q, want 401/403/404 and none", name, path, r.status, r.header.Get("Location"))
		}
	}
}

// downloads waits for the repository's buffered downloads_count deltas to
// reach want (they are written off the request path).
func (e *env) downloads(t *testing.T, repoID string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := e.Store.Pool().QueryRow(e.Ctx, `SELECT COALESCE(sum(delta), 0) FROM counter_deltas
			WHERE target = $1 AND field = $2 AND target_id = $3`,
			int16(enum.CounterTargetRepository), int16(enum.CounterFieldDownloadsCount), repoID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
		if n > want || time.Now().After(deadline) {
			t.Fatalf("downloads_count of the repository: %d, want %d", n, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A document a browser would render: it must come back as a download.
var page = []byte("<!doctype html><html><body><script>alert(document.domain)</script></body></html>")

func TestRedirectedDownloads(t *testing.T) {
	e := newEnv(t)
	other, _ := e.Mint(testserver.Other, "other", auth.TokenSpec{Scopes: []enum.TokenScope{enum.TokenScopeAdmin}})
	admin := testserver.Basic(testserver.AdminToken)
	strangers := map[string]string{"anonymous": "", "garbage": testserver.Basic("arp_not-a-token"), "other namespace": testserver.Basic(other)}

	t.Run("oci", func(t *testing.T) {
		e.Repo("oci", enum.FormatOCI, enum.VisibilityPrivate)
		e.PushImage("acme/oci/img", "v1")
		d := testserver.SHA(page)
		if r := e.Do(http.MethodPost, "/v2/acme/oci/img/blobs/uploads/?digest="+d, admin, page); r.Status != http.StatusCreated {
			t.Fatalf("push blob: %d %s", r.Status, r.Body)
		}
		path := "/v2/acme/oci/img/blobs/" + d
		e.redirected(t, path, admin, page, "application/octet-stream", d)
		e.refused(t, path, strangers)
		// A revalidation is answered here.
		if r := send(t, noFollow, http.MethodGet, e.URL+path, admin, "If-None-Match", `"`+d+`"`); r.status != http.StatusNotModified {
			t.Errorf("conditional GET: %d, want 304", r.status)
		}
		// The client verifies the digest: what it follows to is the blob.
		r := send(t, http.DefaultClient, http.MethodGet, e.URL+path, admin)
		if r.status != http.StatusOK || testserver.SHA(r.body) != d {
			t.Errorf("followed GET: %d, digest %s, want %s", r.status, testserver.SHA(r.body), d)
		}
	})

	t.Run("npm", func(t *testing.T) {
		repo := e.Repo("npm", enum.FormatNpm, enum.VisibilityPrivate)
		e.NpmPublish("npm", "pkg", "1.0.0")
		path := "/npm/acme/npm/pkg/-/pkg-1.0.0.tgz"
		local := send(t, http.DefaultClient, http.MethodGet, e.URL+path, admin)
		if local.status != http.StatusOK {
			t.Fatalf("GET tarball: %d", local.status)
		}
		// Counted: the streamed GET, the redirected one and the ranged
		// one (a tarball GET is whole here, npm has no ranges); not the
		// HEAD.
		e.redirected(t, path, testserver.Bearer(testserver.AdminToken), local.body, "application/octet-stream", "pkg-1.0.0.tgz")
		e.refused(t, path, map[string]string{"anonymous": "", "other namespace": testserver.Bearer(other)})
		e.downloads(t, repo.ID.String(), 3)
	})

	t.Run("maven", func(t *testing.T) {
		repo := e.Repo("mvn", enum.FormatMaven, enum.VisibilityPrivate)
		jar := append([]byte("PK\x03\x04"), page...)
		path := "/maven/acme/mvn/com/example/lib/1.0/lib-1.0.jar"
		if r := e.Do(http.MethodPut, path, admin, jar); r.Status != http.StatusCreated {
			t.Fatalf("deploy jar: %d %s", r.Status, r.Body)
		}
		// The whole GET is a download; the ranged one and the HEAD are not.
		e.redirected(t, path, admin, jar, "application/java-archive", "lib-1.0.jar")
		e.refused(t, path, strangers)
		e.downloads(t, repo.ID.String(), 1)
	})

	if logs := e.logs.String(); strings.Contains(logs, "X-Amz-Signature") || strings.Contains(logs, "X-Amz-Credential") {
		t.Errorf("the server logged a signed URL:\n%s", logs)
	}
}

// A pull-through cache streams a blob it is filling from its upstream and
// redirects the GETs of the cached blob after that.
func TestRedirectedRemoteCache(t *testing.T) {
	e := newEnv(t)
	up := testserver.New(t, testserver.Options{})
	up.Repo("up", enum.FormatOCI, enum.VisibilityPublic)
	admin := testserver.Basic(testserver.AdminToken)
	d := testserver.SHA(page)
	if r := up.Do(http.MethodPost, "/v2/acme/up/img/blobs/uploads/?digest="+d, admin, page); r.Status != http.StatusCreated {
		t.Fatalf("push upstream: %d %s", r.Status, r.Body)
	}
	e.Remote("cache", up.URL, enum.VisibilityPrivate)
	path := "/v2/acme/cache/acme/up/img/blobs/" + d
	fill := send(t, noFollow, http.MethodGet, e.URL+path, admin)
	if fill.status != http.StatusOK || !bytes.Equal(fill.body, page) {
		t.Fatalf("GET during the fill: %d %q, want the bytes streamed", fill.status, fill.body)
	}
	// The fill commits the cached blob once its digest is verified, which
	// may be just after the client has the last byte.
	sum := sha256.Sum256(page)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := e.Store.StatBlob(e.Ctx, e.NS[testserver.Home].ID, sum); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the fill cached nothing: %v", err)
		}
	}
	e.redirected(t, path, admin, page, "application/octet-stream", d)
	e.refused(t, path, map[string]string{"anonymous": ""})
}

// An npm pull-through cache streams the tarball it is filling and
// redirects the GETs of the cached tarball after that.
func TestRedirectedNpmRemoteCache(t *testing.T) {
	e := newEnv(t)
	up := testserver.New(t, testserver.Options{})
	up.Repo("js", enum.FormatNpm, enum.VisibilityPublic)
	up.NpmPublish("js", "pkg", "1.0.0")
	want := up.Do(http.MethodGet, "/npm/acme/js/pkg/-/pkg-1.0.0.tgz", "", nil)
	if want.Status != http.StatusOK {
		t.Fatalf("upstream tarball: %d", want.Status)
	}
	e.NpmRemote("cache", up.URL+"/npm/acme/js/", enum.VisibilityPrivate)
	admin := testserver.Bearer(testserver.AdminToken)
	if r := send(t, noFollow, http.MethodGet, e.URL+"/npm/acme/cache/pkg", admin); r.status != http.StatusOK {
		t.Fatalf("packument through the cache: %d %s", r.status, r.body)
	}
	path := "/npm/acme/cache/pkg/-/pkg-1.0.0.tgz"
	fill := send(t, noFollow, http.MethodGet, e.URL+path, admin)
	if fill.status != http.StatusOK || string(fill.body) != want.Body {
		t.Fatalf("GET during the fill: %d, want the bytes streamed", fill.status)
	}
	// The fill commits once the bytes are verified, which may be just
	// after the client has the last one: until then GETs stream.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := send(t, noFollow, http.MethodGet, e.URL+path, admin)
		if r.status == http.StatusTemporaryRedirect {
			break
		}
		if r.status != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("GET of the cached tarball: %d, want 307 once cached", r.status)
		}
	}
	e.redirected(t, path, admin, []byte(want.Body), "application/octet-stream", "pkg-1.0.0.tgz")
	e.refused(t, path, map[string]string{"anonymous": ""})
}
