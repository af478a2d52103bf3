package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// npmCLI runs the real npm CLI with an isolated HOME, user config and
// cache, pointed at one npm repository of the server with the admin token
// (the .npmrc lines the UI shows).
type npmCLI struct {
	t        testing.TB
	home     string
	registry string
	env      []string
}

func newNPM(t testing.TB, s *server, ns, repo string) *npmCLI {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		// The browser tests run in CI with the other real clients: a
		// missing npm is a failure, never a skip.
		t.Fatalf("the npm CLI is required for this test (apt-get install -y npm): %v", err)
	}
	c := &npmCLI{t: t, home: t.TempDir(), registry: s.URL + "/npm/" + ns + "/" + repo + "/"}
	u, _ := url.Parse(c.registry)
	rc := []string{
		"registry=" + c.registry,
		"//" + u.Host + u.Path + ":_authToken=" + adminToken,
		"cache=" + filepath.Join(c.home, "cache"),
		"audit=false", "fund=false", "update-notifier=false", "progress=false", "loglevel=warn",
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

// must runs npm in dir and fails the test when it fails.
func (c *npmCLI) must(dir string, args ...string) string {
	c.t.Helper()
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// publish writes a package directory and publishes it with `npm publish`.
func (c *npmCLI) publish(name, version, description string, extra ...string) {
	c.t.Helper()
	dir := filepath.Join(c.home, "src", strings.NewReplacer("@", "", "/", "-").Replace(name)+"-"+version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	pj, _ := json.MarshalIndent(map[string]any{
		"name": name, "version": version, "description": description, "license": "MIT", "main": "index.js",
		"dependencies": map[string]string{"left-pad": "^1.3.0"},
	}, "", "  ")
	for f, body := range map[string]string{
		"package.json": string(pj),
		"index.js":     fmt.Sprintf("module.exports = %q;\n", name+"@"+version),
		"README.md":    "# " + name + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	c.must(dir, append([]string{"publish"}, extra...)...)
}

// mavenPut deploys one file as Maven does: PUT with HTTP Basic (the
// settings.xml <server> entry the UI shows: any user, the token as password).
func (s *server) mavenPut(t testing.TB, path string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, s.URL+"/maven/"+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("deployer:"+adminToken)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /maven/%s: %s %s", path, resp.Status, b)
	}
}

// TestUIPackages: npm packages published with the real npm CLI and Maven
// files deployed as Maven does are listed and opened in the UI with their
// dist-tags, deprecations and install snippets; a dist-tag set in the UI
// is what npm then sees; an npm version goes to the trash and comes back;
// the publish history lists both formats. Screenshots of these screens go
// to artifactsDir (and docs).
func TestUIPackages(t *testing.T) {
	requireChromium(t)
	s := newServer(t)
	s.graphql(t, `mutation { createNamespace(input: {slug: "acme"}) { namespace { id } } }`, nil)
	s.graphql(t, `mutation {
		w: createRepository(input: {namespace: "acme", name: "web", format: NPM, description: "Front-end packages"}) { repository { id } }
		l: createRepository(input: {namespace: "acme", name: "libs", format: MAVEN, description: "JVM libraries"}) { repository { id } }
	}`, nil)

	// npm: three versions of a scoped package (one under "next", one
	// deprecated) and an unscoped one, with the real CLI.
	npm := newNPM(t, s, "acme", "web")
	npm.publish("@acme/ui", "1.0.0", "Shared UI components")
	npm.publish("@acme/ui", "1.1.0", "Shared UI components")
	npm.publish("@acme/ui", "2.0.0-beta.1", "Shared UI components", "--tag", "next")
	npm.publish("tiny-lib", "0.1.0", "A tiny library")
	npm.must(npm.home, "deprecate", "@acme/ui@1.0.0", "Use 1.1.0: fixes the focus ring")

	// Maven: a release with its pom, jar and sources jar (and checksums).
	base := "acme/libs/com/acme/core/1.0/"
	pom := []byte(`<project><modelVersion>4.0.0</modelVersion><groupId>com.acme</groupId><artifactId>core</artifactId><version>1.0</version></project>`)
	for _, f := range []struct {
		name string
		body []byte
	}{
		{"core-1.0.pom", pom},
		{"core-1.0.jar", []byte("PK\x03\x04 core classes")},
		{"core-1.0-sources.jar", []byte("PK\x03\x04 core sources")},
	} {
		s.mavenPut(t, base+f.name, f.body)
	}

	b := newBrowser(t, s.URL, 1280, 900)
	defer b.checkConsole()
	b.open("/sign-in?next=%2Fn%2Facme%2Fr%2Fweb")
	b.typeInto("#token", adminToken)
	b.click(button("Sign in"))

	// The npm repository lists what npm published.
	b.see(heading("web"))
	b.see(link("@acme/ui"))
	b.see(link("tiny-lib"))
	b.see(text("All 2 shown."))
	b.docShot("30-npm-repository", "npm-repository")

	// The package: dist-tags, versions (deprecation shown), .npmrc lines.
	b.click(link("@acme/ui"))
	b.see(heading("@acme/ui"))
	b.see(`//li[@data-dist-tag="latest"]//a[normalize-space()="1.1.0"]`)
	b.see(`//li[@data-dist-tag="next"]//a[normalize-space()="2.0.0-beta.1"]`)
	b.see(`//tr[@data-version="1.0.0"]//*[normalize-space()="deprecated"]`)
	b.see(text("Use 1.1.0: fixes the focus ring"))
	b.see(text("npm install @acme/ui"))
	b.see(text("@acme:registry=" + s.URL + "/npm/acme/web/"))
	b.see(text("//" + s.Host + "/npm/acme/web/:_authToken=${ARTIFACT_REGISTRY_TOKEN}"))
	// One version's details: its own install command and dependencies.
	b.click(`//tr[@data-version="1.1.0"]//a[normalize-space()="1.1.0"]`)
	b.waitFor("version in the URL", `new URLSearchParams(location.search).get("version") === "1.1.0"`)
	b.see(text("npm install @acme/ui@1.1.0"))
	b.see(`//code[normalize-space()="left-pad"]`)
	b.docShot("31-npm-package", "npm-package")

	// Move a dist-tag from the UI: npm sees it.
	b.typeInto("#dist-tag", "stable")
	b.typeInto("#dist-tag-version", "1.0.0")
	b.click(button("Set tag"))
	b.see(`//li[@data-dist-tag="stable"]//a[normalize-space()="1.0.0"]`)
	if out := npm.must(npm.home, "dist-tag", "ls", "@acme/ui"); !strings.Contains(out, "stable: 1.0.0") {
		t.Errorf("npm dist-tag ls after setting stable in the UI:\n%s", out)
	}

	// Delete a version to the trash and restore it.
	b.click(button("Delete version 1.0.0"))
	b.gone(`//tr[@data-version="1.0.0"]`)
	b.open("/n/acme/trash?kind=npm_version")
	b.see(text("@acme/ui@1.0.0"))
	b.docShot("32-trash-npm", "trash-npm")
	b.click(button("Restore npm version @acme/ui@1.0.0"))
	b.see(text("The trash is empty."))
	b.open("/n/acme/r/web/npm/@acme/ui")
	b.see(`//tr[@data-version="1.0.0"]`)

	// Maven: package → version → files with the snippets.
	b.open("/n/acme/r/libs")
	b.see(heading("libs"))
	b.click(link("core"))
	b.see(heading("core"))
	b.see(`//tr[@data-version="1.0"]`)
	b.click(link("1.0"))
	b.see(heading("core 1.0"))
	b.see(`//tr[@data-file="core-1.0.jar"]`)
	b.see(`//tr[@data-file="core-1.0-sources.jar"]//button[normalize-space()="Copy dependency"]`)
	b.see(text("<groupId>com.acme</groupId>"))
	b.see(text("<id>acme-libs</id>"))
	b.docShot("33-maven-version", "maven-version")
	b.do("scroll to the files", chromedp.ScrollIntoView(chromedp.CSS(`#files`)))
	b.docShot("33-maven-version-files", "maven-version-files")
	// The dependency: the version's at the top and on the jar's row, the
	// sources jar's with its classifier, none on the pom's row (its jar is
	// the dependency).
	dependency := "<dependency>\n  <groupId>com.acme</groupId>\n  <artifactId>core</artifactId>\n  <version>1.0</version>\n</dependency>"
	for _, sel := range []string{
		`//div[@class="page-actions"]//button[normalize-space()="Copy dependency"]`,
		`//tr[@data-file="core-1.0.jar"]//button[normalize-space()="Copy dependency"]`,
		`//tr[@data-file="core-1.0-sources.jar"]//button[normalize-space()="Copy dependency"]`,
	} {
		b.click(sel)
		clip := run(b, "read clipboard", chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
		want := dependency
		if strings.Contains(sel, "sources") {
			want = strings.Replace(dependency, "</version>", "</version>\n  <classifier>sources</classifier>", 1)
		}
		if clip != want {
			t.Errorf("%s copied %q, want %q", sel, clip, want)
		}
	}
	if n := b.count(`tr[data-file="core-1.0.pom"] button`); n != 0 {
		t.Errorf("the pom's row has %d buttons, want none", n)
	}
	b.waitFor("delete box apart from the files table", deleteBoxBelowFiles)

	// The history lists what npm and Maven published.
	b.open("/n/acme/history")
	b.see(text("@acme/ui@1.1.0"))
	b.see(text("com.acme:core:1.0"))

	// Narrow window: the npm package screen stacks without overflow.
	b.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	b.open("/n/acme/r/web/npm/@acme/ui")
	b.see(`//tr[@data-version="1.1.0"]`)
	b.waitFor("no horizontal overflow", `document.documentElement.scrollWidth <= window.innerWidth + 1`)
	b.docShot("36-narrow-npm-package", "narrow-npm-package")

	// Narrow, the Maven version's files stack as cards, the delete box
	// still apart below them.
	b.open("/n/acme/r/libs/maven/com.acme/core/1.0")
	b.see(`//tr[@data-file="core-1.0.jar"]`)
	b.waitFor("no horizontal overflow", `document.documentElement.scrollWidth <= window.innerWidth + 1`)
	b.waitFor("narrow delete box apart from the files table", deleteBoxBelowFiles)
	b.shot("37-narrow-maven-version")
}

// deleteBoxBelowFiles holds when the "Delete version" box starts at least
// 8 px below the bottom of the files table (it once sat on its border) and
// they share no pixel.
const deleteBoxBelowFiles = `(() => {
	const files = document.querySelector('table[aria-labelledby="files"]')?.closest(".table-wrap")?.getBoundingClientRect();
	const box = [...document.querySelectorAll(".panel-danger")].find((e) => e.textContent.includes("Delete version"))?.getBoundingClientRect();
	return !!files && !!box && box.top >= files.bottom + 8;
})()`
