package maven

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

const (
	relBase  = "/maven/acme/releases/com/example/anchor/anchor-lib"
	snapBase = "/maven/acme/snapshots/com/example/anchor/anchor-lib"
)

func newMavenServer(t *testing.T, so ...serverOpts) *testServer {
	t.Helper()
	s := newTestServer(t, so...)
	s.repo(t, "acme", "releases", enum.FormatMaven, enum.VisibilityPublic)
	s.repo(t, "acme", "snapshots", enum.FormatMaven, enum.VisibilityPublic)
	t.Cleanup(func() { s.checkInvariants(t) })
	return s
}

func pom(version string) []byte {
	return []byte(`<project><modelVersion>4.0.0</modelVersion><groupId>com.example.anchor</groupId>` +
		`<artifactId>anchor-lib</artifactId><version>` + version + `</version></project>`)
}

func TestDeployAndResolveRelease(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	jar := []byte("PK\x03\x04 pretend this is a jar 1.0.0")
	v := relBase + "/1.0.0/anchor-lib-1.0.0"
	s.get(t, relBase+"/maven-metadata.xml", http.StatusNotFound)
	s.deployFile(t, v+".pom", pom("1.0.0"))
	s.deployFile(t, v+".jar", jar)

	// Files and every checksum sidecar, served from the stored digests.
	r := s.get(t, v+".jar", http.StatusOK)
	if r.body != string(jar) {
		t.Fatalf("jar body %q", r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/java-archive" {
		t.Errorf("content type %q", ct)
	}
	if r.header.Get("X-Checksum-Sha1") != hexSum("sha1", jar) || r.header.Get("ETag") != `"`+hexSum("sha1", jar)+`"` {
		t.Errorf("checksum headers %v", r.header)
	}
	for _, alg := range []string{"md5", "sha1", "sha256", "sha512"} {
		if got := s.get(t, v+".jar."+alg, http.StatusOK).body; got != hexSum(alg, jar) {
			t.Errorf("%s: %q", alg, got)
		}
	}
	head := s.do(t, http.MethodHead, v+".jar", nil, false)
	if head.status != http.StatusOK || head.body != "" || head.header.Get("Content-Length") != fmt.Sprint(len(jar)) {
		t.Errorf("HEAD: %d %q %v", head.status, head.body, head.header)
	}
	rng := s.do(t, http.MethodGet, v+".jar", nil, false, "Range", "bytes=4-9")
	if rng.status != http.StatusPartialContent || rng.body != string(jar[4:10]) {
		t.Errorf("range: %d %q", rng.status, rng.body)
	}

	// The server's metadata exists as soon as the version does.
	md := s.get(t, relBase+"/maven-metadata.xml", http.StatusOK).body
	for _, want := range []string{"<groupId>com.example.anchor</groupId>", "<artifactId>anchor-lib</artifactId>",
		"<latest>1.0.0</latest>", "<release>1.0.0</release>", "<version>1.0.0</version>", "<lastUpdated>"} {
		if !strings.Contains(md, want) {
			t.Errorf("metadata lacks %s:\n%s", want, md)
		}
	}
	if got := s.get(t, relBase+"/maven-metadata.xml.sha1", http.StatusOK).body; got != hexSum("sha1", []byte(md)) {
		t.Errorf("metadata sha1 %s does not describe the served document", got)
	}
	// The client's merge is accepted (201 or 200) and checked, but the
	// server keeps its own document.
	s.put(t, relBase+"/maven-metadata.xml", []byte(md), http.StatusOK)
	s.put(t, relBase+"/maven-metadata.xml.sha1", []byte(hexSum("sha1", []byte(md))), http.StatusOK)

	// Idempotent re-deploy of identical bytes; different bytes conflict.
	s.put(t, v+".jar", jar, http.StatusOK)
	other := []byte(strings.Replace(string(jar), "1.0.0", "9.9.9", 1))
	if r := s.do(t, http.MethodPut, v+".jar", other, true); r.status != http.StatusConflict ||
		strings.HasPrefix(r.body, "store") || !strings.Contains(r.body, "releases are immutable") {
		t.Fatalf("re-deploy with other bytes of the same size: %d %q; want 409 saying why, without internal prefixes", r.status, r.body)
	}
	if r := s.do(t, http.MethodPut, v+".jar", append(other, 'x'), true); r.status != http.StatusConflict {
		t.Fatalf("re-deploy with another size: %d %s", r.status, r.body)
	}
	if got := s.get(t, v+".jar", http.StatusOK).body; got != string(jar) {
		t.Fatal("a refused re-deploy changed the file")
	}
	// Missing files and checksums are 404.
	s.get(t, relBase+"/9.9.9/anchor-lib-9.9.9.pom", http.StatusNotFound)
	s.get(t, v+"-sources.jar.sha1", http.StatusNotFound)
	// Anonymous reads of a public repository need no credentials.
	if r := s.do(t, http.MethodGet, v+".pom", nil, false); r.status != http.StatusOK || r.body != string(pom("1.0.0")) {
		t.Errorf("anonymous GET: %d", r.status)
	}
}

func TestReleaseRedeployOption(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t, serverOpts{maven: Options{AllowReleaseRedeploy: true}})
	v := relBase + "/1.0.0/anchor-lib-1.0.0.jar"
	s.put(t, v, []byte("one"), http.StatusCreated)
	s.put(t, v, []byte("two!"), http.StatusOK)
	if got := s.get(t, v, http.StatusOK).body; got != "two!" {
		t.Fatalf("got %q", got)
	}
	if got := s.get(t, v+".sha1", http.StatusOK).body; got != hexSum("sha1", []byte("two!")) {
		t.Fatalf("sha1 %q", got)
	}
}

