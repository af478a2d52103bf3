package maven

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store/enum"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

const libPath = "/com/example/lib/1.0/lib-1.0.jar"

// remoteEnv is a proxy acme/central of a counting upstream tree.
type remoteEnv struct {
	s  *testServer
	up *upstreamRepo
}

func newRemoteEnv(t *testing.T, in mavenstore.RemoteInput) *remoteEnv {
	t.Helper()
	up := newUpstreamRepo(t, t.TempDir())
	s := newTestServer(t, serverOpts{rootRouter: true})
	s.remote(t, "acme", "central", up.srv.URL, enum.VisibilityPublic, in)
	t.Cleanup(func() { s.checkInvariants(t) })
	return &remoteEnv{s: s, up: up}
}

func (e *remoteEnv) get(t *testing.T, path string, want int) result {
	t.Helper()
	return e.s.get(t, "/maven/acme/central"+path, want)
}

func TestRemoteServesAndComputesChecksums(t *testing.T) {
	e := newRemoteEnv(t, mavenRemoteDefaults())
	jar := []byte("jar bytes of lib 1.0")
	e.up.write(t, libPath, jar)
	e.up.write(t, libPath+".sha1", []byte(hexSum("sha1", jar)+"  lib-1.0.jar\n")) // the "hash  name" form
	if got := e.get(t, libPath, http.StatusOK); got.body != string(jar) || got.header.Get("X-Checksum-Sha1") != hexSum("sha1", jar) {
		t.Fatalf("GET: %q %v", got.body, got.header)
	}
	// Every sidecar is ours, computed from the bytes; .md5, .sha256 and
	// .sha512 do not exist upstream at all.
	for _, alg := range []string{"sha1", "md5", "sha256", "sha512"} {
		if got := e.get(t, libPath+"."+alg, http.StatusOK).body; got != hexSum(alg, jar) {
			t.Errorf("%s sidecar %q", alg, got)
		}
	}
	// A release file is immutable: cached, it is never asked again, even
	// after the upstream changed it.
	e.up.write(t, libPath, []byte("other bytes"))
	if got := e.get(t, libPath, http.StatusOK); got.body != string(jar) {
		t.Fatal("a cached release changed")
	}
	if n := e.up.count("GET", libPath); n != 1 {
		t.Fatalf("the jar was fetched %d times upstream", n)
	}
	// HEAD of an uncached file caches it and answers its length.
	pom := []byte("<project/>")
	e.up.write(t, "/com/example/lib/1.0/lib-1.0.pom", pom)
	r := e.s.do(t, http.MethodHead, "/maven/acme/central/com/example/lib/1.0/lib-1.0.pom", nil, true)
	if r.status != http.StatusOK || r.header.Get("Content-Length") != "10" || r.body != "" {
		t.Fatalf("HEAD: %d %v %q", r.status, r.header, r.body)
	}
	// The cached content counts in the repository and the namespace: the
	// reconciliation, which recomputes from the rows, finds no drift.
	ns, err := e.s.Store.NamespaceBySlug(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.s.Store.ReconcileNamespaceCounters(context.Background(), ns.ID, 0)
	if err != nil || len(rec.Drifts) != 0 {
		t.Fatalf("reconciliation: %+v %v", rec, err)
	}
}

// The upstream's .sha1 must match the bytes: a mismatch answers 502 with
// a clear message and caches nothing.
func TestRemoteRefusesWrongUpstreamSHA1(t *testing.T) {
	e := newRemoteEnv(t, mavenRemoteDefaults())
	jar := []byte("jar bytes of lib 1.0")
	e.up.write(t, libPath, jar)
	e.up.write(t, libPath+".sha1", []byte(strings.Repeat("de", 20)))
	for range 2 {
		r := e.s.do(t, http.MethodGet, "/maven/acme/central"+libPath, nil, true)
		if r.status != http.StatusBadGateway || !has(r.body, "not what it claims") || !has(r.body, "sha1") || has(r.body, e.up.srv.URL) {
			t.Fatalf("GET with a wrong upstream sha1: %d %q", r.status, r.body)
		}
		if r := e.s.do(t, http.MethodGet, "/maven/acme/central"+libPath+".sha1", nil, true); r.status != http.StatusBadGateway {
			t.Fatalf("its sidecar: %d %q", r.status, r.body)
		}
	}
	if n := e.s.count(t, `SELECT count(*) FROM maven_remote_files`); n != 0 {
		t.Fatalf("%d files cached", n)
	}
	// Fixed upstream: the file is cached.
	e.up.write(t, libPath+".sha1", []byte(hexSum("sha1", jar)))
	e.get(t, libPath, http.StatusOK)

	// A file larger than the wait limit streams; a wrong one is cut off
	// (the client never gets a clean end) and not cached.
	big := make([]byte, waitLimit+1<<20)
	_, _ = rand.Read(big)
	const bigPath = "/com/example/big/1.0/big-1.0.jar"
	e.up.write(t, bigPath, big)
	e.up.write(t, bigPath+".sha1", []byte(strings.Repeat("ab", 20)))
	resp, err := http.Get(e.s.URL + "/maven/acme/central" + bigPath)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a wrong large file was delivered whole")
	}
	if n := e.s.count(t, `SELECT count(*) FROM maven_remote_files WHERE file_name = 'big-1.0.jar'`); n != 0 {
		t.Fatal("a wrong large file was cached")
	}
	e.up.write(t, bigPath+".sha1", []byte(hexSum("sha1", big)))
	if got := e.get(t, bigPath, http.StatusOK); got.body != string(big) {
		t.Fatal("large file differs")
	}
}

