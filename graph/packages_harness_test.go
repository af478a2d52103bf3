package graph

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/protocol/maven"
	"github.com/artifact-registry/artifact-registry/protocol/npm"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// pkgAPI is the GraphQL API next to the real npm and Maven protocol
// handlers on one server, over one store with file:// object storage:
// tests publish and deploy the way clients do, then read and change the
// data through GraphQL.
type pkgAPI struct {
	*testAPI
	mu       *sync.Mutex
	tarballs map[string][]byte // name@version -> tarball bytes (repository js)
}

// with returns the API bound to another (sub)test for failures.
func (a *pkgAPI) with(t testing.TB) *pkgAPI {
	return &pkgAPI{testAPI: a.testAPI.with(t), mu: a.mu, tarballs: a.tarballs}
}

func newPkgAPI(t testing.TB) *pkgAPI {
	t.Helper()
	return newPkgAPIWithHook(t, nil)
}

// newPkgAPIWithHook is newPkgAPI with an npm write hook on the GraphQL
// handler (the npm protocol has none, so every call comes from the API).
func newPkgAPIWithHook(t testing.TB, hook npmstore.WriteHook) *pkgAPI {
	t.Helper()
	api := newStoreAPI(t, true)
	quiet := testsupport.Discard()
	r := mux.NewRouter()
	authn := auth.New(api.st, auth.Options{AdminToken: adminToken, Logger: quiet})
	Mount(r, api.st, Options{Auth: authn, Logger: testsupport.Errors(), NpmWriteHook: hook})
	npm.Mount(r, api.st, npm.Options{Auth: authn, Logger: quiet})
	maven.Mount(r, api.st, maven.Options{Auth: authn, Logger: quiet})
	api.serve(r)
	a := &pkgAPI{testAPI: api, mu: &sync.Mutex{}, tarballs: map[string][]byte{}}
	a.createNamespace("acme")
	a.createRepository("acme", "js", "NPM", "PUBLIC")
	a.createRepository("acme", "jvm", "MAVEN", "PRIVATE")
	return a
}

