package blobredirect_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// run runs a client and returns its output; a failure fails the test.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// redirects counts the 307 answers to GETs of paths matching pattern in
// the server's request log.
func (e *env) redirects(pattern string) int {
	re := regexp.MustCompile(`method=GET [^\n]*path="?` + regexp.QuoteMeta(pattern) + `[^ \n]* status=307`)
	return len(re.FindAllString(e.logs.String(), -1))
}

// TestRedirectedClients: crane, oras, npm and mvn follow the redirects to
// the object store and get the bytes they asked for (each client checks
// the digest or checksum itself).
func TestRedirectedClients(t *testing.T) {
	e := newEnv(t)
	u, _ := url.Parse(e.URL)
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+filepath.Join(home, ".docker"), "NO_COLOR=1")

	t.Run("crane", func(t *testing.T) {
		crane := ocitools.Crane(t)
		e.Repo("crane", enum.FormatOCI, enum.VisibilityPrivate)
		run(t, home, env, crane, "auth", "login", u.Host, "-u", "ci", "-p", testserver.AdminToken, "--insecure")
		ref := u.Host + "/acme/crane/app:v1"
		layer := filepath.Join(home, "layer.tar")
		writeLayer(t, layer, "hello.txt", "hello through the object store\n")
		run(t, home, env, crane, "append", "--insecure", "-f", layer, "-t", ref)
		before := e.redirects("/v2/acme/crane/app/blobs/")
		out := filepath.Join(home, "app.tar")
		run(t, home, env, crane, "pull", "--insecure", ref, out)
		if n := e.redirects("/v2/acme/crane/app/blobs/") - before; n < 2 {
			t.Fatalf("crane pull: %d blob GETs redirected, want the config and the layer", n)
		}
		if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
			t.Fatalf("crane pull wrote nothing: %v", err)
		}
	})

	t.Run("oras", func(t *testing.T) {
		oras := ocitools.Oras(t)
		e.Repo("oras", enum.FormatOCI, enum.VisibilityPrivate)
		ref := u.Host + "/acme/oras/art:v1"
		auth := []string{"--plain-http", "-u", "ci", "-p", testserver.AdminToken}
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, "readme.md"), []byte("# pulled from the bucket\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, work, env, oras, append([]string{"push", ref, "readme.md:text/markdown"}, auth...)...)
		out := filepath.Join(work, "out")
		run(t, work, env, oras, append([]string{"pull", ref, "-o", out}, auth...)...)
		if b, err := os.ReadFile(filepath.Join(out, "readme.md")); err != nil || string(b) != "# pulled from the bucket\n" {
			t.Fatalf("oras pull: %q %v", b, err)
		}
		if e.redirects("/v2/acme/oras/art/blobs/") == 0 {
			t.Fatal("oras pull: no blob GET redirected")
		}
	})

	t.Run("npm", func(t *testing.T) {
		if _, err := exec.LookPath("npm"); err != nil {
			testtools.Unavailable(t, "the npm CLI is required: "+err.Error())
		}
		e.Repo("js", enum.FormatNpm, enum.VisibilityPrivate)
		e.NpmPublish("js", "redirected-pkg", "1.0.0")
		registry := e.URL + "/npm/acme/js/"
		npmHome := t.TempDir()
		rc := strings.Join([]string{"registry=" + registry, "cache=" + filepath.Join(npmHome, "cache"), "audit=false", "fund=false",
			"update-notifier=false", "progress=false", "loglevel=warn", "//" + u.Host + "/npm/acme/js/:_authToken=" + testserver.AdminToken}, "\n")
		if err := os.WriteFile(filepath.Join(npmHome, ".npmrc"), []byte(rc+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(npmHome, "globalnpmrc"), nil, 0o600)
		var npmEnv []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(strings.ToLower(k), "npm_config_") || k == "HOME" || k == "NODE_OPTIONS" {
				continue
			}
			npmEnv = append(npmEnv, kv)
		}
		npmEnv = append(npmEnv, "HOME="+npmHome, "NPM_CONFIG_USERCONFIG="+filepath.Join(npmHome, ".npmrc"),
			"NPM_CONFIG_GLOBALCONFIG="+filepath.Join(npmHome, "globalnpmrc"), "NO_UPDATE_NOTIFIER=1")
		app := filepath.Join(npmHome, "app")
		_ = os.MkdirAll(app, 0o755)
		_ = os.WriteFile(filepath.Join(app, "package.json"), []byte(`{"name":"app","version":"1.0.0","private":true}`), 0o644)
		run(t, app, npmEnv, "npm", "install", "redirected-pkg@1.0.0")
		b, err := os.ReadFile(filepath.Join(app, "node_modules", "redirected-pkg", "package.json"))
		var pj struct{ Version string }
		if err != nil || json.Unmarshal(b, &pj) != nil || pj.Version != "1.0.0" {
			t.Fatalf("npm install: package.json %q %v", b, err)
		}
		if e.redirects("/npm/acme/js/redirected-pkg/-/") != 1 {
			t.Fatalf("npm install: tarball GET not redirected once")
		}
	})

	t.Run("mvn", func(t *testing.T) {
		testtools.RequireMaven(t)
		e.Repo("mvn", enum.FormatMaven, enum.VisibilityPrivate)
		admin := testserver.Basic(testserver.AdminToken)
		jar := jarBytes(t)
		base := "/maven/acme/mvn/com/example/redirect/lib/1.0/lib-1.0"
		pomBody := []byte(`<project><modelVersion>4.0.0</modelVersion><groupId>com.example.redirect</groupId><artifactId>lib</artifactId><version>1.0</version></project>`)
		for path, body := range map[string][]byte{base + ".pom": pomBody, base + ".jar": jar} {
			if r := e.Do(http.MethodPut, path, admin, body); r.Status != http.StatusCreated {
				t.Fatalf("deploy %s: %d %s", path, r.Status, r.Body)
			}
		}
		work := t.TempDir()
		tpl, err := os.ReadFile(filepath.Join("..", "maven", "testdata", "settings.xml"))
		if err != nil {
			t.Fatal(err)
		}
		settings := filepath.Join(work, "settings.xml")
		_ = os.WriteFile(settings, bytes.ReplaceAll(tpl, []byte("@TOKEN@"), []byte(testserver.AdminToken)), 0o644)
		m2 := filepath.Join(work, "m2")
		mvnEnv := append(os.Environ(), "MAVEN_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto")
		run(t, work, mvnEnv, "mvn", "-s", settings, "-B", "--no-transfer-progress", "-Dmaven.repo.local="+m2,
			"org.apache.maven.plugins:maven-dependency-plugin:3.5.0:get",
			"-Dartifact=com.example.redirect:lib:1.0", "-DremoteRepositories=vendor::default::"+e.URL+"/maven/acme/mvn")
		if b, _ := os.ReadFile(filepath.Join(m2, "com/example/redirect/lib/1.0/lib-1.0.jar")); !bytes.Equal(b, jar) {
			t.Fatal("mvn dependency:get fetched other bytes")
		}
		if e.redirects("/maven/acme/mvn/com/example/redirect/lib/1.0/lib-1.0.jar") != 1 {
			t.Fatal("mvn: the jar GET was not redirected")
		}
	})
}

func writeLayer(t *testing.T, path, name, content string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// jarBytes is a small jar (a zip with a manifest).
func jarBytes(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the bucket\n"), 0o644)
	if _, err := exec.LookPath("jar"); err != nil {
		testtools.Unavailable(t, "the jar tool (a JDK) is required: "+err.Error())
	}
	run(t, dir, os.Environ(), "jar", "cf", "lib.jar", "hello.txt")
	b, err := os.ReadFile(filepath.Join(dir, "lib.jar"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