// Repeated misses reach the upstream once per negative-cache period; an
// invalidation forgets them; a negative cache of 0 minutes remembers
// nothing.
func TestRemoteNegativeCache(t *testing.T) {
	e := newRemoteEnv(t, mavenRemoteDefaults())
	missing := "/com/example/lib/9.9/lib-9.9.jar"
	for range 5 {
		if r := e.get(t, missing, http.StatusNotFound); !has(r.body, "not found in the upstream") {
			t.Fatalf("404 body %q", r.body)
		}
	}
	if n := e.up.count("GET", missing); n != 1 {
		t.Fatalf("5 misses reached the upstream %d times", n)
	}
	// The path appears upstream; the proxy still remembers the 404 until
	// an administrator invalidates the proxy.
	e.up.write(t, missing, []byte("late"))
	e.get(t, missing, http.StatusNotFound)
	ctx := context.Background()
	ns, _ := e.s.Store.NamespaceBySlug(ctx, "acme")
	repo := repositoryID(t, e.s, "acme", "central")
	if _, err := mavenstore.New(e.s.Store).InvalidateRemoteMetadata(ctx, ns.ID, repo, "", ""); err != nil {
		t.Fatal(err)
	}
	if got := e.get(t, missing, http.StatusOK).body; got != "late" {
		t.Fatalf("after invalidation: %q", got)
	}

	off := newRemoteEnv(t, mavenstore.RemoteInput{NegativeCacheMinutes: intp(0)})
	for range 3 {
		off.get(t, missing, http.StatusNotFound)
	}
	if n := off.up.count("GET", missing); n != 3 {
		t.Fatalf("without a negative cache, 3 misses reached the upstream %d times", n)
	}
}

