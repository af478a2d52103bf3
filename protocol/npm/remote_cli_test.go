package npm

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// offsetClock is a clock the test moves forward.
type offsetClock struct{ off atomic.Int64 }

func (c *offsetClock) now() time.Time          { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *offsetClock) advance(d time.Duration) { c.off.Add(int64(d)) }
func (e *env) useClock(c *offsetClock)         { e.handler.remote.now = c.now }
func (e *env) flushRemoteCounters()            { e.handler.remote.requests.Flush() }
func readFile(t testing.TB, p string) string {
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}
func (e *env) waitCount(t testing.TB, sql string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := e.count(sql)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", sql, n, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestNpmRemoteCLI drives the real npm CLI through a pull-through cache of
// an independent upstream: an install of scoped and unscoped dependencies
// from an empty cache, a new upstream version seen after the metadata
// validity only, then the upstream stopped and npm ci from an empty
// client cache served from our cache alone.
func TestNpmRemoteCLI(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := newFakeRegistry(t)
	up.publish("left-pad-fake", "1.0.0", nil, nil)
	up.publish("left-pad-fake", "1.1.0", nil, nil)
	up.publish("is-thing", "3.0.0", nil, nil)
	up.publish("@up/util", "2.0.0", map[string]string{"left-pad-fake": "^1.0.0", "is-thing": "^3.0.0"}, nil)
	up.publish("@up/cli", "0.4.0", map[string]string{"@up/util": "^2.0.0"}, nil)
	e.addRemote(t, "npmjs", up.url, 1)
	clock := &offsetClock{}
	e.useClock(clock)

	npm := e.newNPM(t, "npmjs", false)
	proj := t.TempDir()
	writeJSONFile(t, filepath.Join(proj, "package.json"), map[string]any{
		"name": "app", "version": "1.0.0", "private": true,
		"dependencies": map[string]string{"left-pad-fake": "^1.0.0", "@up/cli": "^0.4.0"},
	})
	npm.must(proj, "install")
	for _, dir := range []string{"left-pad-fake", "is-thing", "@up/util", "@up/cli"} {
		if _, err := os.Stat(filepath.Join(proj, "node_modules", dir, "package.json")); err != nil {
			t.Fatalf("node_modules/%s missing after install: %v", dir, err)
		}
	}
	var lock struct {
		Packages map[string]struct {
			Version, Resolved, Integrity string
		} `json:"packages"`
	}
	readJSONFile(t, filepath.Join(proj, "package-lock.json"), &lock)
	lp := lock.Packages["node_modules/left-pad-fake"]
	if lp.Version != "1.1.0" || lp.Resolved != e.registry("npmjs")+"left-pad-fake/-/left-pad-fake-1.1.0.tgz" {
		t.Fatalf("left-pad-fake in the lockfile: %+v", lp)
	}
	if u := lock.Packages["node_modules/@up/util"]; u.Resolved != e.registry("npmjs")+"@up/util/-/util-2.0.0.tgz" || !strings.HasPrefix(u.Integrity, "sha512-") {
		t.Fatalf("@up/util in the lockfile: %+v", u)
	}
	if strings.Contains(readFile(t, filepath.Join(proj, "package-lock.json")), up.url) {
		t.Fatal("the lockfile names the upstream: tarball URLs were not rewritten")
	}
	if n := up.countRequests("GET /@up%2fcli"); n != 1 {
		t.Fatalf("upstream packument GETs of @up/cli: %d, want 1", n)
	}
	// Fills commit once the client has its verified bytes: wait for them.
	e.waitCount(t, `SELECT count(*) FROM npm_remote_files`, 4)

	// A second install from an empty client cache is served from our
	// cache: no upstream request within the metadata validity.
	up.takeRequests()
	proj2 := t.TempDir()
	writeJSONFile(t, filepath.Join(proj2, "package.json"), map[string]any{
		"name": "app2", "version": "1.0.0", "private": true, "dependencies": map[string]string{"@up/cli": "^0.4.0"}})
	npm.setCache(t.TempDir())
	npm.must(proj2, "install")
	if reqs := up.takeRequests(); len(reqs) != 0 {
		t.Fatalf("warm install reached the upstream: %v", reqs)
	}

	// A new upstream version shows only after the metadata validity.
	up.publish("left-pad-fake", "1.2.0", nil, nil)
	var v string
	npm.setCache(t.TempDir())
	npm.viewJSON(&v, "left-pad-fake", "version")
	if v != "1.1.0" {
		t.Fatalf("within the metadata validity npm view says %s, want the cached 1.1.0", v)
	}
	clock.advance(61 * time.Minute)
	npm.viewJSON(&v, "left-pad-fake", "version")
	if v != "1.2.0" {
		t.Fatalf("after the metadata validity npm view says %s, want 1.2.0", v)
	}
	if n := up.countRequests("GET /left-pad-fake"); n != 1 {
		t.Fatalf("revalidation made %d upstream packument GETs, want 1", n)
	}

	// Upstream stopped: npm ci from an empty client cache succeeds from
	// our cache alone.
	up.stop()
	clock.advance(2 * time.Hour)
	ci := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		must(t, os.WriteFile(filepath.Join(ci, f), []byte(readFile(t, filepath.Join(proj, f))), 0o644))
	}
	npm.setCache(t.TempDir())
	npm.must(ci, "ci")
	if _, err := os.Stat(filepath.Join(ci, "node_modules", "@up", "util", "index.js")); err != nil {
		t.Fatalf("npm ci with the upstream down: %v", err)
	}
	// Without a lockfile too: the stale packuments list the cached
	// versions only, so ^1.0.0 resolves to the cached 1.1.0, not to the
	// 1.2.0 whose tarball was never fetched.
	fresh := t.TempDir()
	writeJSONFile(t, filepath.Join(fresh, "package.json"), map[string]any{
		"name": "app3", "version": "1.0.0", "private": true, "dependencies": map[string]string{"left-pad-fake": "^1.0.0"}})
	npm.setCache(t.TempDir())
	npm.must(fresh, "install")
	readJSONFile(t, filepath.Join(fresh, "package-lock.json"), &lock)
	if got := lock.Packages["node_modules/left-pad-fake"].Version; got != "1.1.0" {
		t.Fatalf("install with the upstream down resolved left-pad-fake %s, want the cached 1.1.0", got)
	}
	// A package never cached fails with npm's error, not a 500.
	out := npm.fails(fresh, "view", "never-cached", "--fetch-retries=0")
	if !strings.Contains(out, "503 Service Unavailable") {
		t.Fatalf("uncached package with the upstream down: %s", out)
	}
	e.flushRemoteCounters()
}
