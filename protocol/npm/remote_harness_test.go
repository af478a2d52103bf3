package npm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// fakeRegistry is an independent upstream shaped like the public npm
// registry: packuments at /<name> (scoped: /@scope%2fname), with ETag
// and If-None-Match, dist.tarball at /<name>/-/<base>-<version>.tgz on
// its own host, and /-/v1/search. It is not this server.
type fakeRegistry struct {
	t   testing.TB
	srv *httptest.Server
	url string

	mu       sync.Mutex
	pkgs     map[string]*fakePackage
	requests []string
	// corrupt names tarball files served with a flipped byte.
	corrupt map[string]bool
	// down makes every request fail at the connection level.
	down atomic.Bool
}

type fakePackage struct {
	versions map[string]fakeVersion
	latest   string
}

type fakeVersion struct {
	manifest map[string]any
	tgz      []byte
}

func newFakeRegistry(t testing.TB) *fakeRegistry {
	f := &fakeRegistry{t: t, pkgs: map[string]*fakePackage{}, corrupt: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.url = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

// publish adds a version (deps: name -> range) and makes it latest.
func (f *fakeRegistry) publish(name, version string, deps map[string]string, extra map[string]any) {
	pj := map[string]any{"name": name, "version": version, "description": "upstream " + name, "main": "index.js", "license": "MIT"}
	if len(deps) > 0 {
		pj["dependencies"] = deps
	}
	for k, v := range extra {
		pj[k] = v
	}
	tgz := npmpack.Tarball(f.t, pj, nil)
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pkgs[name]
	if p == nil {
		p = &fakePackage{versions: map[string]fakeVersion{}}
		f.pkgs[name] = p
	}
	p.versions[version] = fakeVersion{manifest: pj, tgz: tgz}
	p.latest = version
}

// unpublish removes a version upstream.
func (f *fakeRegistry) unpublish(name, version string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pkgs[name].versions, version)
}

func (f *fakeRegistry) takeRequests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.requests
	f.requests = nil
	return out
}

func (f *fakeRegistry) countRequests(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func baseOf(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func (f *fakeRegistry) packument(name string) []byte {
	p := f.pkgs[name]
	versions := map[string]any{}
	times := map[string]string{"created": "2020-01-01T00:00:00.000Z", "modified": "2024-01-01T00:00:00.000Z"}
	for v, fv := range p.versions {
		m := map[string]any{}
		for k, x := range fv.manifest {
			m[k] = x
		}
		integrity, shasum := integrityOf(fv.tgz)
		m["_id"] = name + "@" + v
		m["dist"] = map[string]any{"integrity": integrity, "shasum": shasum,
			"tarball": f.url + "/" + name + "/-/" + baseOf(name) + "-" + v + ".tgz"}
		versions[v] = m
		times[v] = "2023-01-01T00:00:00.000Z"
	}
	doc := map[string]any{"_id": name, "_rev": "3-abc", "name": name, "dist-tags": map[string]string{"latest": p.latest},
		"versions": versions, "time": times, "readme": "# " + name, "maintainers": []any{map[string]string{"name": "up"}}}
	b, _ := json.Marshal(doc)
	return b
}

func (f *fakeRegistry) serve(w http.ResponseWriter, r *http.Request) {
	if f.down.Load() {
		if hj, ok := w.(http.Hijacker); ok {
			c, _, _ := hj.Hijack()
			c.Close()
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
	p := r.URL.EscapedPath()
	if p == "/-/v1/search" {
		text := r.URL.Query().Get("text")
		var objs []any
		for name, pkg := range f.pkgs {
			if strings.Contains(name, text) {
				objs = append(objs, map[string]any{"package": map[string]any{"name": name, "version": pkg.latest}})
			}
		}
		b, _ := json.Marshal(map[string]any{"objects": objs, "total": len(objs), "time": "now"})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return
	}
	if name, file, ok := strings.Cut(strings.TrimPrefix(p, "/"), "/-/"); ok {
		name, _ = url.PathUnescape(name)
		pkg := f.pkgs[name]
		if pkg != nil {
			for v, fv := range pkg.versions {
				if file == baseOf(name)+"-"+v+".tgz" {
					body := fv.tgz
					if f.corrupt[file] {
						body = append([]byte(nil), body...)
						body[len(body)/2] ^= 0xff
					}
					w.Header().Set("Content-Type", "application/octet-stream")
					w.Header().Set("Content-Length", fmt.Sprint(len(body)))
					_, _ = w.Write(body)
					return
				}
			}
		}
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		return
	}
	name, err := url.PathUnescape(strings.TrimPrefix(p, "/"))
	if err != nil || f.pkgs[name] == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"Not found"}`))
		return
	}
	body := f.packument(name)
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// stop closes the upstream for good (refused connections).
func (f *fakeRegistry) stop() {
	f.srv.CloseClientConnections()
	f.srv.Listener.Close()
	// Make sure the port refuses.
	if c, err := net.DialTimeout("tcp", f.srv.Listener.Addr().String(), time.Second); err == nil {
		c.Close()
	}
}

// addRemote creates the npm remote repository acme/<name> of upstream u
// (public, metadata validity hours as given).
func (e *env) addRemote(t testing.TB, name, upstreamURL string, metadataHours int) *npmstore.Repository {
	t.Helper()
	w, err := e.npm.NewRemote(nil, npmstore.RemoteInput{URL: upstreamURL, MetadataCacheValidityHours: &metadataHours})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: "acme", Name: name, Format: enum.FormatNpm,
		Kind: enum.KindRemote, Visibility: enum.VisibilityPublic, Child: w}); err != nil {
		t.Fatal(err)
	}
	repo, err := e.npm.ResolveRegistry(e.ctx, "acme", name)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

func readAllErr(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func storeRef(repo string) store.RepositoryRef {
	return store.RepositoryRef{Namespace: "acme", Name: repo}
}
