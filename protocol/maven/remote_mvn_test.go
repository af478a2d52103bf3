package maven

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/artifact-registry/artifact-registry/store/enum"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// Real mvn through a Maven proxy whose upstream is an independent HTTP
// repository: Debian's /usr/share/maven-repo served by http.FileServer.
// Every repository, plugins included, is mirrored to the proxy, so the
// whole build resolves through it from an empty local repository.
func TestRealMavenThroughRemote(t *testing.T) {
	testtools.RequireMaven(t)
	up := newUpstreamRepo(t, testtools.MavenRepo)
	s := newTestServer(t, serverOpts{rootRouter: true})
	s.remote(t, "acme", "central", up.srv.URL, enum.VisibilityPrivate, mavenRemoteDefaults())
	t.Cleanup(func() { s.checkInvariants(t) })
	e := newMvnEnv(t, s, "")
	e.settings = proxySettings(t, e.dir, s.URL+"/maven/acme/central", s.token(t, "acme", "reader", enum.TokenScopeRead))

	build := func(what string) {
		t.Helper()
		app, m2 := e.project("proxyapp", ""), e.localRepo()
		e.mustMvn(app, m2, "package")
		out := runProxyApp(t, app, filepath.Join(m2, "org/apache/commons/commons-text/1.10.0/commons-text-1.10.0.jar"),
			filepath.Join(m2, "org/apache/commons/commons-lang3/debian/commons-lang3-debian.jar")) // Debian POMs depend on version "debian"
		if out != "Resolved Through The Proxy" {
			t.Fatalf("%s: the app printed %q", what, out)
		}
	}

	// 1. Cold: everything comes from the upstream once.
	build("cold")
	cold := up.count("", "")
	if cold == 0 {
		t.Fatal("the cold build did not reach the upstream")
	}
	jar := "/org/apache/commons/commons-text/1.10.0/commons-text-1.10.0.jar"
	if n := up.count("GET", jar); n != 1 {
		t.Fatalf("commons-text jar fetched %d times upstream", n)
	}
	t.Logf("cold build: %d upstream requests (%d answered 404)", cold, up.statuses(404))

	// 2. Warm, empty local repository: release files are immutable and
	// the misses are remembered, so the upstream is not asked at all.
	build("warm")
	if warm := up.count("", "") - cold; warm != 0 {
		t.Fatalf("the warm build made %d upstream requests", warm)
	}

	// 3. Upstream gone: the same build with an empty local repository
	// still succeeds from the cache.
	up.srv.Close()
	build("upstream stopped")

	// The cached jar is the upstream's, byte for byte, with our checksums.
	want, err := os.ReadFile(filepath.Join(testtools.MavenRepo, jar))
	if err != nil {
		t.Fatal(err)
	}
	got := s.get(t, "/maven/acme/central"+jar, 200)
	if got.body != string(want) {
		t.Fatal("the cached jar differs from the upstream's")
	}
	if sum := s.get(t, "/maven/acme/central"+jar+".sha1", 200).body; sum != hexSum("sha1", want) {
		t.Fatalf("sha1 sidecar %q", sum)
	}
}

// runProxyApp runs the proxy app's Main with its dependencies.
func runProxyApp(t *testing.T, appDir string, deps ...string) string {
	t.Helper()
	cp := filepath.Join(appDir, "target/proxy-app-1.0.0.jar")
	for _, d := range deps {
		cp += ":" + d
	}
	out, err := exec.Command("java", "-cp", cp, "com.example.proxy.Main").CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// mavenRemoteDefaults are the settings of a new proxy in tests: the
// defaults.
func mavenRemoteDefaults() mavenstore.RemoteInput { return mavenstore.RemoteInput{} }
