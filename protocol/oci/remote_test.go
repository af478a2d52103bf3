package oci

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// layoutDigest reads the manifest digest an OCI layout written by crane
// pull --format oci or oras cp holds.
func layoutDigest(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	if err := json.Unmarshal(b, &idx); err != nil || len(idx.Manifests) == 0 {
		t.Fatalf("layout index %s: %v", b, err)
	}
	return idx.Manifests[0].Digest
}

// TestRemoteTokenUpstream drives crane and oras through pull-through
// caches of a distribution v3 upstream with token auth: pulls give the
// upstream's digests, a platform pull of an index caches the index and its
// one child only, a HEAD caches an index, a tag is served from the cache
// within its validity and revalidated by HEAD after it, referrers come
// through (the upstream has only the referrers tag schema), pushes are
// refused; then the upstream goes down (cached tags and blobs still pull,
// with a Warning, uncached content answers 502/503/504 without upstream
// URLs) and comes back with a moved tag, which revalidation finds. The
// upstream password appears in no log.
func TestRemoteTokenUpstream(t *testing.T) {
	crane := newCLI(t, ocitools.Crane(t))
	oras := newCLI(t, ocitools.Oras(t))
	up := newTestUpstream(t, authToken)
	v1, _, v1Layer := up.pushImage("team/app", "v1", "amd64", randomContent(1<<20, 1))
	amd, amdSize, _ := up.pushImage("team/app", "", "amd64", randomContent(64<<10, 2))
	arm, armSize, armLayer := up.pushImage("team/app", "", "arm64", randomContent(64<<10, 3))
	multi := up.pushIndex("team/app", "multi", platformChild{amd, amdSize, "amd64"}, platformChild{arm, armSize, "arm64"})
	headOnly := up.pushIndex("team/app", "headonly", platformChild{amd, amdSize, "amd64"})
	uncached, _, _ := up.pushImage("team/app", "later", "amd64", randomContent(4<<10, 4))
	work := t.TempDir()
	oras.dir = work
	writeFile(t, work, "sig.txt", "signature of v1")
	oras.run("attach", "--plain-http", "--distribution-spec=v1.1-referrers-tag", "--artifact-type", "application/vnd.example.signature",
		up.plain+"/team/app:v1", "sig.txt")
	up.secure()

	s := newRemoteServer(t)
	creds := &container.Credentials{Username: upstreamUser, Password: upstreamPassword}
	s.remote(t, "cache", "hub", up.URL, enum.VisibilityPrivate, 24, creds)
	s.remote(t, "cache", "fresh", up.URL, enum.VisibilityPrivate, 0, creds)
	reader := s.token(t, "cache", "reader", enum.TokenScopeRead)
	crane.run("auth", "login", s.Host, "-u", "ci", "-p", reader, "--insecure")
	hub := s.Host + "/cache/hub/team/app"
	fresh := s.Host + "/cache/fresh/team/app"

	// crane: the digest and the pulled image are the upstream's.
	if got := crane.run("digest", "--insecure", hub+":v1"); got != v1 {
		t.Fatalf("digest through the remote %s, upstream %s", got, v1)
	}
	dir := filepath.Join(work, "crane-v1")
	crane.run("pull", "--insecure", "--format", "oci", hub+":v1", dir)
	if got := layoutDigest(t, dir); got != v1 {
		t.Fatalf("crane pulled %s, want %s", got, v1)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(v1Layer, "sha256:"))); err != nil {
		t.Fatalf("pulled layout lacks the layer: %v", err)
	}
	// oras: the same digest.
	orasDir := filepath.Join(work, "oras-v1")
	oras.run("cp", "--from-plain-http", "--from-username", "ci", "--from-password", reader, hub+":v1", "--to-oci-layout", orasDir+":v1")
	if got := layoutDigest(t, orasDir); got != v1 {
		t.Fatalf("oras copied %s, want %s", got, v1)
	}

	// A platform pull of the index fetches the index and the arm64 child,
	// never the amd64 one; the index is stored verbatim.
	up.resetCounts()
	pdir := filepath.Join(work, "crane-arm")
	crane.run("pull", "--insecure", "--platform", "linux/arm64", "--format", "oci", hub+":multi", pdir)
	if got := up.countPrefix("GET /v2/team/app/manifests/" + amd); got != 0 {
		t.Fatalf("the amd64 child was fetched %d times", got)
	}
	if got := up.count("GET", "/v2/team/app/blobs/"+armLayer, http.StatusOK); got != 1 {
		t.Fatalf("the arm64 layer was fetched %d times, want 1", got)
	}
	nsID := s.nsID(t, "cache")
	if n := s.count(t, `SELECT count(*) FROM container_remote_manifests m JOIN container_remote_images i ON i.namespace_id = m.namespace_id AND i.id = m.container_remote_image_id
		JOIN container_remote_repositories r ON r.namespace_id = i.namespace_id AND r.id = i.container_remote_repository_id
		JOIN repositories p ON p.namespace_id = r.namespace_id AND p.id = r.repository_id
		WHERE m.namespace_id = $1 AND p.name = 'hub' AND m.digest = ANY($2::bytea[])`, nsID, [][]byte{rawDigest(t, multi), rawDigest(t, arm)}); n != 2 {
		t.Fatalf("%d of the index and arm64 child cached", n)
	}
	if n := s.count(t, `SELECT count(*) FROM container_remote_manifests WHERE namespace_id = $1 AND digest = $2`, nsID, rawDigest(t, amd)); n != 0 {
		t.Fatal("the amd64 child is cached")
	}
	resp := s.do(t, http.MethodGet, "/v2/cache/hub/team/app/manifests/multi", nil, map[string]string{"Accept": mtOCIIndex}, true)
	if body := readBody(t, resp); sha256Hex([]byte(body)) != multi || resp.Header.Get("Content-Type") != mtOCIIndex {
		t.Fatalf("the index is not served verbatim: %s %s", resp.Header.Get("Content-Type"), body)
	}
	// A HEAD alone caches an index (containerd HEADs it, then asks for it
	// by digest).
	if got := crane.run("digest", "--insecure", hub+":headonly"); got != headOnly {
		t.Fatalf("HEAD digest %s, want %s", got, headOnly)
	}
	if n := s.count(t, `SELECT count(*) FROM container_remote_manifests WHERE namespace_id = $1 AND digest = $2`, nsID, rawDigest(t, headOnly)); n != 1 {
		t.Fatal("a HEAD did not cache the index")
	}

	// Within the validity no upstream request; with validity 0 one HEAD.
	up.resetCounts()
	crane.run("digest", "--insecure", hub+":v1")
	crane.run("manifest", "--insecure", hub+":v1")
	if n := up.countPrefix("GET /v2/team/app/manifests") + up.countPrefix("HEAD /v2/team/app/manifests"); n != 0 {
		t.Fatalf("%d upstream manifest requests within the cache validity", n)
	}
	// fresh caches the same image: its blobs are linked from the
	// namespace once the upstream confirms it has them (a HEAD, no GET).
	up.resetCounts()
	crane.run("pull", "--insecure", "--format", "oci", fresh+":v1", filepath.Join(work, "crane-fresh"))
	if n := up.count("GET", "/v2/team/app/blobs/"+v1Layer, http.StatusOK); n != 0 {
		t.Fatalf("the layer another remote of the namespace caches was fetched again (%d GETs)", n)
	}
	up.resetCounts()
	crane.run("manifest", "--insecure", fresh+":v1")
	if heads, gets := up.countPrefix("HEAD /v2/team/app/manifests/v1 "), up.countPrefix("GET /v2/team/app/manifests"); heads == 0 || gets != 0 {
		t.Fatalf("revalidation: %d HEADs and %d GETs upstream, want HEADs only", heads, gets)
	}

	// Referrers: the upstream has the tag schema only.
	disc := oras.run("discover", "--plain-http", "-u", "ci", "-p", reader, "--distribution-spec=v1.1-referrers-api", "--format", "json", hub+":v1")
	if !strings.Contains(disc, "application/vnd.example.signature") {
		t.Fatalf("referrers through the remote:\n%s", disc)
	}

	// Pushes and deletes are refused with a clear OCI error.
	writer := s.token(t, "cache", "writer", enum.TokenScopeRead, enum.TokenScopeWrite, enum.TokenScopeDelete)
	resp = s.do(t, http.MethodPost, "/v2/cache/hub/team/app/blobs/uploads/", nil, map[string]string{"Authorization": "Bearer " + writer}, false)
	if body := readBody(t, resp); resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(body, codeUnsupported) || !strings.Contains(body, "remote repository") {
		t.Fatalf("upload through a remote: %d %s", resp.StatusCode, body)
	}
	resp = s.do(t, http.MethodDelete, "/v2/cache/hub/team/app/manifests/"+v1, nil, nil, true)
	if body := readBody(t, resp); resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(body, codeUnsupported) {
		t.Fatalf("delete through a remote: %d %s", resp.StatusCode, body)
	}
	crane.fail("DENIED", "copy", "--insecure", hub+":v1", hub+":copied") // the reader may not write anywhere
	crane.run("auth", "login", s.Host, "-u", "ci", "-p", writer, "--insecure")
	crane.fail("UNSUPPORTED", "copy", "--insecure", hub+":v1", hub+":copied")

	// The upstream goes down.
	up.stop()
	dir2 := filepath.Join(work, "crane-v1-offline")
	crane.run("pull", "--insecure", "--format", "oci", fresh+":v1", dir2)
	if got := layoutDigest(t, dir2); got != v1 {
		t.Fatalf("offline pull %s, want %s", got, v1)
	}
	resp = s.do(t, http.MethodGet, "/v2/cache/fresh/team/app/manifests/v1", nil, map[string]string{"Accept": mtOCIManifest}, true)
	readBody(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Warning"), "110") {
		t.Fatalf("stale manifest: %d, Warning %q", resp.StatusCode, resp.Header.Get("Warning"))
	}
	for _, p := range []string{"/v2/cache/fresh/team/app/manifests/later", "/v2/cache/hub/team/app/manifests/" + uncached,
		"/v2/cache/hub/team/app/blobs/" + sha256Hex([]byte("never pushed"))} {
		resp := s.do(t, http.MethodGet, p, nil, nil, true)
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusBadGateway && resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusGatewayTimeout {
			t.Fatalf("uncached %s while the upstream is down: %d %s", p, resp.StatusCode, body)
		}
		var e errorBody
		if err := json.Unmarshal([]byte(body), &e); err != nil || len(e.Errors) != 1 {
			t.Fatalf("not an OCI error: %s", body)
		}
		if strings.Contains(body, up.Host) || strings.Contains(body, "127.0.0.1") || strings.Contains(body, upstreamPassword) || strings.Contains(body, "token") {
			t.Fatalf("error body names the upstream: %s", body)
		}
	}

	// The upstream comes back with v1 moved to a new image.
	up.maintenance()
	moved, _, _ := up.pushImage("team/app", "v1", "amd64", randomContent(8<<10, 5))
	up.start()
	time.Sleep(1500 * time.Millisecond) // the breaker's offline period (1 s here)
	if got := crane.run("digest", "--insecure", fresh+":v1"); got != moved {
		t.Fatalf("after revalidation fresh:v1 is %s, want the moved %s", got, moved)
	}
	// hub's tag is within its validity: still the cached one, until an
	// admin invalidates it.
	if got := crane.run("digest", "--insecure", hub+":v1"); got != v1 {
		t.Fatalf("hub:v1 within validity is %s, want the cached %s", got, v1)
	}
	if err := s.cs.InvalidateRemoteTag(context.Background(), container.RemoteRef{
		Repository: store.RepositoryRef{Namespace: "cache", Name: "hub"}, Image: "team/app"}, "v1"); err != nil {
		t.Fatal(err)
	}
	if got := crane.run("digest", "--insecure", hub+":v1"); got != moved {
		t.Fatalf("hub:v1 after invalidation is %s, want %s", got, moved)
	}

	if strings.Contains(s.logs.String(), upstreamPassword) {
		t.Fatal("the upstream password appears in the logs")
	}
}

func rawDigest(t *testing.T, s string) []byte {
	t.Helper()
	d, aerr := parseDigest(s)
	if aerr != nil {
		t.Fatal(aerr)
	}
	return d.Bytes()
}

func (s *remoteServer) nsID(t *testing.T, slug string) any {
	t.Helper()
	ns, err := s.Store.NamespaceBySlug(context.Background(), slug)
	if err != nil {
		t.Fatal(err)
	}
	return ns.ID
}
