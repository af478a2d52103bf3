package maven

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// The real-mvn tests drive Debian's Maven 3.8.7 against an in-process
// registry on a loopback port, offline: plugins resolve from
// /usr/share/maven-repo through the file:// mirror of
// testdata/settings.xml (testtools.RequireMaven lists the packages).

// mvnEnv is a workspace with copies of the testdata projects and the
// settings, pointed at a test server.
type mvnEnv struct {
	t           testing.TB
	dir         string
	settings    string
	releasesURL string
	snapsURL    string
}

// newMvnEnv writes settings.xml with password as the <server> password of
// both repositories (an access token, or the admin token).
func newMvnEnv(t testing.TB, s *testServer, password string) *mvnEnv {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata")); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, "settings.xml")
	b, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, bytes.ReplaceAll(b, []byte("@TOKEN@"), []byte(password)), 0o644); err != nil {
		t.Fatal(err)
	}
	return &mvnEnv{t: t, dir: dir, settings: settings,
		releasesURL: s.URL + "/maven/acme/releases", snapsURL: s.URL + "/maven/acme/snapshots"}
}

// project copies a testdata project to a fresh directory, setting the
// library's greeting.
func (e *mvnEnv) project(name, greeting string) string {
	e.t.Helper()
	dst, err := os.MkdirTemp(e.dir, name+"-")
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(e.dir, name))); err != nil {
		e.t.Fatal(err)
	}
	if greeting != "" {
		src := filepath.Join(dst, "src/main/java/com/example/anchor/Greeter.java")
		b, err := os.ReadFile(src)
		if err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(src, bytes.ReplaceAll(b, []byte("GREETING"), []byte(greeting)), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	return dst
}

// localRepo returns a fresh, empty local repository.
func (e *mvnEnv) localRepo() string {
	e.t.Helper()
	d, err := os.MkdirTemp(e.dir, "m2repo-")
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// mvn runs mvn in dir with the settings, the given local repository and
// the repository URLs as properties. It returns the output and whether
// the build succeeded.
func (e *mvnEnv) mvn(dir, localRepo string, args ...string) (string, bool) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	all := append([]string{"-s", e.settings, "-B", "-e", "--no-transfer-progress",
		"-Dmaven.repo.local=" + localRepo, "-Dreleases.url=" + e.releasesURL, "-Dsnapshots.url=" + e.snapsURL}, args...)
	cmd := exec.CommandContext(ctx, "mvn", all...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MAVEN_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	e.t.Logf("mvn %s (in %s): %v, %s", strings.Join(args, " "), filepath.Base(dir), err, time.Since(start).Round(time.Millisecond))
	return string(out), err == nil && strings.Contains(string(out), "BUILD SUCCESS")
}

func (e *mvnEnv) mustMvn(dir, localRepo string, args ...string) string {
	e.t.Helper()
	out, ok := e.mvn(dir, localRepo, args...)
	if !ok {
		e.t.Fatalf("mvn %v failed:\n%s", args, tail(out, 60))
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runApp runs the app's Main with the resolved library on the class path.
func runApp(t *testing.T, appDir, libJar string) string {
	t.Helper()
	out, err := exec.Command("java", "-cp", filepath.Join(appDir, "target/anchor-app-1.0.0.jar")+":"+libJar,
		"com.example.app.Main").CombinedOutput()
	if err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestRealMavenDeployAndResolve(t *testing.T) {
	testtools.RequireMaven(t)
	// Production wiring: the root router of internal/httpserver.
	s := newTestServer(t, serverOpts{rootRouter: true})
	// Releases are private (reads need the Basic challenge round trip),
	// snapshots public.
	s.repo(t, "acme", "releases", enum.FormatMaven, enum.VisibilityPrivate)
	s.repo(t, "acme", "snapshots", enum.FormatMaven, enum.VisibilityPublic)
	t.Cleanup(func() { s.checkInvariants(t) })
	// The settings.xml password is a namespace WRITE access token (it
	// reads too); a READ token's deploy is refused with 403.
	e := newMvnEnv(t, s, s.token(t, "acme", "ci", enum.TokenScopeWrite))
	deployRepo := e.localRepo()

	// 0. A READ token cannot deploy.
	ro := newMvnEnv(t, s, s.token(t, "acme", "reader", enum.TokenScopeRead))
	if out, ok := ro.mvn(ro.project("lib", "refused"), ro.localRepo(), "-Dlib.version=0.9.0", "deploy"); ok || !strings.Contains(out, "403") {
		t.Fatalf("deploy with a READ token: success=%v\n%s", ok, tail(out, 40))
	}

	// 1. mvn deploy of a release.
	lib := e.project("lib", "hello from 1.0.0")
	e.mustMvn(lib, deployRepo, "-Dlib.version=1.0.0", "deploy")
	releaseJar, err := os.ReadFile(filepath.Join(lib, "target/anchor-lib-1.0.0.jar"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.get(t, relBase+"/1.0.0/anchor-lib-1.0.0.jar", http.StatusOK).body; got != string(releaseJar) {
		t.Fatal("the stored release jar differs from the built one")
	}

	// 2. mvn deploy of a SNAPSHOT, twice (builds 1 and 2).
	var snapJar []byte
	for i, greeting := range []string{"hello from snapshot build 1", "hello from snapshot build 2"} {
		p := e.project("lib", greeting)
		e.mustMvn(p, deployRepo, "-Dlib.version=1.1.0-SNAPSHOT", "deploy")
		md := s.get(t, snapBase+"/1.1.0-SNAPSHOT/maven-metadata.xml", http.StatusOK).body
		if !strings.Contains(md, fmt.Sprintf("<buildNumber>%d</buildNumber>", i+1)) {
			t.Fatalf("after SNAPSHOT deploy %d the version metadata is:\n%s", i+1, md)
		}
		if snapJar, err = os.ReadFile(filepath.Join(p, "target/anchor-lib-1.1.0-SNAPSHOT.jar")); err != nil {
			t.Fatal(err)
		}
	}

	// 3. deploy:deploy-file of a third-party jar with a generated POM.
	e.mustMvn(e.dir, deployRepo, "org.apache.maven.plugins:maven-deploy-plugin:3.0.0:deploy-file",
		"-Dfile="+filepath.Join(lib, "target/anchor-lib-1.0.0.jar"), "-DgroupId=com.example.thirdparty",
		"-DartifactId=vendor-lib", "-Dversion=2.3.4", "-Dpackaging=jar", "-DgeneratePom=true",
		"-DrepositoryId=vendor", "-Durl="+e.releasesURL)
	vendor := "/maven/acme/releases/com/example/thirdparty/vendor-lib"
	if got := s.get(t, vendor+"/2.3.4/vendor-lib-2.3.4.jar", http.StatusOK).body; got != string(releaseJar) {
		t.Fatal("deploy-file stored other bytes")
	}
	if md := s.get(t, vendor+"/maven-metadata.xml", http.StatusOK).body; !strings.Contains(md, "<release>2.3.4</release>") {
		t.Fatalf("vendor-lib metadata:\n%s", md)
	}

	// 4. Re-deploying the release with other bytes fails: releases are
	// immutable.
	changed := e.project("lib", "a different 1.0.0")
	out, ok := e.mvn(changed, deployRepo, "-Dlib.version=1.0.0", "deploy")
	if ok || !strings.Contains(out, "409") {
		t.Fatalf("re-deploy of release 1.0.0 with other bytes: success=%v\n%s", ok, tail(out, 40))
	}
	if got := s.get(t, relBase+"/1.0.0/anchor-lib-1.0.0.jar", http.StatusOK).body; got != string(releaseJar) {
		t.Fatal("a refused re-deploy changed the release")
	}

	// 5. A consumer resolves the release (private repository: Basic auth
	// after the challenge) and the SNAPSHOT (latest build) with empty
	// local repositories; checksum policy "fail" verifies every sidecar.
	app := e.project("app", "")
	m2 := e.localRepo()
	e.mustMvn(app, m2, "-Danchor.lib.version=1.0.0", "package")
	got := filepath.Join(m2, "com/example/anchor/anchor-lib/1.0.0/anchor-lib-1.0.0.jar")
	if b, _ := os.ReadFile(got); !bytes.Equal(b, releaseJar) {
		t.Fatal("resolved release jar differs")
	}
	if msg := runApp(t, app, got); msg != "hello from 1.0.0" {
		t.Fatalf("app printed %q", msg)
	}

	app = e.project("app", "")
	m2 = e.localRepo()
	e.mustMvn(app, m2, "-Danchor.lib.version=1.1.0-SNAPSHOT", "package")
	got = filepath.Join(m2, "com/example/anchor/anchor-lib/1.1.0-SNAPSHOT/anchor-lib-1.1.0-SNAPSHOT.jar")
	if b, _ := os.ReadFile(got); !bytes.Equal(b, snapJar) {
		t.Fatal("resolved SNAPSHOT jar is not the latest build")
	}
	if msg := runApp(t, app, got); msg != "hello from snapshot build 2" {
		t.Fatalf("app printed %q", msg)
	}
	if matches, _ := filepath.Glob(filepath.Join(m2, "com/example/anchor/anchor-lib/1.1.0-SNAPSHOT/anchor-lib-1.1.0-*-2.jar")); len(matches) != 1 {
		t.Errorf("build 2 not resolved by its timestamped name: %v", matches)
	}

	// 6. dependency:get of the deploy-file artifact, again from an empty
	// local repository.
	m2 = e.localRepo()
	e.mustMvn(e.dir, m2, "org.apache.maven.plugins:maven-dependency-plugin:3.5.0:get",
		"-Dartifact=com.example.thirdparty:vendor-lib:2.3.4", "-DremoteRepositories=vendor::default::"+e.releasesURL)
	if b, _ := os.ReadFile(filepath.Join(m2, "com/example/thirdparty/vendor-lib/2.3.4/vendor-lib-2.3.4.jar")); !bytes.Equal(b, releaseJar) {
		t.Fatal("dependency:get fetched other bytes")
	}
	// Nothing of ours reached the local repositories other than through
	// the server: the Debian mirror holds none of it.
	_ = filepath.WalkDir(testtools.MavenRepo+"/com/example", func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			t.Errorf("%s exists in the Debian repository", p)
		}
		return filepath.SkipAll
	})
}

// Two real mvn deploys of different versions at once: both versions end
// up in maven-metadata.xml, whatever order their GET-merge-PUT of the
// metadata interleaves in.
func TestRealMavenConcurrentDeploys(t *testing.T) {
	testtools.RequireMaven(t)
	s := newTestServer(t, serverOpts{rootRouter: true})
	s.repo(t, "acme", "releases", enum.FormatMaven, enum.VisibilityPublic)
	s.repo(t, "acme", "snapshots", enum.FormatMaven, enum.VisibilityPublic)
	t.Cleanup(func() { s.checkInvariants(t) })
	e := newMvnEnv(t, s, s.token(t, "acme", "ci", enum.TokenScopeWrite))
	versions := []string{"1.2.0", "1.3.0"}
	var wg sync.WaitGroup
	outs := make([]string, len(versions))
	oks := make([]bool, len(versions))
	for i, v := range versions {
		dir := e.project("lib", "hello from "+v)
		repo := e.localRepo()
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], oks[i] = e.mvn(dir, repo, "-Dlib.version="+v, "deploy")
		}()
	}
	wg.Wait()
	for i := range versions {
		if !oks[i] {
			t.Fatalf("deploy of %s failed:\n%s", versions[i], tail(outs[i], 40))
		}
	}
	md := s.get(t, relBase+"/maven-metadata.xml", http.StatusOK).body
	got := regexp.MustCompile(`<version>([^<]+)</version>`).FindAllStringSubmatch(md, -1)
	if len(got) != 2 || got[0][1] != "1.2.0" || got[1][1] != "1.3.0" || !strings.Contains(md, "<release>1.3.0</release>") {
		t.Fatalf("metadata after concurrent deploys:\n%s", md)
	}
}
