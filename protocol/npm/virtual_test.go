package npm

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// virtualUpstreams lists upstreams by name, without rules.
func virtualUpstreams(names ...string) []store.VirtualUpstreamInput {
	out := make([]store.VirtualUpstreamInput, len(names))
	for i, n := range names {
		out[i] = store.VirtualUpstreamInput{Repository: n}
	}
	return out
}

func rule(t enum.UpstreamRuleType, f enum.NpmTargetField, pattern string) store.VirtualRule {
	return store.VirtualRule{Type: t, Field: int16(f), Pattern: pattern}
}

// addVirtual creates the npm virtual repository acme/<name>.
func (e *env) addVirtual(t testing.TB, name string, vis enum.Visibility, in store.VirtualInput) {
	t.Helper()
	child, err := store.VirtualChild(enum.FormatNpm, in)
	must(t, err)
	_, err = e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: "acme", Name: name, Format: enum.FormatNpm,
		Kind: enum.KindVirtual, Visibility: vis, Child: child})
	must(t, err)
}

// setVirtual replaces the settings of acme/<name>.
func (e *env) setVirtual(t testing.TB, name string, in store.VirtualInput) {
	t.Helper()
	child, err := store.VirtualChild(enum.FormatNpm, in)
	must(t, err)
	_, err = e.st.UpdateRepository(e.ctx, storeRef(name), store.RepositoryUpdate{Child: child})
	must(t, err)
}

// publishTagged publishes name@version into repo under the given tags.
func (e *env) publishTagged(repo, name, version string, extra map[string]any, tags ...string) *npmpack.Publish {
	e.t.Helper()
	p := npmpack.NewPublish(e.t, name, version, extra)
	if len(tags) > 0 {
		p.Tags = tags
	}
	e.publish(repo, p)
	return p
}

// doc is a decoded packument.
type vdoc struct {
	Name     string                     `json:"name"`
	DistTags map[string]string          `json:"dist-tags"`
	Versions map[string]json.RawMessage `json:"versions"`
	Time     map[string]string          `json:"time"`
	Readme   string                     `json:"readme"`
}

func (e *env) virtualDoc(t *testing.T, repo, name string, hdr map[string]string) (vdoc, http.Header) {
	t.Helper()
	st, body, h := e.do("GET", e.registry(repo)+escapeName(name), "token", nil, hdr)
	if st != http.StatusOK {
		t.Fatalf("GET %s through %s: %d %s", name, repo, st, body)
	}
	var d vdoc
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatalf("GET %s: %v %s", name, err, body)
	}
	return d, h
}

func versionField(t *testing.T, raw json.RawMessage, field string) string {
	t.Helper()
	var m map[string]any
	must(t, json.Unmarshal(raw, &m))
	switch v := m[field].(type) {
	case string:
		return v
	case map[string]any:
		s, _ := v["tarball"].(string)
		return s
	}
	return ""
}

func wantNpmError(t *testing.T, what string, status int, body []byte, want int, text string) {
	t.Helper()
	var eb map[string]string
	if status != want || json.Unmarshal(body, &eb) != nil || !strings.Contains(eb["error"], text) {
		t.Fatalf("%s: %d %s, want %d with an npm error containing %q", what, status, body, want, text)
	}
}

