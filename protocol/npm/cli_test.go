package npm

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// npmClient runs the real npm CLI with an isolated HOME, user config,
// global config and cache, pointed at one registry of the test server.
type npmClient struct {
	t        testing.TB
	home     string
	registry string
	env      []string
}

// newNPM returns an npm client for a repository of e; withToken writes the
// admin token as _authToken for the registry (npm's own login writes the
// same line).
func (e *env) newNPM(t testing.TB, repo string, withToken bool) *npmClient {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("the npm CLI is required for this test: %v", err)
	}
	c := &npmClient{t: t, home: t.TempDir(), registry: e.registry(repo)}
	u, _ := url.Parse(c.registry)
	rc := []string{
		"registry=" + c.registry,
		"cache=" + filepath.Join(c.home, "cache"),
		"audit=false",
		"fund=false",
		"update-notifier=false",
		"progress=false",
		"loglevel=warn",
	}
	if withToken {
		rc = append(rc, "//"+u.Host+u.Path+":_authToken="+testToken)
	}
	if err := os.WriteFile(filepath.Join(c.home, ".npmrc"), []byte(strings.Join(rc, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.home, "globalnpmrc"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(strings.ToLower(k), "npm_config_") || k == "HOME" || k == "NODE_OPTIONS" {
			continue
		}
		c.env = append(c.env, kv)
	}
	c.env = append(c.env,
		"HOME="+c.home,
		"NPM_CONFIG_USERCONFIG="+filepath.Join(c.home, ".npmrc"),
		"NPM_CONFIG_GLOBALCONFIG="+filepath.Join(c.home, "globalnpmrc"),
		"NO_UPDATE_NOTIFIER=1",
	)
	return c
}

// newNPMToken is newNPM with secret as the registry's _authToken.
func (e *env) newNPMToken(t testing.TB, repo, secret string) *npmClient {
	t.Helper()
	c := e.newNPM(t, repo, false)
	u, _ := url.Parse(c.registry)
	f, err := os.OpenFile(filepath.Join(c.home, ".npmrc"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "//%s%s:_authToken=%s\n", u.Host, u.Path, secret); err != nil {
		t.Fatal(err)
	}
	return c
}

// setCache points the client at a new, empty cache directory.
func (c *npmClient) setCache(dir string) {
	c.env = append(c.env, "NPM_CONFIG_CACHE="+dir)
}

// run runs npm in dir and returns its combined output.
func (c *npmClient) run(dir string, args ...string) (string, error) {
	c.t.Helper()
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	cmd.Env = c.env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	c.t.Logf("npm %s (%v)\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
	return string(out), err
}

// must runs npm and fails the test when it fails.
func (c *npmClient) must(dir string, args ...string) string {
	c.t.Helper()
	out, err := c.run(dir, args...)
	if err != nil {
		c.t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// fails runs npm, expects it to fail, and returns the output.
func (c *npmClient) fails(dir string, args ...string) string {
	c.t.Helper()
	out, err := c.run(dir, args...)
	if err == nil {
		c.t.Fatalf("npm %s succeeded, expected a failure:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// viewJSON runs npm view --json and decodes the result.
func (c *npmClient) viewJSON(v any, args ...string) {
	c.t.Helper()
	out := c.must(c.home, append([]string{"view", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("npm view %v: %v\n%s", args, err, out)
	}
}

// writePackage writes a package directory for npm publish.
func writePackage(t testing.TB, dir string, pj map[string]any) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(pj, "", "  ")
	files := map[string]string{
		"package.json": string(b),
		"index.js":     fmt.Sprintf("module.exports = %q;\n", pj["name"].(string)+"@"+pj["version"].(string)),
		"README.md":    "# " + pj["name"].(string) + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestNpmCLI drives the real npm CLI through the whole life of hosted
// packages: whoami, ping, publish (unscoped, scoped, several versions, a
// prerelease under a tag), duplicate refusals, view, dist-tag add/ls/rm,
// deprecate/undeprecate, install into a fresh project, ci from the lockfile
// with an empty cache, unpublish of versions (latest recomputed by the
// server), unpublish --force, search.
func TestNpmCLI(t *testing.T) {
	e := newEnv(t, envOptions{withJobs: true})
	admin := e.newNPM(t, "js", true)
	work := t.TempDir()
	// Each step is a subtest, which e's helpers and npm (admin for that
	// step) fail. must runs a step the later ones build on: they stop when
	// it fails.
	var npm *npmClient
	step := func(name string, f func(t *testing.T)) bool {
		return t.Run(name, func(t *testing.T) {
			defer e.failOn(t)()
			npm = admin.on(t)
			f(t)
		})
	}
	must := func(name string, f func(t *testing.T)) {
		if !step(name, f) {
			t.FailNow()
		}
	}

	step("whoami", func(t *testing.T) {
		if out := npm.must(work, "whoami"); strings.TrimSpace(out) != "admin" {
			t.Fatalf("whoami = %q", out)
		}
	})
	step("ping", func(t *testing.T) {
		npm.must(work, "ping")
	})

	publish := func(t *testing.T, name, version string, deps map[string]string, args ...string) {
		t.Helper()
		pj := map[string]any{"name": name, "version": version, "description": "anchor test package " + name,
			"main": "index.js", "license": "MIT", "keywords": []string{"anchor"}}
		if deps != nil {
			pj["dependencies"] = deps
		}
		dir := writePackage(t, filepath.Join(work, "src", strings.ReplaceAll(name, "/", "_"), version), pj)
		npm.must(dir, append([]string{"publish"}, args...)...)
	}
	must("publish", func(t *testing.T) {
		publish(t, "anchor-demo", "1.0.0", nil)
		publish(t, "anchor-demo", "1.0.1", nil)
		publish(t, "anchor-demo", "1.1.0", nil)
		publish(t, "anchor-demo", "2.0.0-beta.0", nil, "--tag", "beta")
		publish(t, "@anchor/lib", "1.0.0", map[string]string{"anchor-demo": "^1.0.0"})
		publish(t, "@anchor/lib", "1.0.1", map[string]string{"anchor-demo": "^1.0.0"}, "--access", "public")
	})

	// view: versions, tags, our tarball URLs.
	type npmView struct {
		Name     string            `json:"name"`
		Versions []string          `json:"versions"`
		DistTags map[string]string `json:"dist-tags"`
		Dist     struct {
			Tarball   string `json:"tarball"`
			Integrity string `json:"integrity"`
		} `json:"dist"`
		Maintainers []any `json:"maintainers"`
	}
	step("view", func(t *testing.T) {
		var view npmView
		npm.viewJSON(&view, "anchor-demo")
		if !slices.Equal(view.Versions, []string{"1.0.0", "1.0.1", "1.1.0", "2.0.0-beta.0"}) ||
			view.DistTags["latest"] != "1.1.0" || view.DistTags["beta"] != "2.0.0-beta.0" {
			t.Fatalf("view anchor-demo: %+v", view)
		}
		if view.Dist.Tarball != e.registry("js")+"anchor-demo/-/anchor-demo-1.1.0.tgz" {
			t.Errorf("tarball URL %q", view.Dist.Tarball)
		}
		npm.viewJSON(&view, "@anchor/lib@1.0.0")
		if view.Dist.Tarball != e.registry("js")+"@anchor/lib/-/lib-1.0.0.tgz" || !strings.HasPrefix(view.Dist.Integrity, "sha512-") {
			t.Errorf("scoped dist: %+v", view.Dist)
		}
	})

	// Duplicates: --force skips npm's own check, the server refuses; a
	// prerelease is not checked by npm at all.
	step("duplicate publish refused", func(t *testing.T) {
		dup := writePackage(t, filepath.Join(work, "dup"), map[string]any{"name": "anchor-demo", "version": "1.0.0"})
		if out := npm.fails(dup, "publish", "--force"); !strings.Contains(out, "409") {
			t.Errorf("duplicate publish: %s", out)
		}
		pre := writePackage(t, filepath.Join(work, "pre"), map[string]any{"name": "anchor-demo", "version": "2.0.0-beta.0"})
		if out := npm.fails(pre, "publish", "--tag", "beta"); !strings.Contains(out, "409") {
			t.Errorf("duplicate prerelease publish: %s", out)
		}
	})

	step("dist-tag add ls rm", func(t *testing.T) {
		npm.must(work, "dist-tag", "add", "anchor-demo@1.0.1", "legacy")
		if out := npm.must(work, "dist-tag", "ls", "anchor-demo"); !strings.Contains(out, "legacy: 1.0.1") || !strings.Contains(out, "latest: 1.1.0") {
			t.Errorf("dist-tag ls after add: %s", out)
		}
		npm.must(work, "dist-tag", "rm", "anchor-demo", "legacy")
		if out := npm.must(work, "dist-tag", "ls", "anchor-demo"); strings.Contains(out, "legacy") {
			t.Errorf("dist-tag ls after rm: %s", out)
		}
		npm.must(work, "dist-tag", "add", "@anchor/lib@1.0.0", "old")
		if out := npm.must(work, "dist-tag", "ls", "@anchor/lib"); !strings.Contains(out, "old: 1.0.0") {
			t.Errorf("scoped dist-tag ls: %s", out)
		}
	})

	// deprecate / undeprecate (a range, resolved by npm).
	step("deprecate and undeprecate", func(t *testing.T) {
		npm.must(work, "deprecate", "anchor-demo@<1.1.0", "use 1.1")
		var dep string
		npm.viewJSON(&dep, "anchor-demo@1.0.0", "deprecated")
		if dep != "use 1.1" {
			t.Errorf("deprecated = %q", dep)
		}
		corgi := e.packument("js", "anchor-demo", true)
		cv := corgi["versions"].(map[string]any)
		if cv["1.0.1"].(map[string]any)["deprecated"] != "use 1.1" || cv["1.1.0"].(map[string]any)["deprecated"] != nil {
			t.Errorf("corgi deprecations: %v", cv)
		}
		npm.must(work, "undeprecate", "anchor-demo@1.0.0")
		corgi = e.packument("js", "anchor-demo", true)
		cv = corgi["versions"].(map[string]any)
		if cv["1.0.0"].(map[string]any)["deprecated"] != nil || cv["1.0.1"].(map[string]any)["deprecated"] != "use 1.1" {
			t.Errorf("after undeprecate: %v", cv)
		}
	})

	// install into a fresh project with an empty cache.
	proj := filepath.Join(work, "project")
	must("install into a fresh project", func(t *testing.T) {
		writeJSONFile(t, filepath.Join(proj, "package.json"), map[string]any{
			"name": "consumer", "version": "1.0.0", "private": true,
			"dependencies": map[string]string{"anchor-demo": "^1.0.0", "@anchor/lib": "1.0.1"},
		})
		installer := e.newNPM(t, "js", true)
		installer.setCache(filepath.Join(t.TempDir(), "cache-install"))
		e.takeRequests()
		installer.must(proj, "install")
		var lock struct {
			Packages map[string]struct {
				Version   string `json:"version"`
				Resolved  string `json:"resolved"`
				Integrity string `json:"integrity"`
				License   string `json:"license"`
			} `json:"packages"`
		}
		readJSONFile(t, filepath.Join(proj, "package-lock.json"), &lock)
		full := e.packument("js", "anchor-demo", false)
		want := full["versions"].(map[string]any)["1.1.0"].(map[string]any)["dist"].(map[string]any)
		got := lock.Packages["node_modules/anchor-demo"]
		if got.Version != "1.1.0" || got.Resolved != want["tarball"] || got.Integrity != want["integrity"] || got.License != "MIT" {
			t.Errorf("lockfile anchor-demo = %+v, packument dist %v", got, want)
		}
		if lib := lock.Packages["node_modules/@anchor/lib"]; lib.Resolved != e.registry("js")+"@anchor/lib/-/lib-1.0.1.tgz" || !strings.HasPrefix(lib.Integrity, "sha512-") {
			t.Errorf("lockfile @anchor/lib = %+v", lib)
		}
		if b, err := os.ReadFile(filepath.Join(proj, "node_modules", "@anchor", "lib", "index.js")); err != nil || !strings.Contains(string(b), "@anchor/lib@1.0.1") {
			t.Errorf("installed @anchor/lib: %v %s", err, b)
		}
		reqs := e.takeRequests()
		if !containsRequest(reqs, "GET /npm/acme/js/anchor-demo/-/anchor-demo-1.1.0.tgz") ||
			!containsRequest(reqs, "GET /npm/acme/js/@anchor%2flib") {
			t.Errorf("install requests: %v", reqs)
		}
	})

	// ci from the lockfile with an empty cache: tarballs only.
	step("ci from the lockfile fetches tarballs only", func(t *testing.T) {
		if err := os.RemoveAll(filepath.Join(proj, "node_modules")); err != nil {
			t.Fatal(err)
		}
		ci := e.newNPM(t, "js", true)
		ci.setCache(filepath.Join(t.TempDir(), "cache-ci"))
		ci.must(proj, "ci", "--prefer-online")
		if _, err := os.Stat(filepath.Join(proj, "node_modules", "anchor-demo", "index.js")); err != nil {
			t.Errorf("npm ci: %v", err)
		}
		for _, r := range e.takeRequests() {
			if !strings.HasSuffix(r, ".tgz") {
				t.Errorf("npm ci made a request other than a tarball GET: %s", r)
			}
		}
	})

	// unpublish one version: it disappears, its tag goes, its number is
	// never reusable.
	must("unpublish a version", func(t *testing.T) {
		npm.must(work, "unpublish", "anchor-demo@1.0.1")
		var view npmView
		npm.viewJSON(&view, "anchor-demo")
		if slices.Contains(view.Versions, "1.0.1") || view.DistTags["latest"] != "1.1.0" {
			t.Errorf("after unpublish 1.0.1: %+v", view)
		}
		if status, _, _ := e.do("GET", e.registry("js")+"anchor-demo/-/anchor-demo-1.0.1.tgz", "", nil, nil); status != 404 {
			t.Errorf("unpublished tarball: %d", status)
		}
	})
	step("an unpublished version cannot be republished", func(t *testing.T) {
		again := writePackage(t, filepath.Join(work, "again"), map[string]any{"name": "anchor-demo", "version": "1.0.1"})
		if out := npm.fails(again, "publish", "--force"); !strings.Contains(out, "409") {
			t.Errorf("republish of an unpublished version: %s", out)
		}
		if n := e.count(`SELECT count(*) FROM npm_versions WHERE version = '1.0.1' AND soft_deleted_at IS NOT NULL`); n != 2 {
			// anchor-demo@1.0.1 and nothing else... @anchor/lib@1.0.1 is active.
			if n != 1 {
				t.Errorf("soft-deleted 1.0.1 rows: %d", n)
			}
		}
	})

	// unpublish latest: npm sends latest = highest version including the
	// prerelease; the server recomputes it as the highest release.
	must("unpublish latest recomputes latest", func(t *testing.T) {
		npm.must(work, "unpublish", "anchor-demo@1.1.0")
		var view npmView
		npm.viewJSON(&view, "anchor-demo")
		if !slices.Equal(view.Versions, []string{"1.0.0", "2.0.0-beta.0"}) || view.DistTags["latest"] != "1.0.0" || view.DistTags["beta"] != "2.0.0-beta.0" {
			t.Errorf("after unpublish of latest: %+v", view)
		}
	})

	step("search", func(t *testing.T) {
		out := npm.must(work, "search", "anchor")
		if !strings.Contains(out, "anchor-demo") || !strings.Contains(out, "@anchor/lib") || strings.Contains(out, "undefined") || strings.Contains(out, "prehistoric") {
			t.Errorf("search output: %s", out)
		}
		var hits []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Date    string `json:"date"`
		}
		if err := json.Unmarshal([]byte(npm.must(work, "search", "--json", "lib")), &hits); err != nil || len(hits) != 1 || hits[0].Name != "@anchor/lib" || hits[0].Version != "1.0.1" || hits[0].Date == "" {
			t.Errorf("search --json lib: %v %+v", err, hits)
		}
	})

	must("unpublish a whole package", func(t *testing.T) {
		npm.fails(work, "unpublish", "@anchor/lib") // npm refuses without --force
		npm.must(work, "unpublish", "@anchor/lib", "--force")
		if out := npm.fails(work, "view", "@anchor/lib"); !strings.Contains(out, "404") {
			t.Errorf("view after unpublish --force: %s", out)
		}
		if n := e.count(`SELECT count(*) FROM npm_packages WHERE name = '@anchor/lib' AND soft_deleted_at IS NOT NULL`); n != 1 {
			t.Errorf("trashed @anchor/lib rows: %d", n)
		}
	})
	// The name can be published again (a new package row), not its versions.
	step("an unpublished package's name is reusable, not its versions", func(t *testing.T) {
		publish(t, "@anchor/lib", "2.0.0", nil)
		relib := writePackage(t, filepath.Join(work, "relib"), map[string]any{"name": "@anchor/lib", "version": "1.0.0"})
		if out := npm.fails(relib, "publish", "--force"); !strings.Contains(out, "409") {
			t.Errorf("republish of a version of an unpublished package: %s", out)
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

// on returns a copy of c whose helpers fail t (a subtest); it shares c's
// HOME, configuration and cache.
func (c *npmClient) on(t testing.TB) *npmClient {
	d := *c
	d.t = t
	d.env = slices.Clip(c.env)
	return &d
}

// TestNpmCLIAccess checks anonymous reads of public registries, the token
// for private ones, npm's refusal to publish without a credential, and
// namespace access tokens: publish, install, a 403, whoami, npm token
// list/create/revoke and logout.
func TestNpmCLIAccess(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.publish("js", npmpack.NewPublish(t, "pub-pkg", "1.0.0", nil))
	e.publish("private", npmpack.NewPublish(t, "priv-pkg", "1.0.0", nil))

	anon := e.newNPM(t, "js", false)
	work := t.TempDir()
	if out := anon.must(work, "view", "pub-pkg", "version"); strings.TrimSpace(out) != "1.0.0" {
		t.Errorf("anonymous view of a public package: %q", out)
	}
	if out := anon.fails(work, "whoami"); !strings.Contains(out, "ENEEDAUTH") && !strings.Contains(out, "401") {
		t.Errorf("anonymous whoami: %s", out)
	}
	dir := writePackage(t, filepath.Join(work, "p"), map[string]any{"name": "pub-pkg", "version": "1.0.1"})
	if out := anon.fails(dir, "publish"); !strings.Contains(out, "ENEEDAUTH") && !strings.Contains(out, "401") {
		t.Errorf("anonymous publish: %s", out)
	}

	anonPriv := e.newNPM(t, "private", false)
	if out := anonPriv.fails(work, "view", "priv-pkg"); !strings.Contains(out, "401") {
		t.Errorf("anonymous view of a private package: %s", out)
	}
	priv := e.newNPM(t, "private", true)
	if out := priv.must(work, "view", "priv-pkg", "version"); strings.TrimSpace(out) != "1.0.0" {
		t.Errorf("view of a private package with the token: %q", out)
	}
	proj := filepath.Join(work, "proj")
	writeJSONFile(t, filepath.Join(proj, "package.json"), map[string]any{"name": "c", "version": "1.0.0", "dependencies": map[string]string{"priv-pkg": "1.0.0"}})
	priv.must(proj, "install")

	// Namespace access tokens as _authToken: WRITE publishes, READ
	// installs but cannot publish (403), whoami names the token.
	writer := e.newNPMToken(t, "private", e.token(t, "writer", enum.TokenScopeWrite))
	reader := e.newNPMToken(t, "private", e.token(t, "reader", enum.TokenScopeRead))
	if out := writer.must(work, "whoami"); strings.TrimSpace(out) != "writer" {
		t.Errorf("whoami with the WRITE token: %q", out)
	}
	writer.must(writePackage(t, filepath.Join(work, "tok"), map[string]any{"name": "tok-pkg", "version": "1.0.0"}), "publish")
	proj2 := filepath.Join(work, "proj2")
	writeJSONFile(t, filepath.Join(proj2, "package.json"), map[string]any{"name": "d", "version": "1.0.0", "dependencies": map[string]string{"tok-pkg": "1.0.0"}})
	reader.must(proj2, "install")
	if _, err := os.Stat(filepath.Join(proj2, "node_modules", "tok-pkg", "index.js")); err != nil {
		t.Errorf("install with the READ token: %v", err)
	}
	out := reader.fails(writePackage(t, filepath.Join(work, "tok2"), map[string]any{"name": "tok-pkg", "version": "1.0.1"}), "publish")
	if !strings.Contains(out, "403") || !strings.Contains(out, "lacks the WRITE scope") {
		t.Errorf("publish with the READ token: %s", out)
	}

	// npm token list / create / revoke with an ADMIN token of the namespace.
	adminSecret := e.token(t, "ns-admin", enum.TokenScopeAdmin)
	admin := e.newNPMToken(t, "private", adminSecret)
	if out := admin.must(work, "token", "list"); !strings.Contains(out, "reader") || !strings.Contains(out, "writer") {
		t.Errorf("npm token list: %s", out)
	}
	if out := writer.fails(work, "token", "list"); !strings.Contains(out, "403") {
		t.Errorf("npm token list with a WRITE token: %s", out)
	}
	created := admin.must(work, "token", "create", "--name", "from-npm", "--password", adminSecret)
	secret := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(created), "Created token"))
	if !strings.HasPrefix(secret, "arp_") {
		t.Fatalf("npm token create: %q", created)
	}
	// The list tells tokens apart by the start of their secret.
	if out := admin.must(work, "token", "list"); !strings.Contains(out, auth.SecretHint(secret)) {
		t.Errorf("npm token list does not show the start of the new secret %s…:\n%s", auth.SecretHint(secret), out)
	}
	if out := e.newNPMToken(t, "private", secret).must(work, "whoami"); strings.TrimSpace(out) != "from-npm" {
		t.Errorf("whoami with the created token: %q", out)
	}
	// npm redacts "key" in --json output; "id" is its shortest unique prefix.
	var listed []struct{ ID, Name string }
	if err := json.Unmarshal([]byte(admin.must(work, "token", "list", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	for _, tok := range listed {
		if tok.Name == "reader" {
			admin.must(work, "token", "revoke", tok.ID)
		}
	}
	if out := reader.fails(work, "view", "tok-pkg"); !strings.Contains(out, "401") {
		t.Errorf("view with the revoked READ token: %s", out)
	}
	// npm logout revokes the token it logs out.
	writer.must(work, "logout")
	var revoked int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM access_tokens WHERE revoked_at IS NOT NULL AND name IN ('reader', 'writer')`).Scan(&revoked); err != nil || revoked != 2 {
		t.Errorf("%d of reader and writer revoked (%v), want 2", revoked, err)
	}
}

func containsRequest(reqs []string, want string) bool {
	for _, r := range reqs {
		if r == want {
			return true
		}
	}
	return false
}

func writeJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestNpmCLILogin: npm login and npm adduser on a terminal, with the
// legacy flow npm falls back to after our 404 on the web login; the
// password is the registry token, which npm writes to .npmrc.
func TestNpmCLILogin(t *testing.T) {
	e := newEnv(t, envOptions{})
	npm := e.newNPM(t, "js", false)
	work := t.TempDir()
	for _, cmd := range []string{"login", "adduser"} {
		s := startPTY(t, work, npm.env, "npm", cmd)
		s.expect("Username:")
		s.send("alice")
		s.expect("Password:")
		s.send(testToken)
		if cmd == "adduser" {
			s.expect("Email")
			s.expect(":")
			s.send("alice@example.com")
		}
		out, err := s.wait()
		t.Logf("npm %s:%s", cmd, out)
		if err != nil {
			t.Fatalf("npm %s: %v", cmd, err)
		}
		rc, err := os.ReadFile(filepath.Join(npm.home, ".npmrc"))
		if err != nil || !strings.Contains(string(rc), ":_authToken="+testToken) {
			t.Fatalf("after npm %s, .npmrc has no token: %s", cmd, rc)
		}
		if out := npm.must(work, "whoami"); strings.TrimSpace(out) != "admin" {
			t.Errorf("whoami after %s: %q", cmd, out)
		}
		npm.must(work, "logout")
		if rc, _ := os.ReadFile(filepath.Join(npm.home, ".npmrc")); strings.Contains(string(rc), "_authToken") {
			t.Errorf("after logout: %s", rc)
		}
	}
	// A wrong password is refused.
	s := startPTY(t, work, npm.env, "npm", "login")
	s.expect("Username:")
	s.send("alice")
	s.expect("Password:")
	s.send("wrong-password")
	if out, err := s.wait(); err == nil || !strings.Contains(out, "401") {
		t.Errorf("login with a wrong password: %v\n%s", err, out)
	}
}
