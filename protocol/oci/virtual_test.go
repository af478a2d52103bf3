package oci

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// hosted creates a hosted OCI repository of an existing namespace.
func (s *remoteServer) hosted(t testing.TB, ns, name string) {
	t.Helper()
	if _, err := s.Store.CreateRepository(context.Background(), store.NewRepository{Namespace: ns, Name: name,
		Format: enum.FormatOCI, Kind: enum.KindHosted, Visibility: enum.VisibilityPrivate}); err != nil {
		t.Fatal(err)
	}
}

// virtual creates a virtual OCI repository of an existing namespace.
func (s *remoteServer) virtual(t testing.TB, ns, name string, in store.VirtualInput) {
	t.Helper()
	child, err := store.VirtualChild(enum.FormatOCI, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.CreateRepository(context.Background(), store.NewRepository{Namespace: ns, Name: name,
		Format: enum.FormatOCI, Kind: enum.KindVirtual, Visibility: enum.VisibilityPrivate, Child: child}); err != nil {
		t.Fatal(err)
	}
}

func members(names ...string) []store.VirtualUpstreamInput {
	out := make([]store.VirtualUpstreamInput, len(names))
	for i, n := range names {
		out[i] = store.VirtualUpstreamInput{Repository: n}
	}
	return out
}

// TestVirtualCrane drives crane through a virtual repository over two
// hosted repositories and a pull-through cache of a distribution v3
// upstream (token auth): a push through the virtual lands in its deploy
// target; a hosted image and a remote-cached image pull through the same
// virtual name with their own digests; tags are the union, the first
// upstream wins a tag both have. Dependency confusion: the upstream has
// an image of the hosted name (with a newer tag): the virtual serves the
// hosted one, the newer tag is unknown, and the upstream never sees a
// request for that name; a reserved name absent locally is never
// forwarded either. A token that reads only the virtual pulls through it
// but not from its upstreams directly; pushes without a deploy target and
// deletes are refused with OCI errors.
func TestVirtualCrane(t *testing.T) {
	crane := newCLI(t, ocitools.Crane(t))
	up := newTestUpstream(t, authToken)
	remoteApp, _, remoteLayer := up.pushImage("team/app", "v1", "amd64", randomContent(256<<10, 21))
	upstreamAcme, _, _ := up.pushImage("acme/app", "v1", "amd64", randomContent(4<<10, 22))
	up.pushImage("acme/app", "v99", "amd64", randomContent(4<<10, 23))
	up.pushImage("acme/secret", "v1", "amd64", randomContent(4<<10, 24))
	up.secure()

	s := newRemoteServer(t)
	s.remote(t, "corp", "hub", up.URL, enum.VisibilityPrivate, 24, &container.Credentials{Username: upstreamUser, Password: upstreamPassword})
	s.hosted(t, "corp", "local")
	s.hosted(t, "corp", "local2")
	deploy := "local"
	s.virtual(t, "corp", "all", store.VirtualInput{Upstreams: members("local", "local2", "hub"), DeployTo: &deploy,
		ReservedPatterns: []string{"acme/*"}})
	s.virtual(t, "corp", "readonly", store.VirtualInput{Upstreams: members("local")})
	ci := s.token(t, "corp", "ci", enum.TokenScopeRead, enum.TokenScopeWrite, enum.TokenScopeDelete)
	crane.run("auth", "login", s.Host, "-u", "ci", "-p", ci, "--insecure")
	all := s.Host + "/corp/all/"
	work := t.TempDir()

	// A push through the virtual lands in the deploy target.
	crane.run("append", "--insecure", "-f", layerTar(t, work, "app.txt", "the internal acme app\n"), "-t", all+"acme/app:v1")
	hostedAcme := crane.run("digest", "--insecure", s.Host+"/corp/local/acme/app:v1")
	if hostedAcme == upstreamAcme {
		t.Fatal("the hosted image has the upstream's digest")
	}
	// The same tag in the second hosted upstream: the first one wins.
	crane.run("append", "--insecure", "-f", layerTar(t, work, "lib.txt", "lib one, first upstream\n"), "-t", all+"lib/x:1")
	crane.run("append", "--insecure", "-f", layerTar(t, work, "lib.txt", "lib one, second upstream\n"), "-t", s.Host+"/corp/local2/lib/x:1")
	crane.run("append", "--insecure", "-f", layerTar(t, work, "lib.txt", "lib two\n"), "-t", s.Host+"/corp/local2/lib/x:2")
	if got, want := crane.run("digest", "--insecure", all+"lib/x:1"), crane.run("digest", "--insecure", s.Host+"/corp/local/lib/x:1"); got != want {
		t.Fatalf("lib/x:1 through the virtual %s, first upstream %s", got, want)
	}
	if tags := strings.Fields(crane.run("ls", "--insecure", all+"lib/x")); strings.Join(tags, ",") != "1,2" {
		t.Fatalf("tags through the virtual: %v", tags)
	}

	// crane pulls the hosted image and the remote one through one name.
	dir := filepath.Join(work, "hosted")
	crane.run("pull", "--insecure", "--format", "oci", all+"acme/app:v1", dir)
	if got := layoutDigest(t, dir); got != hostedAcme {
		t.Fatalf("pulled %s through the virtual, hosted %s", got, hostedAcme)
	}
	dir = filepath.Join(work, "remote")
	crane.run("pull", "--insecure", "--format", "oci", all+"team/app:v1", dir)
	if got := layoutDigest(t, dir); got != remoteApp {
		t.Fatalf("pulled %s through the virtual, upstream %s", got, remoteApp)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", strings.TrimPrefix(remoteLayer, "sha256:"))); err != nil {
		t.Fatalf("pulled layout lacks the remote layer: %v", err)
	}
	if got := crane.run("digest", "--insecure", s.Host+"/corp/hub/team/app:v1"); got != remoteApp {
		t.Fatalf("the remote itself serves %s", got)
	}
	// Cached now: a second pull through the virtual fetches no blob.
	up.resetCounts()
	crane.run("pull", "--insecure", "--format", "oci", all+"team/app:v1", filepath.Join(work, "again"))
	if n := up.countPrefix("GET /v2/team/app/blobs/"); n != 0 {
		t.Fatalf("%d blob fetches for a cached image", n)
	}
	if tags := strings.Fields(crane.run("ls", "--insecure", all+"team/app")); strings.Join(tags, ",") != "v1" {
		t.Fatalf("remote tags through the virtual: %v", tags)
	}

	// Dependency confusion: the upstream's newer tag of the hosted name
	// is not served, and the upstream heard nothing of either name.
	crane.fail("MANIFEST_UNKNOWN", "digest", "--insecure", all+"acme/app:v99")
	crane.fail("MANIFEST_UNKNOWN", "digest", "--insecure", all+"acme/secret:v1")
	resp := s.do(t, http.MethodGet, "/v2/corp/all/acme/secret/blobs/"+upstreamAcme, nil, nil, true)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(readBody(t, resp), "BLOB_UNKNOWN") {
		t.Fatalf("reserved blob: %d", resp.StatusCode)
	}
	resp = s.do(t, http.MethodGet, "/v2/corp/all/acme/secret/tags/list", nil, nil, true)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(readBody(t, resp), "NAME_UNKNOWN") {
		t.Fatalf("reserved tags: %d", resp.StatusCode)
	}
	if tags := strings.Fields(crane.run("ls", "--insecure", all+"acme/app")); strings.Join(tags, ",") != "v1" {
		t.Fatalf("tags of the hosted name: %v", tags)
	}
	for _, m := range []string{"GET", "HEAD"} {
		if n := up.countPrefix(m + " /v2/acme/"); n != 0 {
			t.Fatalf("the upstream saw %d %s requests for internal names", n, m)
		}
	}

	// Reading through the virtual needs READ on it only.
	n, err := s.Store.NamespaceBySlug(context.Background(), "corp")
	if err != nil {
		t.Fatal(err)
	}
	_, viaOnly, err := s.Authn.CreateToken(context.Background(), auth.AdminPrincipal(""), auth.NamespaceOf(n),
		auth.TokenSpec{Name: "via", Scopes: []enum.TokenScope{enum.TokenScopeRead}, Repositories: []string{"all"}})
	if err != nil {
		t.Fatal(err)
	}
	viaCrane := newCLI(t, crane.bin)
	viaCrane.run("auth", "login", s.Host, "-u", "via", "-p", viaOnly, "--insecure")
	if got := viaCrane.run("digest", "--insecure", all+"acme/app:v1"); got != hostedAcme {
		t.Fatalf("a reader of the virtual got %s", got)
	}
	viaCrane.fail("DENIED", "digest", "--insecure", s.Host+"/corp/local/acme/app:v1")
	viaCrane.fail("DENIED", "append", "--insecure", "-f", layerTar(t, work, "no.txt", "no"), "-t", all+"acme/app:no")

	// No deploy target: pushes are refused; deletes always are.
	crane.fail("UNSUPPORTED", "append", "--insecure", "-f", layerTar(t, work, "ro.txt", "ro"), "-t", s.Host+"/corp/readonly/x:1")
	crane.fail("UNSUPPORTED", "delete", "--insecure", all+"acme/app@"+hostedAcme)
	if got := crane.run("digest", "--insecure", s.Host+"/corp/readonly/acme/app:v1"); got != hostedAcme {
		t.Fatalf("the read-only virtual serves %s", got)
	}
}

// TestVirtualRules: rules on the way to an upstream decide what it
// serves through a virtual (allow and deny on the image name and the
// tag, through a nested virtual too), unknown names are the OCI errors,
// and the catalog lists the virtual's images.
func TestVirtualRules(t *testing.T) {
	t.Parallel()
	s := newRemoteServer(t)
	if _, err := s.Store.CreateNamespace(context.Background(), "rules"); err != nil {
		t.Fatal(err)
	}
	s.hosted(t, "rules", "a")
	s.hosted(t, "rules", "b")
	pa := pushTestImage(t, s.testServer, "rules/a/team/one", "1.0", "from a")
	pa2 := pushTestImage(t, s.testServer, "rules/a/team/one", "2.0-rc1", "rc from a")
	pb := pushTestImage(t, s.testServer, "rules/b/team/one", "1.0", "from b")
	pb2 := pushTestImage(t, s.testServer, "rules/b/team/one", "2.0-rc1", "rc from b")
	pbo := pushTestImage(t, s.testServer, "rules/b/other", "1.0", "other from b")
	s.virtual(t, "rules", "inner", store.VirtualInput{Upstreams: []store.VirtualUpstreamInput{
		{Repository: "a", Rules: []store.VirtualRule{{Type: enum.UpstreamRuleDeny, Field: int16(enum.ContainerTargetTag), Pattern: "*-rc*"}}},
		{Repository: "b", Rules: []store.VirtualRule{{Type: enum.UpstreamRuleAllow, Field: int16(enum.ContainerTargetImage), Pattern: "team/**"}}},
	}})
	s.virtual(t, "rules", "outer", store.VirtualInput{Upstreams: members("inner", "b")})

	digestOf := func(path string) (int, string) {
		t.Helper()
		resp := s.do(t, http.MethodHead, path, nil, map[string]string{"Accept": mtOCIManifest}, true)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Docker-Content-Digest")
	}
	for _, c := range []struct {
		path   string
		status int
		digest string
	}{
		{"/v2/rules/inner/team/one/manifests/1.0", 200, pa},
		// a denies rc tags: b serves it.
		{"/v2/rules/inner/team/one/manifests/2.0-rc1", 200, pb2},
		// b admits only team/**: nobody serves other through inner.
		{"/v2/rules/inner/other/manifests/1.0", 404, ""},
		// By digest, tag rules do not apply; a has it.
		{"/v2/rules/inner/team/one/manifests/" + pa2, 200, pa2},
		{"/v2/rules/inner/team/one/manifests/" + pb, 200, pb},
		// outer lists b again, without rules, after inner.
		{"/v2/rules/outer/other/manifests/1.0", 404, ""},
		{"/v2/rules/outer/team/one/manifests/2.0-rc1", 200, pb2},
		{"/v2/rules/outer/team/one/manifests/nope", 404, ""},
	} {
		if st, dg := digestOf(c.path); st != c.status || dg != c.digest {
			t.Errorf("%s: %d %s, want %d %s", c.path, st, dg, c.status, c.digest)
		}
	}
	if st, dg := digestOf("/v2/rules/b/other/manifests/1.0"); st != 200 || dg != pbo {
		t.Errorf("b itself serves other: %d %s", st, dg)
	}
	// b reached first through inner (with its rule), not again as outer's
	// own upstream: each upstream is reached once, at its first place.
	resp := s.do(t, http.MethodGet, "/v2/rules/inner/team/one/tags/list", nil, nil, true)
	var tags struct{ Tags []string }
	if err := json.Unmarshal([]byte(readBody(t, resp)), &tags); err != nil || strings.Join(tags.Tags, ",") != "1.0,2.0-rc1" {
		t.Fatalf("tags %+v %v", tags, err)
	}
	resp = s.do(t, http.MethodGet, "/v2/rules/inner/nothing/here/tags/list", nil, nil, true)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(readBody(t, resp), "NAME_UNKNOWN") {
		t.Fatalf("unknown image tags: %d", resp.StatusCode)
	}
	resp = s.do(t, http.MethodGet, "/v2/rules/inner/team/one/tags/list?n=1", nil, nil, true)
	if err := json.Unmarshal([]byte(readBody(t, resp)), &tags); err != nil || strings.Join(tags.Tags, ",") != "1.0" ||
		!strings.Contains(resp.Header.Get("Link"), "last=1.0") {
		t.Fatalf("first page %+v %q", tags, resp.Header.Get("Link"))
	}
	resp = s.do(t, http.MethodGet, "/v2/rules/inner/team/one/blobs/sha256:"+strings.Repeat("0", 64), nil, nil, true)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(readBody(t, resp), "BLOB_UNKNOWN") {
		t.Fatalf("unknown blob: %d", resp.StatusCode)
	}
	resp = s.do(t, http.MethodPost, "/v2/rules/inner/team/one/blobs/uploads/", nil, nil, true)
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(readBody(t, resp), "UNSUPPORTED") {
		t.Fatalf("push without deploy target: %d", resp.StatusCode)
	}
	resp = s.do(t, http.MethodGet, "/v2/_catalog?n=1000", nil, nil, true)
	var cat struct{ Repositories []string }
	if err := json.Unmarshal([]byte(readBody(t, resp)), &cat); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(cat.Repositories, ",")
	if want := "rules/a/team/one,rules/b/other,rules/b/team/one,rules/inner/team/one,rules/outer/team/one"; got != want {
		t.Errorf("catalog %s, want %s (other is denied by b's rule on the way through inner)", got, want)
	}
	// Paged: the virtual entries interleave with the hosted ones.
	var pages []string
	next := "/v2/_catalog?n=2"
	for next != "" {
		resp = s.do(t, http.MethodGet, next, nil, nil, true)
		if err := json.Unmarshal([]byte(readBody(t, resp)), &cat); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, cat.Repositories...)
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			next = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
		}
	}
	if strings.Join(pages, ",") != got {
		t.Errorf("paged catalog %v, whole %s", pages, got)
	}
}

// pushTestImage pushes an image of one layer holding content to name
// under tag and returns its manifest digest.
func pushTestImage(t *testing.T, s *testServer, name, tag, content string) string {
	t.Helper()
	c := newBenchClient(t, s, name)
	body := testImage(t, c, content)
	drain(c.expect(putManifest(s, t, name, tag, body, mtOCIManifest), http.StatusCreated))
	return sha(body)
}