// maven-metadata.xml is revalidated after the metadata validity (0 here:
// every request) with If-Modified-Since; a 304 keeps the cached copy, a
// change replaces it, and an unreachable upstream gets the cached copy
// with a Warning.
func TestRemoteMetadataRevalidation(t *testing.T) {
	e := newRemoteEnv(t, mavenstore.RemoteInput{MetadataCacheValidityHours: intp(0)})
	const md = "/com/example/lib/maven-metadata.xml"
	v1 := []byte("<metadata><versioning><versions><version>1.0</version></versions></versioning></metadata>")
	e.up.write(t, md, v1)
	if got := e.get(t, md, http.StatusOK).body; got != string(v1) {
		t.Fatalf("first GET %q", got)
	}
	e.get(t, md, http.StatusOK)
	if n := e.up.statuses(http.StatusNotModified); n != 1 {
		t.Fatalf("%d upstream 304s, want 1 (the second GET revalidates)", n)
	}
	time.Sleep(1100 * time.Millisecond) // Last-Modified has a one-second grain
	v2 := []byte("<metadata><versioning><versions><version>1.0</version><version>1.1</version></versions></versioning></metadata>")
	e.up.write(t, md, v2)
	if got := e.get(t, md, http.StatusOK).body; got != string(v2) {
		t.Fatalf("after the upstream change %q", got)
	}
	if got := e.get(t, md+".sha1", http.StatusOK).body; got != hexSum("sha1", v2) {
		t.Fatal("the metadata checksum is not the new document's")
	}
	if n := e.s.count(t, `SELECT count(*) FROM maven_remote_files`); n != 1 {
		t.Fatalf("%d cached files, want the replaced document only", n)
	}
	e.up.srv.Close()
	r := e.get(t, md, http.StatusOK)
	if r.body != string(v2) || !has(r.header.Get("Warning"), "110") {
		t.Fatalf("stale metadata: %q %v", r.body, r.header)
	}
	// Nothing cached and the upstream down: 502, never 500.
	if r := e.s.do(t, http.MethodGet, "/maven/acme/central/com/example/other/1.0/other-1.0.jar", nil, true); r.status != http.StatusBadGateway && r.status != http.StatusServiceUnavailable {
		t.Fatalf("uncached with the upstream down: %d %q", r.status, r.body)
	}
}

// Deploys through a proxy are refused with 405 and a reason, once
// authorized (anonymous: 401); bad paths get 400.
func TestRemoteRefusesDeploysAndBadInput(t *testing.T) {
	e := newRemoteEnv(t, mavenRemoteDefaults())
	r := e.s.do(t, http.MethodPut, "/maven/acme/central"+libPath, []byte("x"), false)
	if r.status != http.StatusUnauthorized {
		t.Fatalf("anonymous PUT: %d", r.status)
	}
	r = e.s.do(t, http.MethodPut, "/maven/acme/central"+libPath, []byte("x"), true)
	if r.status != http.StatusMethodNotAllowed || !has(r.body, "remote (proxy) repository") || r.header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("PUT: %d %q %v", r.status, r.body, r.header)
	}
	if r := e.s.do(t, http.MethodDelete, "/maven/acme/central"+libPath, nil, true); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %d", r.status)
	}
	for _, p := range []string{"/com/example/lib/1.0/..%2F..%2Fetc", "/com/exa.mple/lib/1.0/lib-1.0.jar", "/lib-1.0.jar"} {
		if r := e.s.do(t, http.MethodGet, "/maven/acme/central"+p, nil, true); r.status != http.StatusBadRequest {
			t.Errorf("GET %s: %d %q", p, r.status, r.body)
		}
	}
	if n := e.up.count("", ""); n != 0 {
		t.Fatalf("refused requests reached the upstream %d times", n)
	}
}

// Concurrent cold requests of one file share one upstream fetch.
func TestRemoteConcurrentMissesShareOneFill(t *testing.T) {
	e := newRemoteEnv(t, mavenRemoteDefaults())
	jar := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	e.up.write(t, libPath, jar)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(e.s.URL + "/maven/acme/central" + libPath)
			if err != nil {
				errs <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !bytes.Equal(b, jar) {
				errs <- resp.Status
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := e.up.count("GET", libPath); n != 1 {
		t.Fatalf("16 concurrent misses made %d upstream fetches", n)
	}
}

func repositoryID(t *testing.T, s *testServer, ns, name string) [16]byte {
	t.Helper()
	var id [16]byte
	if err := s.Store.Pool().QueryRow(context.Background(), `SELECT r.id FROM repositories r JOIN namespaces n ON n.id = r.namespace_id
		WHERE n.slug = $1 AND r.name = $2`, ns, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}
