package maven

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// overlayMavenRepo is a directory that serves Debian's Maven repository
// (symbolic links) and accepts files of its own under com/: the upstream
// of a test that plants names there.
func overlayMavenRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	entries, err := os.ReadDir(testtools.MavenRepo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src := filepath.Join(testtools.MavenRepo, e.Name())
		if e.Name() != "com" {
			if err := os.Symlink(src, filepath.Join(root, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		sub, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range sub {
			if err := os.MkdirAll(filepath.Join(root, "com"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(src, c.Name()), filepath.Join(root, "com", c.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// editFile replaces old with new in a file (once; it must be there).
func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Real mvn through a Maven virtual repository over a hosted repository
// and a proxy of an independent HTTP repository (Debian's maven-repo,
// plus a planted com.acme:lib 99.0 and com.acme:secret):
//
//   - mvn deploy through the virtual lands in its deploy target;
//   - a build whose every repository is mirrored to the virtual resolves
//     its plugins and commons-text from the proxy and com.acme:lib by a
//     version range from the hosted repository: 1.0, not the upstream's
//     99.0, and the upstream never hears of com/acme (name shadowing);
//   - a direct GET of 99.0 and of a reserved name absent locally
//     (com/acme/** reserved) is not forwarded either.
func TestRealMavenThroughVirtual(t *testing.T) {
	testtools.RequireMaven(t)
	up := newUpstreamRepo(t, overlayMavenRepo(t))
	up.write(t, "com/acme/lib/maven-metadata.xml", packageDoc("com.acme", "lib", "20990101000000", "1.0", "99.0"))
	up.write(t, "com/acme/lib/99.0/lib-99.0.pom", []byte(`<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>com.acme</groupId><artifactId>lib</artifactId><version>99.0</version></project>`))
	up.write(t, "com/acme/lib/99.0/lib-99.0.jar", []byte("not a jar"))
	up.write(t, "com/acme/secret/1.0/secret-1.0.pom", []byte("<project/>"))

	s := newTestServer(t, serverOpts{rootRouter: true})
	s.hosted(t, "acme", "internal")
	s.remote(t, "acme", "central", up.srv.URL, enum.VisibilityPrivate, mavenRemoteDefaults())
	deploy := "internal"
	s.virtual(t, "acme", "all", store.VirtualInput{Upstreams: members("internal", "central"), DeployTo: &deploy,
		ReservedPatterns: []string{"com/acme/**"}})
	t.Cleanup(func() { s.checkInvariants(t) })
	const all = "/maven/acme/all"

	// 1. mvn deploy through the virtual (plugins from the file mirror).
	e := newMvnEnv(t, s, s.token(t, "acme", "ci", enum.TokenScopeWrite))
	e.releasesURL = s.URL + all
	lib := e.project("lib", "internal acme lib")
	editFile(t, filepath.Join(lib, "pom.xml"), "<groupId>com.example.anchor</groupId>\n  <artifactId>anchor-lib</artifactId>",
		"<groupId>com.acme</groupId>\n  <artifactId>lib</artifactId>")
	e.mustMvn(lib, e.localRepo(), "-Dlib.version=1.0", "deploy")
	built, err := os.ReadFile(filepath.Join(lib, "target/lib-1.0.jar"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.get(t, "/maven/acme/internal/com/acme/lib/1.0/lib-1.0.jar", http.StatusOK).body; got != string(built) {
		t.Fatal("the deploy through the virtual did not land in its deploy target")
	}

	// 2. A build resolving everything through the virtual.
	e.settings = proxySettings(t, e.dir, s.URL+all, s.token(t, "acme", "reader", enum.TokenScopeRead))
	app := e.project("proxyapp", "")
	editFile(t, filepath.Join(app, "pom.xml"), "  </dependencies>",
		"    <dependency><groupId>com.acme</groupId><artifactId>lib</artifactId><version>[1.0,)</version></dependency>\n  </dependencies>")
	m2 := e.localRepo()
	e.mustMvn(app, m2, "package")
	out := runProxyApp(t, app, filepath.Join(m2, "org/apache/commons/commons-text/1.10.0/commons-text-1.10.0.jar"),
		filepath.Join(m2, "org/apache/commons/commons-lang3/debian/commons-lang3-debian.jar"))
	if out != "Resolved Through The Proxy" {
		t.Fatalf("the app printed %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(m2, "com/acme/lib/1.0/lib-1.0.jar")); err != nil || !bytes.Equal(b, built) {
		t.Fatalf("com.acme:lib 1.0 not resolved from the hosted upstream: %v", err)
	}
	if _, err := os.Stat(filepath.Join(m2, "com/acme/lib/99.0")); err == nil {
		t.Fatal("the upstream's com.acme:lib 99.0 was resolved")
	}
	if n := up.count("GET", "/org/apache/commons/commons-text/1.10.0/commons-text-1.10.0.jar"); n != 1 {
		t.Fatalf("commons-text fetched %d times upstream", n)
	}

	// 3. Direct requests for the shadowed 99.0 and a reserved name.
	s.get(t, all+"/com/acme/lib/99.0/lib-99.0.jar", http.StatusNotFound)
	s.get(t, all+"/com/acme/lib/99.0/lib-99.0.pom", http.StatusNotFound)
	s.get(t, all+"/com/acme/secret/1.0/secret-1.0.pom", http.StatusNotFound)
	if md := s.get(t, all+"/com/acme/lib/maven-metadata.xml", http.StatusOK).body; strings.Contains(md, "99.0") {
		t.Fatalf("merged metadata lists the upstream's version:\n%s", md)
	}
	if n := up.countPrefix("GET /com/acme") + up.countPrefix("HEAD /com/acme"); n != 0 {
		t.Fatalf("the upstream saw %d requests for com/acme", n)
	}
}
