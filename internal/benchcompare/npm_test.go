//go:build benchcompare

package benchcompare

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// npmBench holds the npm workloads' state.
type npmBench struct {
	cfg  config
	rows map[string]*Row
	hc   *http.Client
	// deps is the consumer project's dependencies (published once per
	// registry, on its first run).
	deps      map[string]string
	published map[string]bool
	// static serves ours' answers once ours has the dependencies;
	// floors holds its cold installs' times by row key.
	static *npmTarget
	floors map[string][]float64
}

func newNPMBench(cfg config, rows map[string]*Row) *npmBench {
	deps := map[string]string{}
	for i := range cfg.npmDeps {
		deps[fmt.Sprintf("bench-dep-%02d", i)] = "^1.0.0"
	}
	return &npmBench{cfg: cfg, rows: rows, deps: deps, published: map[string]bool{}, floors: map[string][]float64{},
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
}

// tarball is a package's .tgz: package/package.json and an index.js.
func tarball(t testing.TB, name, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	pj, _ := json.Marshal(map[string]any{"name": name, "version": version, "main": "index.js", "license": "MIT"})
	files := []struct {
		name string
		body []byte
	}{{"package/package.json", pj}, {"package/index.js", fmt.Appendf(nil, "module.exports = %q;\n", name+"@"+version)}}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(499162500, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// publishBody is the document npm publish PUTs: one version, its
// metadata and its tarball as an attachment.
func publishBody(t testing.TB, registry, name, version string) []byte {
	t.Helper()
	tgz := tarball(t, name, version)
	s1 := sha1.Sum(tgz)
	s512 := sha512.Sum512(tgz)
	file := name + "-" + version + ".tgz"
	body, err := json.Marshal(map[string]any{
		"_id":  name,
		"name": name,
		"versions": map[string]any{version: map[string]any{
			"name": name, "version": version, "main": "index.js", "license": "MIT",
			"_id": name + "@" + version,
			"dist": map[string]any{
				"shasum":    hex.EncodeToString(s1[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
				"tarball":   registry + name + "/-/" + file,
			},
		}},
		"dist-tags": map[string]string{"latest": version},
		"_attachments": map[string]any{file: map[string]any{
			"content_type": "application/octet-stream",
			"data":         base64.StdEncoding.EncodeToString(tgz),
			"length":       len(tgz),
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// publish PUTs one version and returns the request's wall time.
func (b *npmBench) publish(t testing.TB, target npmTarget, name, version string) time.Duration {
	t.Helper()
	body := publishBody(t, target.registry, name, version)
	req, _ := http.NewRequest(http.MethodPut, target.registry+name, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", target.auth)
	start := time.Now()
	resp, err := b.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: publish %s@%s: %d %s", target.col, name, version, resp.StatusCode, raw)
	}
	return d
}

// runOnce publishes cfg.npmVersions versions of a new package one after
// another (the median time per version is the figure), then installs the
// consumer project four ways: npm install and npm ci, each with an empty
// client cache (cold) and with the cache the cold run filled (warm). A
// fifth install, --offline from the filled cache, is the CLI's own time,
// which no registry can go below.
func (b *npmBench) runOnce(t *testing.T, run int, target npmTarget) {
	name := fmt.Sprintf("bench-pub-%d", run)
	var lat []float64
	var sum0, n0 float64
	if target.metrics != "" {
		sum0, n0 = requestSeconds(t, target.metrics, http.MethodPut, "npm")
	}
	Settle()
	for v := range b.cfg.npmVersions {
		lat = append(lat, float64(b.publish(t, target, name, fmt.Sprintf("1.0.%d", v)).Microseconds())/1000)
	}
	b.rows["npm publish"].Add(target.col, Summarize(lat).Median)
	if target.metrics != "" {
		sum1, n1 := requestSeconds(t, target.metrics, http.MethodPut, "npm")
		if n1-n0 != float64(b.cfg.npmVersions) {
			t.Fatalf("%s: the request-duration metric counted %v npm PUTs, want %d", target.col, n1-n0, b.cfg.npmVersions)
		}
		b.rows["npm publish server"].Add(target.col, 1000*(sum1-sum0)/(n1-n0))
	}

	if !b.published[target.col] {
		for dep := range b.deps {
			b.publish(t, target, dep, "1.0.0")
		}
		b.published[target.col] = true
	}
	work := t.TempDir()
	install, ci, lock := b.coldInstalls(t, target, work)
	b.rows["npm install cold"].Add(target.col, install.Seconds())
	b.rows["npm ci cold"].Add(target.col, ci.Seconds())
	project := func(name string, lock []byte) string {
		dir := filepath.Join(work, name)
		b.writeProject(t, dir, lock)
		return dir
	}
	installCache, ciCache := filepath.Join(work, "cache-install"), filepath.Join(work, "cache-ci")
	b.rows["npm install warm"].Add(target.col, b.npm(t, target, project("install-warm", nil), installCache, "install", "--prefer-online").Seconds())
	b.rows["npm install offline"].Add(target.col, b.npm(t, target, project("install-offline", nil), installCache, "install", "--offline").Seconds())
	b.rows["npm ci warm"].Add(target.col, b.npm(t, target, project("ci-warm", lock), ciCache, "ci", "--prefer-online").Seconds())
}

// coldInstalls installs the consumer project in work from target with
// empty client caches (work/cache-install, work/cache-ci): npm install,
// then npm ci from the lockfile it wrote. It returns both times and the
// lockfile.
func (b *npmBench) coldInstalls(t testing.TB, target npmTarget, work string) (install, ci time.Duration, lock []byte) {
	t.Helper()
	dir := filepath.Join(work, "install-cold")
	b.writeProject(t, dir, nil)
	install = b.npm(t, target, dir, filepath.Join(work, "cache-install"), "install", "--prefer-online")
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(work, "ci-cold")
	b.writeProject(t, dir, lock)
	ci = b.npm(t, target, dir, filepath.Join(work, "cache-ci"), "ci", "--prefer-online")
	return install, ci, lock
}

// writeProject writes the consumer project into dir: its package.json
// and, when lock is not nil, its package-lock.json.
func (b *npmBench) writeProject(t testing.TB, dir string, lock []byte) {
	t.Helper()
	pj, _ := json.Marshal(map[string]any{"name": "consumer", "version": "1.0.0", "private": true, "dependencies": b.deps})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pj, 0o644); err != nil {
		t.Fatal(err)
	}
	if lock != nil {
		if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), lock, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// npm runs the npm CLI in dir against target with cache as its cache,
// checks every dependency landed in node_modules and returns the wall
// time. --prefer-online makes a warm cache revalidate metadata with the
// registry, as a CI job's install does; --offline keeps the CLI off the
// network.
func (b *npmBench) npm(t testing.TB, target npmTarget, dir, cache, command, network string) time.Duration {
	t.Helper()
	home := filepath.Join(filepath.Dir(cache), "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	npmrc := filepath.Join(home, ".npmrc")
	if err := os.WriteFile(npmrc, []byte("registry="+target.registry+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npm", command, network, "--no-audit", "--no-fund", "--no-update-notifier")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "NPM_CONFIG_USERCONFIG="+npmrc, "NPM_CONFIG_CACHE="+cache,
		"NPM_CONFIG_REGISTRY="+target.registry)
	Settle()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("%s: npm %s: %v\n%s", target.col, command, err, tail(string(out), 4000))
	}
	for _, dep := range slices.Sorted(maps.Keys(b.deps)) {
		raw, err := os.ReadFile(filepath.Join(dir, "node_modules", dep, "package.json"))
		if err != nil || !strings.Contains(string(raw), `"version":"1.0.0"`) {
			t.Fatalf("%s: npm %s did not install %s@1.0.0: %v %s", target.col, command, dep, err, raw)
		}
	}
	return d
}

// npmInstallAccept is what npm install sends for a packument: the
// abbreviated document when the registry has one.
const npmInstallAccept = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"

// startStaticNPM serves, from memory with Go's HTTP server, the answers
// from gave for the consumer's dependencies: each packument as npm
// install asks for it and each version's tarball, with from's URLs moved
// to the static server. An install from it costs the CLI and its cache
// fill with no registry work: the floor under any registry's cold
// install.
func (b *npmBench) startStaticNPM(t *testing.T, from npmTarget) npmTarget {
	t.Helper()
	files := map[string][]byte{}
	types := map[string]string{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	get := func(url string) ([]byte, string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept", npmInstallAccept)
		resp, err := b.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("static npm: GET %s: %d %v", url, resp.StatusCode, err)
		}
		return raw, resp.Header.Get("Content-Type")
	}
	for _, dep := range slices.Sorted(maps.Keys(b.deps)) {
		raw, ctype := get(from.registry + dep)
		var doc struct {
			Versions map[string]struct {
				Dist struct {
					Tarball string `json:"tarball"`
				} `json:"dist"`
			} `json:"versions"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("static npm: packument of %s: %v", dep, err)
		}
		for v, m := range doc.Versions {
			tgz, _ := get(m.Dist.Tarball)
			path, ok := strings.CutPrefix(m.Dist.Tarball, from.registry)
			if !ok {
				t.Fatalf("static npm: %s@%s: tarball %s is not under %s", dep, v, m.Dist.Tarball, from.registry)
			}
			files["/"+path], types["/"+path] = tgz, "application/octet-stream"
		}
		files["/"+dep] = bytes.ReplaceAll(raw, []byte(from.registry), []byte(base))
		types["/"+dep] = ctype
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", types[r.URL.Path])
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return npmTarget{col: "static", registry: base}
}

// floorRun installs the consumer project cold from the static server of
// from's answers (started on the first call), with npm install and npm
// ci, and records both times.
func (b *npmBench) floorRun(t *testing.T, from npmTarget) {
	if b.static == nil {
		s := b.startStaticNPM(t, from)
		b.static = &s
	}
	install, ci, _ := b.coldInstalls(t, *b.static, t.TempDir())
	b.floors["npm install cold"] = append(b.floors["npm install cold"], install.Seconds())
	b.floors["npm ci cold"] = append(b.floors["npm ci cold"], ci.Seconds())
}

// setFloors makes the static server's median the limit of the cold
// install rows: no registry's cold install can be faster.
func (b *npmBench) setFloors() {
	for key, xs := range b.floors {
		b.rows[key].Limit = &Limit{Name: "static server of ours' answers", Value: Summarize(xs).Median}
	}
}
