package maven

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// upstreamRepo is an independent Maven repository over HTTP: a directory
// tree served by http.FileServer (Last-Modified and If-Modified-Since,
// no ETag), counting the requests per path and status.
type upstreamRepo struct {
	root string
	srv  *httptest.Server

	mu     sync.Mutex
	counts map[string]int // "GET /path" -> requests
	status map[int]int
}

func newUpstreamRepo(t testing.TB, root string) *upstreamRepo {
	t.Helper()
	u := &upstreamRepo{root: root, counts: map[string]int{}, status: map[int]int{}}
	fs := http.FileServer(http.Dir(root))
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		fs.ServeHTTP(sw, r)
		u.mu.Lock()
		u.counts[r.Method+" "+r.URL.Path]++
		u.status[sw.status]++
		u.mu.Unlock()
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// count is the number of requests for a path ("" for all).
func (u *upstreamRepo) count(method, path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if path == "" {
		n := 0
		for _, c := range u.counts {
			n += c
		}
		return n
	}
	return u.counts[method+" "+path]
}

func (u *upstreamRepo) statuses(code int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.status[code]
}

// write puts a file into the upstream's tree.
func (u *upstreamRepo) write(t testing.TB, path string, body []byte) {
	t.Helper()
	p := filepath.Join(u.root, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// remote creates namespace ns (if needed) and a Maven proxy of upstream.
func (s *testServer) remote(t testing.TB, ns, name, upstream string, vis enum.Visibility, in mavenstore.RemoteInput) *store.Repository {
	t.Helper()
	if _, err := s.Store.NamespaceBySlug(context.Background(), ns); err != nil {
		testsupport.Namespace(t, s.Store, ns)
	}
	in.URL = upstream
	child, err := mavenstore.New(s.Store).NewRemote(in)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Store.CreateRepository(context.Background(), store.NewRepository{
		Namespace: ns, Name: name, Format: enum.FormatMaven, Kind: enum.KindRemote, Visibility: vis, Child: child,
	})
	if err != nil {
		t.Fatalf("create remote %s/%s: %v", ns, name, err)
	}
	return r
}

// proxySettings writes a settings.xml that mirrors every repository to
// the proxy at url, with password as the Basic password.
func proxySettings(t testing.TB, dir, url, password string) string {
	t.Helper()
	p := filepath.Join(dir, "settings-proxy.xml")
	body := `<?xml version="1.0" encoding="UTF-8"?>
<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror><id>proxy</id><mirrorOf>*</mirrorOf><url>` + url + `</url></mirror>
  </mirrors>
  <servers>
    <server><id>proxy</id><username>reader</username><password>` + password + `</password></server>
  </servers>
</settings>
`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func intp(v int) *int { return &v }

func has(s, sub string) bool { return strings.Contains(s, sub) }
