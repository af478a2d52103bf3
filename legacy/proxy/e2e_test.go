package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/legacy/importer"
	"github.com/artifact-registry/artifact-registry/legacy/inventory"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/legacy/proxy"
	"github.com/artifact-registry/artifact-registry/legacy/service"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const adminToken = "legacy-e2e-admin-token"

// rulesYAML maps team/<image...> to acme/legacy/<image...>.
const rulesYAML = `prefixes:
  - prefix: team/
    namespace: acme
    repository: legacy
`

// env is a real legacy registry (distribution on filesystem storage, fed
// by crane) and our server in proxy mode in front of it.
type env struct {
	t          testing.TB
	st         *store.Store
	rules      *mapping.Rules
	legacyHost string
	stopLegacy func()
	legacyDir  string
	host       string // our host:port
	url        string
	reg        *prometheus.Registry
	svc        *service.Service
	docker     string // DOCKER_CONFIG of the crane runs
}

func newEnv(t testing.TB) *env { return newEnvWith(t, nil) }

// newEnvWith: with a token server, the legacy registry is distribution v3
// configured for token auth by it, and we hold its credentials.
func newEnvWith(t testing.TB, ts *legacytest.TokenServer) *env {
	t.Helper()
	e := &env{t: t, docker: t.TempDir()}
	t.Setenv("DOCKER_CONFIG", e.docker)
	legacyDir := filepath.Join(t.TempDir(), "legacy")
	var user, password string
	if ts != nil {
		e.legacyHost, e.stopLegacy = legacytest.StartRegistryConfig(t, legacytest.V3, legacyDir, ts.RegistryConfig())
		user, password = ts.Username, ts.Password
	} else {
		e.legacyHost, e.stopLegacy = legacytest.StartRegistryVersion(t, legacytest.V28, legacyDir)
	}
	e.legacyDir = legacyDir

	var err error
	e.rules, err = mapping.Parse([]byte(rulesYAML))
	if err != nil {
		t.Fatal(err)
	}
	e.st = testsupport.Store(t, testsupport.StoreOptions{})
	testsupport.Namespace(t, e.st, "acme")

	log := testsupport.Logger("LEGACY_TEST_LOG")
	metrics := service.NewMetrics(e.st)
	e.reg = prometheus.NewRegistry()
	e.reg.MustRegister(metrics.Collectors()...)
	// New repositories under team/new-* are created here; any other new
	// one in the legacy registry.
	local := func(path string) bool { return strings.HasPrefix(path, "team/new-") }
	hs := httpserver.New(httpserver.Options{Logger: log, Registry: prometheus.NewRegistry()})
	oci.Mount(hs.Router(), e.st, oci.Options{Auth: auth.New(e.st, auth.Options{AdminToken: adminToken, Logger: log}), Logger: log, Legacy: &oci.LegacyOptions{
		URL: "http://" + e.legacyHost, Username: user, Password: password, Router: proxy.New(e.st, e.rules, local),
		RetryAfter: 2 * time.Second, Observe: metrics.ObserveProxy,
	}})
	srv := httptest.NewServer(hs.Handler())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	e.host, e.url = u.Host, srv.URL

	e.svc, err = service.New(e.st, e.bucket(), metrics, service.Config{MaxConcurrency: 1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	e.crane("auth", "login", e.host, "-u", "ci", "-p", adminToken)
	return e
}

func (e *env) bucket() *blob.Bucket {
	b, err := fileblob.OpenBucket(e.legacyDir, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = b.Close() })
	return b
}

// crane runs crane (plain HTTP) and fails the test on error.
func (e *env) crane(args ...string) string {
	e.t.Helper()
	out, err := e.craneErr(args...)
	if err != nil {
		e.t.Fatalf("crane %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (e *env) craneErr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ocitools.Crane(e.t), append(args, "--insecure")...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+e.docker)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(out.String()), &craneError{err: err, stderr: errb.String()}
	}
	return strings.TrimSpace(out.String()), nil
}

type craneError struct {
	err    error
	stderr string
}

func (c *craneError) Error() string { return c.err.Error() + ": " + c.stderr }

// push appends a one-layer image with the given content as ref.
func (e *env) push(ref, content string) string {
	e.t.Helper()
	layer := legacytest.LayerTar(e.t, e.t.TempDir(), "file.txt", []byte(content))
	e.crane("append", "-f", layer, "-t", ref)
	return e.crane("digest", ref)
}

func (e *env) pushErr(ref, content string) error {
	layer := legacytest.LayerTar(e.t, e.t.TempDir(), "file.txt", []byte(content))
	_, err := e.craneErr("append", "-f", layer, "-t", ref)
	return err
}

func (e *env) row(path string) *legacy.Repository {
	e.t.Helper()
	r, err := legacy.New(e.st).RepositoryByPath(context.Background(), path)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// counter reads one sample of the proxied-requests counter.
func (e *env) counter(outcome string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != service.MetricProxied {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func (e *env) do(method, path string, body io.Reader, hdr map[string]string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth("ci", adminToken)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// manifestRefs lists the blobs a manifest references (config and layers).
func manifestRefs(t *testing.T, body string) []string {
	t.Helper()
	var m struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("manifest: %v\n%s", err, body)
	}
	out := []string{m.Config.Digest}
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	return out
}

// TestEndToEnd is the registry:2 migration's end-to-end test
// (docs/registry2-migration.md): clients pull and push
// through our proxy before, during pass 1 and during pass 2 (a push in the
// read-only window gets 503 and succeeds on retry after it); after the
// migration every tag pulls byte-identical from us with the legacy
// registry stopped.
func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	app, tool, deep := e.host+"/team/app", e.host+"/team/tool", e.host+"/team/deep/svc"
	legacyApp := e.legacyHost + "/team/app"
	// step runs one step as a subtest, e's helpers failing that subtest;
	// must runs a step the later ones build on: they stop when it fails.
	step := func(name string, f func(t *testing.T)) bool {
		return t.Run(name, func(t *testing.T) {
			defer e.failOn(t)()
			f(t)
		})
	}
	must := func(name string, f func(t *testing.T)) {
		if !step(name, f) {
			t.FailNow()
		}
	}

	// The legacy registry's content, pushed to it directly.
	legacytest.PushImage(t, e.legacyHost, "team/app", "v1", legacytest.Image{Layers: 2, Seed: 1})
	legacytest.PushImage(t, e.legacyHost, "team/app", "v2", legacytest.Image{Layers: 1, Seed: 2, OCI: true})
	legacytest.PushImage(t, e.legacyHost, "team/tool", "latest", legacytest.Image{Layers: 1, Seed: 3, LayerSize: 1 << 20})
	legacytest.PushImage(t, e.legacyHost, "team/deep/svc", "1", legacytest.Image{Layers: 1, Seed: 4})
	must("inventory records the legacy repositories", func(t *testing.T) {
		res, err := inventory.Run(ctx, e.st, e.bucket(), e.rules)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Recorded) != 3 || len(res.Unmapped) != 0 {
			t.Fatalf("inventory: %d recorded, unmapped %v", len(res.Recorded), res.Unmapped)
		}
	})

	// Before pass 1: pulls and pushes through us reach the legacy registry.
	step("before pass 1: pull through the proxy", func(t *testing.T) {
		if got, want := e.crane("digest", app+":v1"), e.crane("digest", legacyApp+":v1"); got != want {
			t.Fatalf("pull through proxy: %s, legacy %s", got, want)
		}
	})
	var v3, v4, v5, v6 string // pushed through us, checked after the migration
	must("before pass 1: push through the proxy lands in the legacy registry", func(t *testing.T) {
		v3 = e.push(app+":v3", "pushed through the proxy before pass 1")
		if got := e.crane("digest", legacyApp+":v3"); got != v3 {
			t.Fatalf("push through proxy did not land in the legacy registry: %s vs %s", got, v3)
		}
	})
	must("before pass 1: protocol details through the proxy", func(t *testing.T) {
		e.checkProtocol(t)
	})

	// Pass 1 (pre_importing): reads and writes keep going to the legacy registry.
	var row *legacy.Repository
	must("pass 1: reads and writes go to the legacy registry", func(t *testing.T) {
		var err error
		row, err = legacy.New(e.st).StartPass(ctx, e.row("team/app").ID, legacy.PassPre, time.Hour, 0)
		if err != nil {
			t.Fatal(err)
		}
		v4 = e.push(app+":v4", "pushed during pass 1")
		e.crane("pull", app+":v2", filepath.Join(t.TempDir(), "v2.tar"))
	})
	must("pass 1: pre-import", func(t *testing.T) {
		if _, err := importer.PreImport(ctx, e.st, e.bucket(), *row); err != nil {
			t.Fatal(err)
		}
		if got := e.row("team/app").Status; got != enum.LegacyPreImported {
			t.Fatalf("after pass 1: %s", got)
		}
	})
	must("push between the passes", func(t *testing.T) {
		v5 = e.push(app+":v5", "pushed between the passes")
	})

	// Pass 2: the read-only window.
	must("pass 2: start", func(t *testing.T) {
		var err error
		row, err = legacy.New(e.st).StartPass(ctx, row.ID, legacy.PassFinal, time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
	})
	step("pass 2: a write in the read-only window gets 503 and Retry-After", func(t *testing.T) {
		resp := e.do(http.MethodPost, "/v2/team/app/blobs/uploads/", nil, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" ||
			!strings.Contains(string(body), `"code":"TOO_MANY_REQUESTS"`) {
			t.Fatalf("write in the read-only window: %d Retry-After=%q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	})
	step("pass 2: a read in the read-only window", func(t *testing.T) {
		if got := e.crane("digest", app+":v4"); got != v4 {
			t.Fatalf("read in the read-only window: %s", got)
		}
	})
	must("pass 2: a push in the read-only window is refused and counted", func(t *testing.T) {
		rejected := e.counter("read_only_rejected")
		err := e.pushErr(app+":v6", "pushed in the read-only window")
		if err == nil || !strings.Contains(err.Error(), "TOO_MANY_REQUESTS") {
			t.Fatalf("push in the read-only window: %v", err)
		}
		if e.counter("read_only_rejected") <= rejected {
			t.Fatal("read_only_rejected not counted")
		}
	})
	must("pass 2: final import", func(t *testing.T) {
		if _, err := importer.FinalImport(ctx, e.st, e.bucket(), *row, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if got := e.row("team/app").Status; got != enum.LegacyMigrated {
			t.Fatalf("after pass 2: %s", got)
		}
	})
	// The retry after the window lands here, not in the legacy registry.
	must("the retry after the window lands here", func(t *testing.T) {
		v6 = e.push(app+":v6", "pushed in the read-only window")
		if _, err := e.craneErr("digest", legacyApp+":v6"); err == nil {
			t.Fatal("v6 went to the legacy registry after the migration")
		}
	})

	// The service migrates the rest.
	must("the service migrates the rest", func(t *testing.T) {
		for {
			found, err := e.svc.Step(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !found {
				break
			}
		}
		for _, p := range []string{"team/tool", "team/deep/svc"} {
			if r := e.row(p); r.Status != enum.LegacyMigrated {
				t.Fatalf("%s: %s (%v)", p, r.Status, r.LastError)
			}
		}
	})

	// Record the legacy answers, stop the legacy registry, compare.
	must("every tag byte-identical with the legacy registry stopped", func(t *testing.T) {
		refs := map[string]string{}
		for _, ref := range []string{"team/app:v1", "team/app:v2", "team/app:v3", "team/app:v4", "team/app:v5", "team/tool:latest", "team/deep/svc:1"} {
			refs[ref] = e.crane("manifest", e.legacyHost+"/"+ref)
		}
		e.stopLegacy()
		for ref, want := range refs {
			got := e.crane("manifest", e.host+"/"+ref)
			if got != want {
				t.Fatalf("%s: manifest differs after migration\n got %s\nwant %s", ref, got, want)
			}
			repo, _, _ := strings.Cut(ref, ":")
			for _, d := range manifestRefs(t, got) {
				if !e.blobMatches(repo, d) {
					t.Fatalf("%s: blob %s not served byte-identical", ref, d)
				}
			}
		}
	})
	step("tags pushed through the proxy after the migration", func(t *testing.T) {
		for ref, want := range map[string]string{"v3": v3, "v4": v4, "v5": v5} {
			if got := e.crane("digest", app+":"+ref); got != want {
				t.Fatalf("%s after the migration: %s, pushed %s", ref, got, want)
			}
		}
		if got := e.crane("digest", app+":v6"); got != v6 {
			t.Fatalf("v6 after the migration: %s", got)
		}
	})
	step("migrated repositories pull", func(t *testing.T) {
		e.crane("pull", tool+":latest", filepath.Join(t.TempDir(), "tool.tar"))
		e.crane("pull", deep+":1", filepath.Join(t.TempDir(), "deep.tar"))
	})
	// Writes to migrated repositories are served here.
	step("writes to migrated repositories are served here", func(t *testing.T) {
		e.push(deep+":2", "after the migration")
	})
	// A name still on the (stopped) legacy registry gets a 502 in the
	// spec's error format, not a hang or an HTML page.
	step("a name on the stopped legacy registry gets a 502", func(t *testing.T) {
		resp := e.do(http.MethodGet, "/v2/team/other/tags/list", nil, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), `"errors":[{"code":"UNKNOWN"`) {
			t.Fatalf("legacy registry down: %d %s", resp.StatusCode, body)
		}
		if e.counter("error") == 0 {
			t.Fatal("proxy error not counted")
		}
	})
}

// failOn points e's helpers at t, a subtest of e's test, until the
// returned func restores the test they failed before.
func (e *env) failOn(t testing.TB) (restore func()) {
	old := e.t
	e.t = t
	return func() { e.t = old }
}

// blobMatches fetches a blob through our server and checks its sha256.
func (e *env) blobMatches(repo, digest string) bool {
	resp := e.do(http.MethodGet, "/v2/"+repo+"/blobs/"+digest, nil, nil)
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		return false
	}
	return "sha256:"+hex.EncodeToString(h.Sum(nil)) == digest
}

// checkProtocol covers what crane does not show: Location headers of
// the legacy registry rewritten to ours, range requests, our auth
// challenge, and new repositories placed by the include list.
func (e *env) checkProtocol(t *testing.T) {
	t.Helper()
	resp := e.do(http.MethodPost, "/v2/team/app/blobs/uploads/", nil, nil)
	// The legacy registry builds Location from X-Forwarded-Host (our
	// host) or from its own host, which we rewrite: either way, ours.
	lu, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusAccepted || (lu.Host != "" && lu.Host != e.host) ||
		!strings.HasPrefix(lu.Path, "/v2/team/app/blobs/uploads/") {
		t.Fatalf("upload start through proxy: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	loc := lu.RequestURI()
	content := []byte("monolithic blob through the proxy")
	sum := sha256.Sum256(content)
	d := "sha256:" + hex.EncodeToString(sum[:])
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	resp = e.do(http.MethodPut, loc+sep+"digest="+d, bytes.NewReader(content), map[string]string{"Content-Type": "application/octet-stream"})
	if resp.StatusCode != http.StatusCreated || strings.Contains(resp.Header.Get("Location"), e.legacyHost) {
		t.Fatalf("upload finish through proxy: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp = e.do(http.MethodGet, "/v2/team/app/blobs/"+d, nil, map[string]string{"Range": "bytes=11-14"})
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusPartialContent || string(b) != string(content[11:15]) {
		t.Fatalf("range through proxy: %d %q", resp.StatusCode, b)
	}
	var anon *http.Response
	// Anonymous callers get our challenge, not the legacy registry's answer.
	anon, err = http.Get(e.url + "/v2/team/app/tags/list")
	if err != nil {
		t.Fatal(err)
	}
	anon.Body.Close()
	if anon.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(anon.Header.Get("WWW-Authenticate"), "Bearer realm=") {
		t.Fatalf("anonymous through proxy: %d %q", anon.StatusCode, anon.Header.Get("WWW-Authenticate"))
	}
	// A new repository on the include list is created here, another one
	// in the legacy registry.
	// (acme/legacy does not exist yet: the first push creates it.)
	here := e.push(e.host+"/team/new-svc:1", "new repository created here")
	if _, err := e.craneErr("digest", e.legacyHost+"/team/new-svc:1"); err == nil {
		t.Fatal("team/new-svc was created in the legacy registry")
	}
	if got := e.crane("digest", e.host+"/acme/legacy/new-svc:1"); got != here {
		t.Fatalf("team/new-svc is not acme/legacy/new-svc here: %s", got)
	}
	there := e.push(e.host+"/team/other:1", "new repository created in the legacy registry")
	if got := e.crane("digest", e.legacyHost+"/team/other:1"); got != there {
		t.Fatalf("team/other not in the legacy registry: %s", got)
	}
	if e.counter("forwarded") == 0 || e.counter("local") == 0 {
		t.Fatalf("proxied outcomes not counted: forwarded %v local %v", e.counter("forwarded"), e.counter("local"))
	}
}

// TestTargetNameUntilMigrated: the target name of an inventoried
// repository (acme/legacy/app for team/app) is refused, reads and writes,
// with an OCI error naming the legacy path, until the repository is
// migrated: after pass 1 the local copy has manifests but no tag, and
// nothing may be read from or written into it. After pass 2 the target
// name is served here.
func TestTargetNameUntilMigrated(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	legacytest.PushImage(t, e.legacyHost, "team/app", "v1", legacytest.Image{Layers: 1, Seed: 21})
	if _, err := inventory.Run(ctx, e.st, e.bucket(), e.rules); err != nil {
		t.Fatal(err)
	}
	v1 := e.crane("digest", e.legacyHost+"/team/app:v1")
	target := e.host + "/acme/legacy/app"

	refused := func(stage string) {
		t.Helper()
		for _, c := range []struct {
			method, path string
			status       int
			code         string
		}{
			{http.MethodGet, "/v2/acme/legacy/app/tags/list", http.StatusNotFound, "NAME_UNKNOWN"},
			{http.MethodGet, "/v2/acme/legacy/app/manifests/v1", http.StatusNotFound, "NAME_UNKNOWN"},
			{http.MethodGet, "/v2/acme/legacy/app/manifests/" + v1, http.StatusNotFound, "NAME_UNKNOWN"},
			{http.MethodHead, "/v2/acme/legacy/app/manifests/" + v1, http.StatusNotFound, ""},
			{http.MethodPost, "/v2/acme/legacy/app/blobs/uploads/", http.StatusForbidden, "DENIED"},
			{http.MethodDelete, "/v2/acme/legacy/app/manifests/" + v1, http.StatusForbidden, "DENIED"},
		} {
			resp := e.do(c.method, c.path, nil, nil)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || (c.code != "" && (!strings.Contains(string(body), `"code":"`+c.code+`"`) ||
				!strings.Contains(string(body), `use its legacy name \"team/app\"`) ||
				!strings.Contains(string(body), `"legacyPath":"team/app"`))) {
				t.Fatalf("%s: %s %s: %d %s", stage, c.method, c.path, resp.StatusCode, body)
			}
		}
		err := e.pushErr(target+":forked", "pushed under the target name")
		if err == nil || !strings.Contains(err.Error(), "DENIED") || !strings.Contains(err.Error(), "team/app") {
			t.Fatalf("%s: push under the target name: %v", stage, err)
		}
		// Anonymous callers learn nothing about the legacy path.
		req, _ := http.NewRequest(http.MethodGet, e.url+"/v2/acme/legacy/app/tags/list", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 || strings.Contains(string(body), "team/app") {
			t.Fatalf("%s: anonymous read under the target name: %d %s", stage, resp.StatusCode, body)
		}
	}
	localTags := func() int {
		var n int
		if err := e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM container_tags`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	refused("pending")
	row, err := legacy.New(e.st).StartPass(ctx, e.row("team/app").ID, legacy.PassPre, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importer.PreImport(ctx, e.st, e.bucket(), *row); err != nil {
		t.Fatal(err)
	}
	refused("pre_imported") // the manifest is here, but not servable yet
	if n := localTags(); n != 0 {
		t.Fatalf("%d local tags before pass 2", n)
	}
	row, err = legacy.New(e.st).StartPass(ctx, row.ID, legacy.PassFinal, time.Minute, 0)
	if err != nil {
		t.Fatal(err)
	}
	refused("importing")
	if e.counter("target_refused") == 0 {
		t.Fatal("target_refused not counted")
	}
	// The legacy name keeps working all along.
	if got := e.crane("digest", e.host+"/team/app:v1"); got != v1 {
		t.Fatalf("legacy name during pass 2: %s", got)
	}
	if _, err := importer.FinalImport(ctx, e.st, e.bucket(), *row, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Migrated: the target name is served here, reads and writes, and
	// nothing pushed under it before made it in.
	if got := e.crane("digest", target+":v1"); got != v1 {
		t.Fatalf("target name after the migration: %s, want %s", got, v1)
	}
	if _, err := e.craneErr("digest", target+":forked"); err == nil {
		t.Fatal("a push refused before the migration left a tag")
	}
	pushed := e.push(target+":v2", "pushed under the target name after the migration")
	if got := e.crane("digest", e.host+"/team/app:v2"); got != pushed {
		t.Fatalf("legacy name after a push under the target name: %s, want %s", got, pushed)
	}
	// A local name that no legacy repository feeds is served as before.
	resp := e.do(http.MethodGet, "/v2/acme/legacy/other/tags/list", nil, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unrelated local name: %d", resp.StatusCode)
	}
	if body, _ := io.ReadAll(resp.Body); strings.Contains(string(body), "legacy name") {
		t.Fatalf("unrelated local name refused as held: %s", body)
	}
}