// do sends an HTTP request with the admin token to the protocol side.
func (a *pkgAPI) do(method, path string, body []byte) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil && strings.HasPrefix(path, "/npm/") {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// ---- npm ---------------------------------------------------------------

// npmTarball builds a tarball as npm pack does.
func npmTarball(t testing.TB, pkgJSON map[string]any) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	pj, _ := json.MarshalIndent(pkgJSON, "", "  ")
	for name, content := range map[string][]byte{"package/package.json": pj} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(499162500, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(content); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func npmEscape(name string) string { return strings.Replace(name, "/", "%2f", 1) }

// npmPublish publishes name@version as npm 11 does (PUT of the document
// with one attachment, tagged latest unless tag says otherwise) and fails
// the test unless it is created.
func (a *pkgAPI) npmPublish(name, version, tag string, extra map[string]any) {
	a.t.Helper()
	if status, body := a.npmPublishStatus(name, version, tag, extra); status != http.StatusCreated {
		a.t.Fatalf("publish %s@%s: %d %s", name, version, status, body)
	}
}

func (a *pkgAPI) npmPublishStatus(name, version, tag string, extra map[string]any) (int, []byte) {
	a.t.Helper()
	return a.npmPublishAs("js", name, version, tag, extra)
}

// npmPublishTo publishes to another npm repository of the namespace
// (tagged latest); safe for concurrent use.
func (a *pkgAPI) npmPublishTo(repo, name, version string, extra map[string]any) (int, []byte) {
	return a.npmPublishAs(repo, name, version, "", extra)
}

func (a *pkgAPI) npmPublishAs(repo, name, version, tag string, extra map[string]any) (int, []byte) {
	pj := map[string]any{"name": name, "version": version, "description": "package " + name, "license": "MIT"}
	for k, v := range extra {
		pj[k] = v
	}
	tgz := npmTarball(a.t, pj)
	s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	manifest := map[string]any{"_id": name + "@" + version, "readme": "# " + name}
	for k, v := range pj {
		manifest[k] = v
	}
	base := name[strings.LastIndex(name, "/")+1:]
	manifest["dist"] = map[string]any{
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
		"shasum":    hex.EncodeToString(s1[:]),
		"tarball":   a.srv.URL + "/npm/acme/" + repo + "/" + name + "/-/" + base + "-" + version + ".tgz",
	}
	if tag == "" {
		tag = "latest"
	}
	doc, _ := json.Marshal(map[string]any{
		"_id": name, "name": name, "dist-tags": map[string]string{tag: version},
		"versions": map[string]any{version: manifest},
		"_attachments": map[string]any{base + "-" + version + ".tgz": map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(tgz), "length": len(tgz),
		}},
	})
	status, body := a.do(http.MethodPut, "/npm/acme/"+repo+"/"+npmEscape(name), doc)
	if status == http.StatusCreated && repo == "js" {
		a.mu.Lock()
		a.tarballs[name+"@"+version] = tgz
		a.mu.Unlock()
	}
	return status, body
}

// packument GETs the full document; nil when the package is not found.
func (a *pkgAPI) packument(name string) map[string]any {
	a.t.Helper()
	status, body := a.do(http.MethodGet, "/npm/acme/js/"+npmEscape(name), nil)
	if status == http.StatusNotFound {
		return nil
	}
	if status != http.StatusOK {
		a.t.Fatalf("GET %s: %d %s", name, status, body)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		a.t.Fatal(err)
	}
	return doc
}

// npmDeprecate deprecates a version as `npm deprecate` does (PUT of the
// whole document with the message set).
func (a *pkgAPI) npmDeprecate(name, version, msg string) {
	a.t.Helper()
	doc := a.packument(name)
	doc["versions"].(map[string]any)[version].(map[string]any)["deprecated"] = msg
	b, _ := json.Marshal(doc)
	if status, body := a.do(http.MethodPut, "/npm/acme/js/"+npmEscape(name), b); status != http.StatusCreated {
		a.t.Fatalf("deprecate %s@%s: %d %s", name, version, status, body)
	}
}

// packumentVersions lists the versions of a packument (nil: no package).
func packumentVersions(doc map[string]any) map[string]bool {
	if doc == nil {
		return nil
	}
	out := map[string]bool{}
	for v := range doc["versions"].(map[string]any) {
		out[v] = true
	}
	return out
}

// ---- Maven ---------------------------------------------------------------

// mavenFile is a deployed file with its checksums.
type mavenFileSums struct {
	size                      int
	md5, sha1, sha256, sha512 string
}

func sumsOf(b []byte) mavenFileSums {
	m, s1, s256, s512 := md5.Sum(b), sha1.Sum(b), sha256.Sum256(b), sha512.Sum512(b)
	return mavenFileSums{len(b), hex.EncodeToString(m[:]), hex.EncodeToString(s1[:]), "sha256:" + hex.EncodeToString(s256[:]), hex.EncodeToString(s512[:])}
}

// mavenDeploy PUTs the files of one version as mvn deploy does (jar, pom)
// and returns their checksums by name.
func (a *pkgAPI) mavenDeploy(group, artifact, version string, fileVersion string) map[string]mavenFileSums {
	a.t.Helper()
	return a.mavenDeployAs("jvm", group, artifact, version, fileVersion)
}

// mavenDeployTo deploys a release or SNAPSHOT version (SNAPSHOT files get
// a timestamped name) to another Maven repository.
func (a *pkgAPI) mavenDeployTo(repo, group, artifact, version string) map[string]mavenFileSums {
	a.t.Helper()
	fileVersion := version
	if base, ok := strings.CutSuffix(version, "-SNAPSHOT"); ok {
		fileVersion = base + "-20261130.010203-1"
	}
	return a.mavenDeployAs(repo, group, artifact, version, fileVersion)
}

func (a *pkgAPI) mavenDeployAs(repo, group, artifact, version string, fileVersion string) map[string]mavenFileSums {
	a.t.Helper()
	if fileVersion == "" {
		fileVersion = version
	}
	dir := "/maven/acme/" + repo + "/" + strings.ReplaceAll(group, ".", "/") + "/" + artifact + "/" + version + "/"
	out := map[string]mavenFileSums{}
	pom := fmt.Sprintf(`<project><modelVersion>4.0.0</modelVersion><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></project>`,
		group, artifact, version)
	for name, content := range map[string][]byte{
		artifact + "-" + fileVersion + ".jar": []byte("PK jar of " + artifact + " " + fileVersion + strings.Repeat("x", len(fileVersion)*10)),
		artifact + "-" + fileVersion + ".pom": []byte(pom),
	} {
		if status, body := a.do(http.MethodPut, dir+name, content); status != http.StatusCreated && status != http.StatusOK {
			a.t.Fatalf("deploy %s: %d %s", dir+name, status, body)
		}
		out[name] = sumsOf(content)
	}
	return out
}

// mavenMetadata GETs a package's maven-metadata.xml.
func (a *pkgAPI) mavenMetadata(group, artifact string) (int, string) {
	a.t.Helper()
	status, body := a.do(http.MethodGet, "/maven/acme/jvm/"+strings.ReplaceAll(group, ".", "/")+"/"+artifact+"/maven-metadata.xml", nil)
	return status, string(body)
}