func TestChecksumSidecarsAndHeaders(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	v := relBase + "/1.0.0/anchor-lib-1.0.0.jar"
	jar := []byte("jar bytes")
	s.put(t, v, jar, http.StatusCreated)
	// Accepted forms: bare hex, trailing newline, upper case, sha1sum style.
	for _, body := range []string{hexSum("sha1", jar), hexSum("sha1", jar) + "\n",
		strings.ToUpper(hexSum("sha1", jar)), hexSum("sha1", jar) + "  anchor-lib-1.0.0.jar\n"} {
		s.put(t, v+".sha1", []byte(body), http.StatusOK)
	}
	s.put(t, v+".sha256", []byte(hexSum("sha256", jar)), http.StatusOK)
	s.put(t, v+".sha512", []byte(hexSum("sha512", jar)), http.StatusOK)
	// A mismatch is refused, a malformed value is a bad request.
	if r := s.do(t, http.MethodPut, v+".sha1", []byte(hexSum("sha1", []byte("other"))), true); r.status != http.StatusConflict {
		t.Errorf("sha1 mismatch: %d %s", r.status, r.body)
	}
	if r := s.do(t, http.MethodPut, v+".md5", []byte(hexSum("md5", []byte("other"))), true); r.status != http.StatusConflict {
		t.Errorf("md5 mismatch: %d %s", r.status, r.body)
	}
	if r := s.do(t, http.MethodPut, v+".sha1", []byte("deadbeef"), true); r.status != http.StatusBadRequest {
		t.Errorf("short sha1: %d %s", r.status, r.body)
	}
	// A checksum of a file that is not stored.
	if r := s.do(t, http.MethodPut, relBase+"/1.0.0/anchor-lib-1.0.0.pom.sha1", []byte(hexSum("sha1", jar)), true); r.status != http.StatusConflict {
		t.Errorf("checksum of a missing file: %d %s", r.status, r.body)
	}
	// Sidecars are never stored as files.
	if n := s.count(t, `SELECT count(*) FROM maven_files WHERE file_name LIKE '%.sha1' OR file_name LIKE '%.md5'`); n != 0 {
		t.Errorf("%d sidecar rows", n)
	}

	// Checksum headers on the upload itself: a mismatch stores nothing.
	w := relBase + "/2.0.0/anchor-lib-2.0.0.jar"
	bad := s.do(t, http.MethodPut, w, []byte("two"), true, "X-Checksum-Sha1", hexSum("sha1", []byte("not two")))
	if bad.status != http.StatusConflict {
		t.Fatalf("header mismatch: %d %s", bad.status, bad.body)
	}
	s.get(t, w, http.StatusNotFound)
	if n := s.count(t, `SELECT count(*) FROM maven_versions WHERE version = '2.0.0'`); n != 0 {
		t.Errorf("a refused upload created the version")
	}
	s.do(t, http.MethodPut, w, []byte("two"), true, "X-Checksum-Sha1", hexSum("sha1", []byte("two")),
		"X-Checksum-Sha256", hexSum("sha256", []byte("two")))
	s.get(t, w, http.StatusOK)
}

