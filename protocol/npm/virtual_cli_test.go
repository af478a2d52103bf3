package npm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestNpmVirtualCLI drives the real npm CLI through a virtual over a
// hosted repository and a pull-through cache of an independent upstream:
// an install whose dependencies come from both, dependency confusion
// (the upstream's @acme/lib 99.0.0 never wins over the hosted 1.0.0, and
// the upstream never hears of @acme names, present locally or not), and
// npm publish through the virtual landing in its deploy target.
func TestNpmVirtualCLI(t *testing.T) {
	e := newEnv(t, envOptions{})
	up := newFakeRegistry(t)
	up.publish("left-pad-fake", "1.0.0", nil, nil)
	up.publish("left-pad-fake", "1.1.0", nil, nil)
	up.publish("is-thing", "3.0.0", nil, nil)
	up.publish("@acme/lib", "99.0.0", nil, nil)
	e.addRemote(t, "npmjs", up.url, 1)
	e.publishTagged("js", "@acme/lib", "1.0.0", map[string]any{"dependencies": map[string]string{"is-thing": "^3.0.0"}})
	e.publishTagged("js", "internal-util", "1.0.0", map[string]any{"dependencies": map[string]string{"left-pad-fake": "^1.0.0"}})
	e.addVirtual(t, "all", enum.VisibilityPrivate, store.VirtualInput{
		Upstreams: virtualUpstreams("js", "npmjs"), DeployTo: ptr("js"), ReservedPatterns: []string{"@acme/*"}})
	npm := e.newNPM(t, "all", true)

	// An install from both upstreams.
	proj := t.TempDir()
	writeJSONFile(t, filepath.Join(proj, "package.json"), map[string]any{
		"name": "app", "version": "1.0.0", "private": true,
		"dependencies": map[string]string{"internal-util": "^1.0.0"},
	})
	npm.must(proj, "install")
	npm.must(proj, "install", "@acme/lib@latest")
	var lock struct {
		Packages map[string]struct{ Version, Resolved string } `json:"packages"`
	}
	readJSONFile(t, filepath.Join(proj, "package-lock.json"), &lock)
	for dir, v := range map[string]string{"internal-util": "1.0.0", "left-pad-fake": "1.1.0", "is-thing": "3.0.0", "@acme/lib": "1.0.0"} {
		p := lock.Packages["node_modules/"+dir]
		if p.Version != v || !strings.HasPrefix(p.Resolved, e.registry("all")) {
			t.Fatalf("%s in the lockfile: %+v, want %s from %s", dir, p, v, e.registry("all"))
		}
		if _, err := os.Stat(filepath.Join(proj, "node_modules", dir, "index.js")); err != nil {
			t.Fatalf("node_modules/%s: %v", dir, err)
		}
	}
	// A reserved name absent locally: npm's 404, nothing asked upstream.
	if out := npm.fails(proj, "view", "@acme/ghost"); !strings.Contains(out, "404") {
		t.Fatalf("npm view of a reserved name: %s", out)
	}
	for _, r := range up.takeRequests() {
		if strings.Contains(strings.ToLower(r), "acme") {
			t.Fatalf("the upstream was asked for an internal name: %s", r)
		}
	}

	// npm publish through the virtual lands in the deploy target.
	src := writePackage(t, filepath.Join(t.TempDir(), "made-here"), map[string]any{"name": "made-here", "version": "1.0.0", "license": "MIT"})
	npm.must(src, "publish")
	if doc := e.packument("js", "made-here", false); doc["dist-tags"].(map[string]any)["latest"] != "1.0.0" {
		t.Fatalf("made-here not in js: %v", doc)
	}
	var v string
	npm.viewJSON(&v, "made-here", "version")
	if v != "1.0.0" {
		t.Fatalf("npm view made-here through the virtual: %q", v)
	}
	e.flushRemoteCounters()
}