// TestNpmVirtualMerge: the merge rules over hosted upstreams (first wins
// per version and per dist-tag, VERSION rules, latest recomputed, time,
// tarball URLs), abbreviated documents, ETag and 304, tarballs from the
// upstream that supplied the version and counted there, writes to the
// deploy target and refused deletes, search.
func TestNpmVirtualMerge(t *testing.T) {
	e := newEnv(t, envOptions{})
	testsupport.Repository(t, e.st, "acme", "h2", enum.FormatNpm, enum.VisibilityPrivate)
	e.publishTagged("js", "dup", "1.0.0", map[string]any{"description": "from js"})
	e.publishTagged("js", "dup", "1.1.0", map[string]any{"description": "from js"})
	e.publishTagged("h2", "dup", "1.1.0", map[string]any{"description": "from h2"})
	e.publishTagged("h2", "dup", "1.2.0", map[string]any{"description": "from h2"})
	e.publishTagged("h2", "dup", "2.0.0-rc.1", map[string]any{"description": "from h2"}, "next")
	e.publishTagged("h2", "drop", "1.0.0", nil)
	e.publishTagged("h2", "drop", "2.0.0", nil)
	e.publishTagged("h2", "drop", "3.0.0-beta.1", nil, "beta")
	e.publishTagged("h2", "@other/thing", "1.0.0", nil)
	e.addVirtual(t, "all", enum.VisibilityPrivate, store.VirtualInput{Upstreams: []store.VirtualUpstreamInput{
		{Repository: "js"},
		{Repository: "h2", Rules: []store.VirtualRule{
			rule(enum.UpstreamRuleDeny, enum.NpmTargetVersion, "1.2.*"),
			rule(enum.UpstreamRuleDeny, enum.NpmTargetVersion, "2.0.0"),
			rule(enum.UpstreamRuleDeny, enum.NpmTargetScope, "@other"),
		}},
	}})
	reg := e.registry("all")

	d, hdr := e.virtualDoc(t, "all", "dup", nil)
	if len(d.Versions) != 3 || d.Versions["1.2.0"] != nil || d.Versions["2.0.0-rc.1"] == nil {
		t.Fatalf("merged versions: %v", keys(d.Versions))
	}
	if got := versionField(t, d.Versions["1.1.0"], "description"); got != "from js" {
		t.Fatalf("1.1.0 comes from %q, want the first upstream", got)
	}
	if d.DistTags["latest"] != "1.1.0" || d.DistTags["next"] != "2.0.0-rc.1" || len(d.DistTags) != 2 {
		t.Fatalf("dist-tags: %v (first upstream wins latest, next from the second)", d.DistTags)
	}
	for v, raw := range d.Versions {
		if tb := versionField(t, raw, "dist"); !strings.HasPrefix(tb, reg+"dup/-/dup-"+v+".tgz") {
			t.Fatalf("dist.tarball of %s: %s", v, tb)
		}
		if d.Time[v] == "" {
			t.Fatalf("time of %s missing: %v", v, d.Time)
		}
	}
	if d.Time["created"] == "" || d.Time["modified"] == "" || hdr.Get("Vary") != "Accept" || hdr.Get("ETag") == "" {
		t.Fatalf("time %v, headers %v", d.Time, hdr)
	}
	// latest points at a version the rules drop: the highest release left.
	dd, _ := e.virtualDoc(t, "all", "drop", nil)
	if dd.DistTags["latest"] != "1.0.0" || dd.DistTags["beta"] != "3.0.0-beta.1" || dd.Versions["2.0.0"] != nil {
		t.Fatalf("drop: tags %v versions %v", dd.DistTags, keys(dd.Versions))
	}
	// A SCOPE rule hides the whole scope of that upstream.
	if st, body, _ := e.do("GET", reg+"@other%2fthing", "token", nil, nil); st != http.StatusNotFound {
		t.Fatalf("@other/thing denied by SCOPE: %d %s", st, body)
	}
	// Abbreviated document.
	cd, ch := e.virtualDoc(t, "all", "dup", map[string]string{"Accept": mediaTypeCorgi})
	if !strings.HasPrefix(ch.Get("Content-Type"), mediaTypeCorgi) || cd.Readme != "" || len(cd.Versions) != 3 || ch.Get("ETag") == hdr.Get("ETag") {
		t.Fatalf("abbreviated: %v %+v", ch, cd)
	}
	// dist-tags and a version by tag.
	if st, body, _ := e.do("GET", reg+"-/package/dup/dist-tags", "token", nil, nil); st != 200 || string(body) != `{"latest":"1.1.0","next":"2.0.0-rc.1"}` {
		t.Fatalf("dist-tags: %d %s", st, body)
	}
	if st, body, _ := e.do("GET", reg+"dup/next", "token", nil, nil); st != 200 || !strings.Contains(string(body), `"version":"2.0.0-rc.1"`) {
		t.Fatalf("version by tag: %d %s", st, body)
	}

	// ETag: 304 while nothing changes; a publish in an upstream or a
	// change of the virtual's settings changes it.
	etag := hdr.Get("ETag")
	if st, _, _ := e.do("GET", reg+"dup", "token", nil, map[string]string{"If-None-Match": etag}); st != http.StatusNotModified {
		t.Fatalf("If-None-Match: %d", st)
	}
	e.publishTagged("h2", "dup", "1.3.0", nil, "old")
	_, h2 := e.virtualDoc(t, "all", "dup", nil)
	if h2.Get("ETag") == etag {
		t.Fatal("a publish in an upstream left the ETag unchanged")
	}
	e.setVirtual(t, "all", store.VirtualInput{Upstreams: virtualUpstreams("h2", "js"), DeployTo: ptr("js")})
	d3, h3 := e.virtualDoc(t, "all", "dup", nil)
	if h3.Get("ETag") == h2.Get("ETag") || versionField(t, d3.Versions["1.1.0"], "description") != "from h2" || d3.Versions["1.2.0"] == nil {
		t.Fatalf("after reordering: etag %s, 1.1.0 %s", h3.Get("ETag"), versionField(t, d3.Versions["1.1.0"], "description"))
	}

	// Tarballs: the bytes of the upstream that supplied the version,
	// counted on it.
	_, direct, _ := e.do("GET", e.registry("h2")+"dup/-/dup-1.1.0.tgz", "token", nil, nil)
	_, fromJS, _ := e.do("GET", e.registry("js")+"dup/-/dup-1.1.0.tgz", "token", nil, nil)
	e.handler.downloads.Flush()
	before := e.count(`SELECT count(*) FROM counter_deltas d JOIN repositories r ON r.id = d.target_id WHERE r.name = 'h2' AND d.field = $1`, int16(enum.CounterFieldDownloadsCount))
	st, body, th := e.do("GET", reg+"dup/-/dup-1.1.0.tgz", "token", nil, nil)
	if st != 200 || string(body) != string(direct) || string(body) == string(fromJS) || th.Get("Content-Disposition") == "" {
		t.Fatalf("tarball through the virtual: %d (%d bytes), want h2's", st, len(body))
	}
	e.handler.downloads.Flush()
	if after := e.count(`SELECT count(*) FROM counter_deltas d JOIN repositories r ON r.id = d.target_id WHERE r.name = 'h2' AND d.field = $1`, int16(enum.CounterFieldDownloadsCount)); after != before+1 {
		t.Fatalf("downloads counted on h2: %d -> %d", before, after)
	}
	if st, body, _ := e.do("GET", reg+"dup/-/dup-9.9.9.tgz", "token", nil, nil); st != http.StatusNotFound {
		t.Fatalf("unknown tarball: %d %s", st, body)
	}

	// Writes go to the deploy target with WRITE on the virtual.
	write := e.token(t, "writer", enum.TokenScopeWrite)
	p := npmpack.NewPublish(t, "made-here", "1.0.0", nil)
	if st, body, _ := e.do("PUT", reg+"made-here", write, p.Body(reg), nil); st != http.StatusCreated {
		t.Fatalf("publish through the virtual: %d %s", st, body)
	}
	if doc := e.packument("js", "made-here", false); doc["name"] != "made-here" {
		t.Fatalf("published package not in the deploy target: %v", doc)
	}
	if st, body, _ := e.do("PUT", reg+"-/package/made-here/dist-tags/stable", write, []byte(`"1.0.0"`), nil); st != http.StatusCreated {
		t.Fatalf("dist-tag through the virtual: %d %s", st, body)
	}
	if doc := e.packument("js", "made-here", false); doc["dist-tags"].(map[string]any)["stable"] != "1.0.0" {
		t.Fatalf("dist-tag not in the deploy target: %v", doc["dist-tags"])
	}
	st, body, _ = e.do("PUT", reg+"other", "", npmpack.NewPublish(t, "other", "1.0.0", nil).Body(reg), nil)
	wantNpmError(t, "anonymous publish", st, body, http.StatusUnauthorized, "")
	st, body, _ = e.do("PUT", reg+"other", e.token(t, "reader", enum.TokenScopeRead), npmpack.NewPublish(t, "other", "1.0.0", nil).Body(reg), nil)
	wantNpmError(t, "publish with READ", st, body, http.StatusForbidden, "")
	for _, w := range []struct{ method, path string }{{"DELETE", "made-here/-rev/1-a"}, {"PUT", "made-here/-rev/1-a"}, {"DELETE", "made-here/-/made-here-1.0.0.tgz/-rev/1"}} {
		st, body, _ := e.do(w.method, reg+w.path, "token", []byte(`{}`), nil)
		wantNpmError(t, w.method+" "+w.path, st, body, http.StatusMethodNotAllowed, "virtual repository")
	}
	// Without a deploy target, writes are refused.
	e.setVirtual(t, "all", store.VirtualInput{Upstreams: virtualUpstreams("js", "h2")})
	st, body, _ = e.do("PUT", reg+"other", "token", npmpack.NewPublish(t, "other", "1.0.0", nil).Body(reg), nil)
	wantNpmError(t, "publish without deployTo", st, body, http.StatusMethodNotAllowed, "deploy target")

	// Search: the hosted upstreams, each name once.
	st, body, _ = e.do("GET", reg+"-/v1/search?text=d&size=20", "token", nil, nil)
	var sr struct {
		Objects []struct {
			Package struct{ Name, Version string } `json:"package"`
		} `json:"objects"`
		Total int `json:"total"`
	}
	must(t, json.Unmarshal(body, &sr))
	seen := map[string]int{}
	for _, o := range sr.Objects {
		seen[o.Package.Name]++
	}
	if st != 200 || seen["dup"] != 1 || seen["made-here"] != 1 || seen["drop"] != 1 || sr.Total != 3 {
		t.Fatalf("search through the virtual: %d %s", st, body)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// TestNpmVirtualRemote: dependency confusion and upstream failures over a
// hosted and remote upstreams: a name a hosted upstream holds is never
// asked of the remote (whatever the remote offers), a reserved name
// never either (also through a nested virtual), other names come from
// the remote; a remote whose upstream is down is skipped when another
// answers, and its error (503, npm's format) is the answer otherwise.
func TestNpmVirtualRemote(t *testing.T) {
	e := newEnv(t, envOptions{})
	clock := &offsetClock{}
	e.useClock(clock)
	up := newFakeRegistry(t)
	up.publish("@acme/lib", "99.0.0", nil, nil)
	up.publish("@acme/ghost", "1.0.0", nil, nil)
	up.publish("@inner/x", "1.0.0", nil, nil)
	up.publish("left-pad-fake", "1.0.0", nil, nil)
	up.publish("shared", "2.0.0", nil, nil)
	up.publish("never", "1.0.0", nil, nil)
	up2 := newFakeRegistry(t)
	up2.publish("shared", "1.0.0", nil, nil)
	e.publishTagged("js", "@acme/lib", "1.0.0", nil)
	e.addRemote(t, "npmjs", up.url, 1)
	e.addRemote(t, "mirror", up2.url, 1)
	e.addVirtual(t, "inner", enum.VisibilityPublic, store.VirtualInput{Upstreams: virtualUpstreams("npmjs"), ReservedPatterns: []string{"@inner/*"}})
	e.addVirtual(t, "all", enum.VisibilityPublic, store.VirtualInput{
		Upstreams:        []store.VirtualUpstreamInput{{Repository: "js", Rules: []store.VirtualRule{rule(enum.UpstreamRuleDeny, enum.NpmTargetFullPackageName, "@acme/lib")}}, {Repository: "inner"}, {Repository: "mirror"}},
		ReservedPatterns: []string{"@acme/*"},
	})
	reg := e.registry("all")

	// Shadowed: js holds @acme/lib; its own rule denies it here, yet the
	// remote is not asked: nothing is served.
	if st, body, _ := e.do("GET", reg+"@acme%2flib", "", nil, nil); st != http.StatusNotFound {
		t.Fatalf("@acme/lib denied in js and shadowed: %d %s", st, body)
	}
	e.setVirtual(t, "all", store.VirtualInput{Upstreams: virtualUpstreams("js", "inner", "mirror"), ReservedPatterns: []string{"@acme/*"}})
	d, _ := e.virtualDoc(t, "all", "@acme/lib", nil)
	if len(d.Versions) != 1 || d.DistTags["latest"] != "1.0.0" {
		t.Fatalf("@acme/lib through the virtual: %v %v", d.DistTags, keys(d.Versions))
	}
	// Reserved (absent locally), and reserved by the nested virtual.
	for _, n := range []string{"@acme%2fghost", "@acme/ghost/-/ghost-1.0.0.tgz", "@inner%2fx"} {
		st, body, _ := e.do("GET", reg+n, "", nil, nil)
		wantNpmError(t, "reserved "+n, st, body, http.StatusNotFound, "")
	}
	for _, r := range up.takeRequests() {
		if strings.Contains(r, "acme") || strings.Contains(r, "inner") {
			t.Fatalf("the upstream was asked for an internal name: %s", r)
		}
	}
	// Other names come from the remote, tarballs too (counted on it).
	d, _ = e.virtualDoc(t, "all", "left-pad-fake", nil)
	tb := versionField(t, d.Versions["1.0.0"], "dist")
	if tb != reg+"left-pad-fake/-/left-pad-fake-1.0.0.tgz" {
		t.Fatalf("remote tarball URL: %s", tb)
	}
	if st, body, _ := e.do("GET", tb, "", nil, nil); st != 200 || len(body) < 20 {
		t.Fatalf("remote tarball through the virtual: %d", st)
	}
	e.waitCount(t, `SELECT count(*) FROM npm_remote_files WHERE file_name = 'left-pad-fake-1.0.0.tgz'`, 1)
	// Two remotes: the first wins per version, both contribute.
	d, _ = e.virtualDoc(t, "all", "shared", nil)
	if len(d.Versions) != 2 || d.DistTags["latest"] != "2.0.0" {
		t.Fatalf("shared over two remotes: %v %v", d.DistTags, keys(d.Versions))
	}

	// Upstream down, metadata stale: the first remote's stale copy is
	// narrowed to its cached tarballs (none for shared), the mirror
	// answers; an uncached package answers the remote's 503.
	up.down.Store(true)
	clock.advance(2 * time.Hour)
	d, hdr := e.virtualDoc(t, "all", "shared", nil)
	if d.DistTags["latest"] == "" || d.Versions["1.0.0"] == nil || hdr.Get("Warning") == "" {
		t.Fatalf("shared with npmjs down: %v %v %v", d.DistTags, keys(d.Versions), hdr)
	}
	st, body, hdr := e.do("GET", reg+"never", "", nil, nil)
	wantNpmError(t, "never-cached package with the upstream down", st, body, http.StatusServiceUnavailable, "")
	if hdr.Get("Retry-After") == "" {
		t.Fatalf("503 without Retry-After: %v", hdr)
	}
	st, body, _ = e.do("GET", reg+"shared/-/shared-2.0.0.tgz", "", nil, nil)
	if st != http.StatusServiceUnavailable && st != http.StatusGatewayTimeout {
		t.Fatalf("uncached tarball with the upstream down: %d %s", st, body)
	}
	if st, body, _ := e.do("GET", reg+"shared/-/shared-1.0.0.tgz", "", nil, nil); st != 200 || len(body) < 20 {
		t.Fatalf("tarball from the mirror with npmjs down: %d %s", st, body)
	}
	e.flushRemoteCounters()
}