func TestMetadataIsServerAuthoritative(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	for _, v := range []string{"1.0.0", "1.0.1"} {
		s.deployFile(t, relBase+"/"+v+"/anchor-lib-"+v+".pom", pom(v))
	}
	// A client that re-deployed the old release would write
	// <release>1.0.0</release> and could have lost 1.0.1 in a race.
	stale := `<?xml version="1.0" encoding="UTF-8"?><metadata><groupId>com.example.anchor</groupId>` +
		`<artifactId>anchor-lib</artifactId><versioning><release>1.0.0</release><versions><version>1.0.0</version>` +
		`</versions><lastUpdated>20200101000000</lastUpdated></versioning></metadata>`
	s.put(t, relBase+"/maven-metadata.xml", []byte(stale), http.StatusOK)
	s.put(t, relBase+"/maven-metadata.xml.sha1", []byte(hexSum("sha1", []byte(stale))), http.StatusOK)
	md := s.get(t, relBase+"/maven-metadata.xml", http.StatusOK).body
	if !strings.Contains(md, "<release>1.0.1</release>") || !strings.Contains(md, "<version>1.0.0</version>") ||
		!strings.Contains(md, "<version>1.0.1</version>") {
		t.Fatalf("metadata:\n%s", md)
	}
	// Documents that do not describe the path are refused.
	for name, doc := range map[string]string{
		"other artifact": strings.Replace(stale, "anchor-lib", "other", 1),
		"other group":    strings.Replace(stale, "com.example.anchor", "org.evil", 1),
		"not xml":        "this is not xml",
		"not metadata":   "<project/>",
		"bad version":    strings.Replace(stale, "<version>1.0.0</version>", "<version>../x</version>", 1),
	} {
		if r := s.do(t, http.MethodPut, relBase+"/maven-metadata.xml", []byte(doc), true); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	// Metadata of a package with nothing stored.
	if r := s.do(t, http.MethodPut, "/maven/acme/releases/com/example/nothing/maven-metadata.xml",
		[]byte(strings.ReplaceAll(strings.ReplaceAll(stale, "anchor-lib", "nothing"), "com.example.anchor", "com.example")), true); r.status != http.StatusConflict {
		t.Errorf("metadata of nothing: %d %s", r.status, r.body)
	}
	// Group-level plugin metadata is accepted and ignored.
	plugins := `<metadata><plugins><plugin><name>x</name><prefix>x</prefix><artifactId>x-maven-plugin</artifactId></plugin></plugins></metadata>`
	s.put(t, "/maven/acme/releases/com/example/maven-metadata.xml", []byte(plugins), http.StatusOK)
	if n := s.count(t, `SELECT count(*) FROM maven_packages`); n != 1 {
		t.Errorf("%d packages", n)
	}
}

func TestSnapshotDeployAndResolve(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	vdir := snapBase + "/1.1.0-SNAPSHOT"
	s.get(t, vdir+"/maven-metadata.xml", http.StatusNotFound)
	deployBuild := func(ts string, build int, jar []byte) {
		t.Helper()
		name := fmt.Sprintf("%s/anchor-lib-1.1.0-%s-%d", vdir, ts, build)
		s.deployFile(t, name+".pom", pom("1.1.0-SNAPSHOT"))
		s.deployFile(t, name+".jar", jar)
		s.deployFile(t, name+"-sources.jar", append([]byte("sources "), jar...))
		clientDoc := fmt.Sprintf(`<metadata modelVersion="1.1.0"><groupId>com.example.anchor</groupId><artifactId>anchor-lib</artifactId>`+
			`<versioning><snapshot><timestamp>%s</timestamp><buildNumber>%d</buildNumber></snapshot></versioning>`+
			`<version>1.1.0-SNAPSHOT</version></metadata>`, ts, build)
		s.put(t, vdir+"/maven-metadata.xml", []byte(clientDoc), map[bool]int{true: http.StatusCreated, false: http.StatusOK}[build == 1])
		s.put(t, vdir+"/maven-metadata.xml.sha1", []byte(hexSum("sha1", []byte(clientDoc))), http.StatusOK)
		s.put(t, snapBase+"/maven-metadata.xml", []byte(`<metadata><groupId>com.example.anchor</groupId><artifactId>anchor-lib</artifactId></metadata>`), http.StatusOK)
	}
	deployBuild("20261129.210808", 1, []byte("snapshot build one"))
	md := s.get(t, vdir+"/maven-metadata.xml", http.StatusOK).body
	if !strings.Contains(md, "<buildNumber>1</buildNumber>") || !strings.Contains(md, "<value>1.1.0-20261129.210808-1</value>") {
		t.Fatalf("version metadata after build 1:\n%s", md)
	}
	deployBuild("20261129.210811", 2, []byte("snapshot build two"))
	md = s.get(t, vdir+"/maven-metadata.xml", http.StatusOK).body
	for _, want := range []string{"<timestamp>20261129.210811</timestamp>", "<buildNumber>2</buildNumber>",
		"<lastUpdated>20261129210811</lastUpdated>", "<classifier>sources</classifier>",
		"<extension>jar</extension>\n        <value>1.1.0-20261129.210811-2</value>",
		"<extension>pom</extension>\n        <value>1.1.0-20261129.210811-2</value>"} {
		if !strings.Contains(md, want) {
			t.Errorf("version metadata lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "210808-1</value>") {
		t.Errorf("version metadata still points at build 1:\n%s", md)
	}
	if got := s.get(t, vdir+"/maven-metadata.xml.sha1", http.StatusOK).body; got != hexSum("sha1", []byte(md)) {
		t.Error("version metadata sha1 does not describe the document")
	}
	// Package metadata lists the SNAPSHOT once, without a release.
	pm := s.get(t, snapBase+"/maven-metadata.xml", http.StatusOK).body
	if strings.Count(pm, "<version>1.1.0-SNAPSHOT</version>") != 1 || strings.Contains(pm, "<release>") {
		t.Errorf("package metadata:\n%s", pm)
	}
	// Old builds stay; the plain -SNAPSHOT name serves the latest build.
	s.get(t, vdir+"/anchor-lib-1.1.0-20261129.210808-1.jar", http.StatusOK)
	if got := s.get(t, vdir+"/anchor-lib-1.1.0-SNAPSHOT.jar", http.StatusOK).body; got != "snapshot build two" {
		t.Errorf("-SNAPSHOT.jar served %q", got)
	}
	if got := s.get(t, vdir+"/anchor-lib-1.1.0-SNAPSHOT-sources.jar.sha1", http.StatusOK).body; got != hexSum("sha1", []byte("sources snapshot build two")) {
		t.Errorf("-SNAPSHOT-sources.jar.sha1 %q", got)
	}
	s.get(t, vdir+"/anchor-lib-1.1.0-SNAPSHOT-javadoc.jar", http.StatusNotFound)
	// SNAPSHOT files may be replaced.
	s.put(t, vdir+"/anchor-lib-1.1.0-20261129.210811-2.jar", []byte("rebuilt"), http.StatusOK)
	if got := s.get(t, vdir+"/anchor-lib-1.1.0-SNAPSHOT.jar", http.StatusOK).body; got != "rebuilt" {
		t.Errorf("replaced snapshot file served %q", got)
	}
	// A version-level document for a release is not a thing.
	s.deployFile(t, relBase+"/1.0.0/anchor-lib-1.0.0.pom", pom("1.0.0"))
	if r := s.do(t, http.MethodPut, relBase+"/1.0.0/maven-metadata.xml", []byte(`<metadata><artifactId>anchor-lib</artifactId></metadata>`), true); r.status != http.StatusBadRequest {
		t.Errorf("release version metadata: %d %s", r.status, r.body)
	}
}

// Two deploys of different versions at once: each does what mvn does
// (files, then GET-merge-PUT of maven-metadata.xml), and the final
// document lists every version whatever the interleaving.
func TestConcurrentDeploysKeepEveryVersion(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	const n = 8
	versionRE := regexp.MustCompile(`<version>([^<]+)</version>`)
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := fmt.Sprintf("%d.%d.0", round+1, i)
				if err := clientDeploy(s, v, versionRE); err != nil {
					errs <- fmt.Errorf("%s: %w", v, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		md := s.get(t, relBase+"/maven-metadata.xml", http.StatusOK).body
		got := versionRE.FindAllStringSubmatch(md, -1)
		if len(got) != n*(round+1) {
			t.Fatalf("round %d: metadata lists %d versions, want %d:\n%s", round, len(got), n*(round+1), md)
		}
		if want := fmt.Sprintf("<release>%d.%d.0</release>", round+1, n-1); !strings.Contains(md, want) {
			t.Fatalf("round %d: metadata lacks %s:\n%s", round, want, md)
		}
	}
}

// clientDeploy deploys one version the way mvn does, merging the metadata
// on the client.
func clientDeploy(s *testServer, v string, versionRE *regexp.Regexp) error {
	do := func(method, path string, body []byte) (int, string, error) {
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(string(body)))
		req.SetBasicAuth("deployer", testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, err = fmt.Fprint(&b, readAll(resp))
		return resp.StatusCode, b.String(), err
	}
	base := relBase + "/" + v + "/anchor-lib-" + v
	for _, f := range []struct {
		name string
		body []byte
	}{{base + ".pom", pom(v)}, {base + ".jar", []byte("jar " + v)}} {
		if st, body, err := do(http.MethodPut, f.name, f.body); err != nil || st != http.StatusCreated {
			return fmt.Errorf("PUT %s: %d %s %v", f.name, st, body, err)
		}
		if st, body, err := do(http.MethodPut, f.name+".sha1", []byte(hexSum("sha1", f.body))); err != nil || st != http.StatusOK {
			return fmt.Errorf("PUT %s.sha1: %d %s %v", f.name, st, body, err)
		}
	}
	st, cur, err := do(http.MethodGet, relBase+"/maven-metadata.xml", nil)
	if err != nil || (st != http.StatusOK && st != http.StatusNotFound) {
		return fmt.Errorf("GET metadata: %d %v", st, err)
	}
	versions := []string{}
	for _, m := range versionRE.FindAllStringSubmatch(cur, -1) {
		versions = append(versions, m[1])
	}
	versions = append(versions, v)
	doc := `<metadata><groupId>com.example.anchor</groupId><artifactId>anchor-lib</artifactId><versioning><release>` + v +
		`</release><versions><version>` + strings.Join(versions, "</version><version>") + `</version></versions></versioning></metadata>`
	if st, body, err := do(http.MethodPut, relBase+"/maven-metadata.xml", []byte(doc)); err != nil || (st != http.StatusOK && st != http.StatusCreated) {
		return fmt.Errorf("PUT metadata: %d %s %v", st, body, err)
	}
	return nil
}

func readAll(resp *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	s.repo(t, "acme", "private", enum.FormatMaven, enum.VisibilityPrivate)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPublic)
	priv := "/maven/acme/private/com/example/x/1.0/x-1.0.jar"

	// Writes need the admin token, sent pre-emptively by mvn.
	for _, hdr := range [][]string{nil, {"Authorization", "Basic " + basic("deployer", "wrong")}, {"Authorization", "Bearer wrong"}} {
		r := s.do(t, http.MethodPut, priv, []byte("x"), false, hdr...)
		if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != `Basic realm="artifact-registry"` {
			t.Errorf("PUT with %v: %d %v", hdr, r.status, r.header)
		}
	}
	if r := s.do(t, http.MethodPut, priv, []byte("x"), false, "Authorization", "Bearer "+testToken); r.status != http.StatusCreated {
		t.Fatalf("PUT with Bearer: %d %s", r.status, r.body)
	}
	// Private reads challenge anonymous clients (mvn retries with Basic).
	r := s.do(t, http.MethodGet, priv, nil, false)
	if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic ") {
		t.Errorf("anonymous private GET: %d %v", r.status, r.header)
	}
	if r := s.do(t, http.MethodGet, priv, nil, true); r.status != http.StatusOK || r.body != "x" {
		t.Errorf("authenticated private GET: %d", r.status)
	}
	// Anonymous clients cannot tell missing from private.
	if r := s.do(t, http.MethodGet, "/maven/acme/nope/com/example/x/1.0/x-1.0.jar", nil, false); r.status != http.StatusUnauthorized {
		t.Errorf("anonymous GET of a missing repository: %d", r.status)
	}
	if r := s.do(t, http.MethodGet, "/maven/nobody/nope/com/example/x/1.0/x-1.0.jar", nil, true); r.status != http.StatusNotFound {
		t.Errorf("admin GET of a missing namespace: %d", r.status)
	}
	if r := s.do(t, http.MethodGet, "/maven/acme/images/com/example/x/1.0/x-1.0.jar", nil, true); r.status != http.StatusNotFound {
		t.Errorf("GET from a container repository: %d", r.status)
	}
	// Invalid credentials are refused even on public reads.
	if r := s.do(t, http.MethodGet, relBase+"/maven-metadata.xml", nil, false, "Authorization", "Basic "+basic("a", "b")); r.status != http.StatusUnauthorized {
		t.Errorf("public GET with a wrong password: %d", r.status)
	}
	if r := s.do(t, http.MethodDelete, priv, nil, true); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") == "" {
		t.Errorf("DELETE: %d %v", r.status, r.header)
	}
	// A suspended namespace serves reads, refuses writes.
	if _, err := s.Store.SetNamespaceCondition(context.Background(), "acme", store.ConditionSuspended, true); err != nil {
		t.Fatal(err)
	}
	if r := s.do(t, http.MethodPut, "/maven/acme/private/com/example/x/1.1/x-1.1.jar", []byte("y"), true); r.status != http.StatusForbidden {
		t.Errorf("PUT in a suspended namespace: %d", r.status)
	}
	if r := s.do(t, http.MethodGet, priv, nil, true); r.status != http.StatusOK {
		t.Errorf("GET in a suspended namespace: %d", r.status)
	}
}

func basic(user, pass string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, pass)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

func TestBadInputIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	for _, root := range []bool{false, true} {
		t.Run(map[bool]string{false: "standalone", true: "root-router"}[root], func(t *testing.T) {
			s := newMavenServer(t, serverOpts{rootRouter: root})
			paths := []string{
				"/maven/acme/releases/com/example/../../../etc/passwd",
				"/maven/acme/releases/com/example/anchor-lib/1.0/../../x/1.0/x-1.0.jar",
				"/maven/acme/releases/com/%2e%2e/anchor-lib/1.0/anchor-lib-1.0.jar",
				"/maven/acme/releases/com/%2E%2E/%2e%2e/anchor-lib/1.0/anchor-lib-1.0.jar",
				"/maven/acme/releases/com/example/anchor-lib/1.0/%2e%2e%2fx-1.0.jar",
				"/maven/acme/releases/com/example/anchor-lib/1.0/..%2Fanchor-lib-1.0.jar",
				"/maven/acme/releases//etc/passwd/1.0/passwd-1.0.jar",
				"/maven/acme/releases/%2Fetc/anchor-lib/1.0/anchor-lib-1.0.jar",
				"/maven/acme/releases/com/example/anchor-lib/1.0/%5C..%5Canchor-lib-1.0.jar",
				"/maven/acme/releases/./com/anchor-lib/1.0/anchor-lib-1.0.jar",
			}
			invalid := []string{
				"/maven/acme/releases/anchor-lib-1.0.jar",                                  // no coordinates
				"/maven/acme/releases/anchor-lib/1.0/anchor-lib-1.0.jar",                   // no group
				"/maven/acme/releases/com/example/anchor-lib/1.0/other-1.0.jar",            // file of another artifact
				"/maven/acme/releases/com/example/anchor-lib/1.0/anchor-lib-2.0.jar",       // file of another version
				"/maven/acme/releases/com/example/anchor%20lib/1.0/anchor%20lib-1.0.jar",   // space in artifactId
				"/maven/acme/releases/com/ex$ample/anchor-lib/1.0/anchor-lib-1.0.jar",      // bad group char
				"/maven/acme/releases/com/example/anchor-lib/1:0/anchor-lib-1:0.jar",       // bad version char
				"/maven/acme/releases/com.example/anchor-lib/1.0/anchor-lib-1.0.jar",       // dotted group segment
				"/maven/acme/releases/com/example/anchor-lib/1.0/anchor-lib-1.0.jar%00",    // NUL
				"/maven/acme/releases/com/example/anchor-lib/.hidden/anchor-lib-.hidden.x", // leading dot
				"/maven/acme/releases/com/example/anchor-lib/1.0/anchor-lib-1.0",           // no extension
			}
			body := []byte("payload")
			for _, p := range paths {
				r := s.do(t, http.MethodPut, p, body, true)
				if root {
					// The root router cleans dot segments and double
					// slashes with a 301 before any route matches (see
					// Mount); whatever it does, nothing may be stored.
					if r.status/100 == 2 {
						t.Errorf("PUT %s: %d", p, r.status)
					}
				} else if r.status != http.StatusBadRequest {
					t.Errorf("PUT %s: %d %s, want 400", p, r.status, r.body)
				}
				if g := s.do(t, http.MethodGet, p, nil, true); g.status/100 == 2 {
					t.Errorf("GET %s: %d", p, g.status)
				}
			}
			for _, p := range invalid {
				if r := s.do(t, http.MethodPut, p, body, true); r.status != http.StatusBadRequest {
					t.Errorf("PUT %s: %d %s, want 400", p, r.status, r.body)
				}
			}
			for _, table := range []string{"maven_packages", "maven_versions", "maven_files", "blob_storage_blobs", "upload_sessions"} {
				if n := s.count(t, "SELECT count(*) FROM "+table); n != 0 {
					t.Errorf("%s holds %d rows after refused uploads", table, n)
				}
			}
		})
	}
}

