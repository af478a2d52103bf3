package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
)

// testNpm publishes two versions of a package and a dependent package
// through the proxy, then installs the dependent one into a new project
// with an empty cache.
func testNpm(t *testing.T, c *Cluster, token string) {
	if _, err := exec.LookPath("npm"); err != nil {
		testtools.Unavailable(t, "the npm CLI is needed: "+err.Error())
	}
	registry := c.URL + "/npm/cl/js/"
	home := t.TempDir()
	u, _ := url.Parse(registry)
	rc := strings.Join([]string{"registry=" + registry, "cache=" + filepath.Join(home, "cache"), "audit=false",
		"fund=false", "update-notifier=false", "progress=false", "loglevel=warn",
		"//" + u.Host + u.Path + ":_authToken=" + token}, "\n") + "\n"
	writeFile(t, home, ".npmrc", rc)
	writeFile(t, home, "globalnpmrc", "")
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(strings.ToLower(k), "npm_config_") || k == "HOME" || k == "NODE_OPTIONS" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "NPM_CONFIG_USERCONFIG="+filepath.Join(home, ".npmrc"),
		"NPM_CONFIG_GLOBALCONFIG="+filepath.Join(home, "globalnpmrc"), "NO_UPDATE_NOTIFIER=1")
	npm := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("npm", args...)
		cmd.Dir, cmd.Env = dir, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("npm %s (%s)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	publish := func(name, version string, deps map[string]string) {
		t.Helper()
		dir := filepath.Join(home, "src", name, version)
		pj, _ := json.Marshal(map[string]any{"name": name, "version": version, "main": "index.js",
			"license": "MIT", "dependencies": deps})
		writeFile(t, dir, "package.json", string(pj))
		writeFile(t, dir, "index.js", fmt.Sprintf("module.exports = %q;\n", name+"@"+version))
		npm(dir, "publish")
	}
	publish("cluster-lib", "1.0.0", nil)
	publish("cluster-lib", "1.1.0", nil)
	publish("cluster-app", "2.0.0", map[string]string{"cluster-lib": "^1.0.0"})

	project := filepath.Join(home, "project")
	writeFile(t, project, "package.json", `{"name":"consumer","version":"0.0.0","private":true}`)
	env = append(env, "NPM_CONFIG_CACHE="+filepath.Join(home, "cache2"))
	npm(project, "install", "cluster-app@2.0.0")
	for name, want := range map[string]string{"cluster-app": "cluster-app@2.0.0", "cluster-lib": "cluster-lib@1.1.0"} {
		b, err := os.ReadFile(filepath.Join(project, "node_modules", name, "index.js"))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("installed %s: %q, %v", name, b, err)
		}
	}
}

// testMvn deploys a release and a SNAPSHOT of the test library of the
// Maven protocol's tests through the proxy, then builds the consumer app
// against the release with an empty local repository (checksum policy
// "fail": every sidecar is verified).
func testMvn(t *testing.T, c *Cluster, token string) {
	testtools.RequireMaven(t)
	dir := t.TempDir()
	must(t, os.CopyFS(dir, os.DirFS("../../protocol/maven/testdata")))
	settings := filepath.Join(dir, "settings.xml")
	b, err := os.ReadFile(settings)
	must(t, err)
	must(t, os.WriteFile(settings, bytes.ReplaceAll(b, []byte("@TOKEN@"), []byte(token)), 0o644))
	releases, snapshots := c.URL+"/maven/cl/releases", c.URL+"/maven/cl/snapshots"
	mvn := func(project, localRepo string, args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		all := append([]string{"-s", settings, "-B", "-e", "--no-transfer-progress", "-Dmaven.repo.local=" + localRepo,
			"-Dreleases.url=" + releases, "-Dsnapshots.url=" + snapshots}, args...)
		cmd := exec.CommandContext(ctx, "mvn", all...)
		cmd.Dir = project
		cmd.Env = append(os.Environ(), "MAVEN_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("mvn %s (%s)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		if err != nil || !strings.Contains(string(out), "BUILD SUCCESS") {
			t.Fatalf("mvn %v: %v\n%s", args, err, lastLines(string(out), 60))
		}
	}
	copyProject := func(name, greeting string) string {
		t.Helper()
		dst, err := os.MkdirTemp(dir, name+"-")
		must(t, err)
		must(t, os.CopyFS(dst, os.DirFS(filepath.Join(dir, name))))
		if greeting != "" {
			src := filepath.Join(dst, "src/main/java/com/example/anchor/Greeter.java")
			b, err := os.ReadFile(src)
			must(t, err)
			must(t, os.WriteFile(src, bytes.ReplaceAll(b, []byte("GREETING"), []byte(greeting)), 0o644))
		}
		return dst
	}
	deployRepo := t.TempDir()
	lib := copyProject("lib", "hello from a cluster")
	mvn(lib, deployRepo, "-Dlib.version=1.0.0", "deploy")
	mvn(copyProject("lib", "hello from a snapshot"), deployRepo, "-Dlib.version=1.1.0-SNAPSHOT", "deploy")
	jar, err := os.ReadFile(filepath.Join(lib, "target/anchor-lib-1.0.0.jar"))
	must(t, err)

	m2 := t.TempDir()
	mvn(copyProject("app", ""), m2, "-Danchor.lib.version=1.0.0", "package")
	got, err := os.ReadFile(filepath.Join(m2, "com/example/anchor/anchor-lib/1.0.0/anchor-lib-1.0.0.jar"))
	if err != nil || !bytes.Equal(got, jar) {
		t.Fatalf("the resolved release jar differs from the deployed one (%v)", err)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