func TestInterruptedUploadWritesNothing(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	// Content-Length says more than the body holds: the server sees an
	// unexpected EOF, answers 400 and keeps nothing.
	req, _ := http.NewRequest(http.MethodPut, s.URL+relBase+"/1.0.0/anchor-lib-1.0.0.jar", strings.NewReader("short"))
	req.ContentLength = 1000
	req.SetBasicAuth("deployer", testToken)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			t.Fatalf("truncated upload: %d", resp.StatusCode)
		}
	}
	// A size mismatch announced by the client.
	for _, table := range []string{"maven_packages", "maven_files", "blob_storage_blobs", "upload_sessions"} {
		if n := s.count(t, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%s holds %d rows after an interrupted upload", table, n)
		}
	}
}

func TestVersionSizeAndFileRows(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	s.deployFile(t, relBase+"/1.0.0/anchor-lib-1.0.0.pom", pom("1.0.0"))
	s.deployFile(t, relBase+"/1.0.0/anchor-lib-1.0.0.jar", []byte("0123456789"))
	s.deployFile(t, relBase+"/1.0.0/anchor-lib-1.0.0-sources.jar", []byte("01234"))
	want := int64(len(pom("1.0.0")) + 15)
	if got := s.count(t, `SELECT size_bytes FROM maven_versions WHERE version = '1.0.0'`); got != want {
		t.Errorf("size_bytes %d, want %d", got, want)
	}
	// Package-level metadata is a maven_files row with maven_version_id NULL.
	if n := s.count(t, `SELECT count(*) FROM maven_files WHERE maven_version_id IS NULL AND file_name = 'maven-metadata.xml'`); n != 1 {
		t.Errorf("%d package-level metadata rows", n)
	}
	// Identical bytes across files and repositories are stored once.
	s.put(t, "/maven/acme/snapshots/com/example/anchor/anchor-lib/1.0.0/anchor-lib-1.0.0.jar", []byte("0123456789"), http.StatusCreated)
	if n := s.count(t, `SELECT count(*) FROM blob_storage_blobs WHERE size = 10`); n != 1 {
		t.Errorf("%d blobs for one content", n)
	}
	// Downloads of version files are buffered counters; checksums,
	// metadata, HEAD and ranges are not downloads.
	s.get(t, relBase+"/1.0.0/anchor-lib-1.0.0.jar", http.StatusOK)
	s.get(t, relBase+"/1.0.0/anchor-lib-1.0.0.pom", http.StatusOK)
	s.get(t, relBase+"/1.0.0/anchor-lib-1.0.0.jar.sha1", http.StatusOK)
	s.get(t, relBase+"/maven-metadata.xml", http.StatusOK)
	s.do(t, http.MethodHead, relBase+"/1.0.0/anchor-lib-1.0.0.jar", nil, true)
	s.do(t, http.MethodGet, relBase+"/1.0.0/anchor-lib-1.0.0.jar", nil, true, "Range", "bytes=0-1")
	s.counts.Flush()
	if n := s.count(t, `SELECT COALESCE(sum(delta), 0) FROM counter_deltas WHERE target = 0 AND field = 1`); n != 2 {
		t.Errorf("downloads_count deltas %d, want 2", n)
	}
	if n := s.count(t, `SELECT count(*) FROM counter_deltas WHERE target IN (4, 5) AND field = 7 AND observed_at IS NOT NULL`); n != 4 {
		t.Errorf("%d last_downloaded_at deltas, want 4", n)
	}
	vs, err := mavenstore.New(s.Store).Versions(context.Background(), mustTarget(t, s, "releases"), "com.example.anchor", "anchor-lib")
	if err != nil || len(vs) != 1 || vs[0] != "1.0.0" {
		t.Errorf("versions %v %v", vs, err)
	}
}

func mustTarget(t *testing.T, s *testServer, repo string) *mavenstore.Target {
	t.Helper()
	tg, err := mavenstore.New(s.Store).ResolveTarget(context.Background(), "acme", repo)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}
