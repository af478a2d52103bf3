package testserver

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// SHA is the OCI digest of b.
func SHA(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// PushImage pushes a one-config, no-layer OCI image as the super-user and
// returns the manifest's digest.
func (e *Env) PushImage(name, tag string) string {
	e.T.Helper()
	cfg := []byte(`{"architecture":"amd64","os":"linux"}`)
	if r := e.Do(http.MethodPost, "/v2/"+name+"/blobs/uploads/?digest="+SHA(cfg), Basic(AdminToken), cfg); r.Status != http.StatusCreated {
		e.T.Fatalf("push config of %s: %d %s", name, r.Status, r.Body)
	}
	man, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": SHA(cfg), "size": len(cfg)},
		"layers": []any{},
	})
	if r := e.Do(http.MethodPut, "/v2/"+name+"/manifests/"+tag, Basic(AdminToken), man,
		"Content-Type", "application/vnd.oci.image.manifest.v1+json"); r.Status != http.StatusCreated {
		e.T.Fatalf("push manifest of %s: %d %s", name, r.Status, r.Body)
	}
	return SHA(man)
}

// NpmPublish publishes name@version to an npm registry of the home
// namespace as the super-user.
func (e *Env) NpmPublish(repo, name, version string) {
	e.T.Helper()
	reg := "/npm/" + Home + "/" + repo + "/"
	if r := e.Do(http.MethodPut, reg+name, Bearer(AdminToken), NpmPublishBody(e.T, e.URL+reg, name, version)); r.Status != http.StatusCreated {
		e.T.Fatalf("npm publish %s: %d %s", name, r.Status, r.Body)
	}
}

// NpmPublishBody is the document `npm publish` sends for a one-file package.
func NpmPublishBody(t testing.TB, registry, name, version string) []byte {
	pj, _ := json.Marshal(map[string]string{"name": name, "version": version, "license": "MIT"})
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(pj)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(pj)
	_ = tw.Close()
	_ = gz.Close()
	tgz := buf.Bytes()
	s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	file := name + "-" + version + ".tgz"
	doc, _ := json.Marshal(map[string]any{
		"_id": name, "name": name, "dist-tags": map[string]string{"latest": version},
		"versions": map[string]any{version: map[string]any{
			"name": name, "version": version, "license": "MIT", "_id": name + "@" + version,
			"dist": map[string]string{
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
				"shasum":    hex.EncodeToString(s1[:]),
				"tarball":   registry + name + "/-/" + file,
			},
		}},
		"_attachments": map[string]any{file: map[string]any{
			"content_type": "application/octet-stream", "data": base64.StdEncoding.EncodeToString(tgz), "length": len(tgz),
		}},
	})
	return doc
}

// MavenDeploy PUTs a pom as the super-user.
func (e *Env) MavenDeploy(repo, version string) {
	e.T.Helper()
	if r := e.Do(http.MethodPut, MavenPom(repo, version), Basic(AdminToken), Pom(version)); r.Status != http.StatusCreated {
		e.T.Fatalf("maven deploy %s: %d %s", repo, r.Status, r.Body)
	}
}

// MavenPom is the path of com.example:lib:version's pom in repo.
func MavenPom(repo, version string) string {
	return fmt.Sprintf("/maven/%s/%s/com/example/lib/%s/lib-%s.pom", Home, repo, version, version)
}

// Pom is a minimal pom of com.example:lib.
func Pom(version string) []byte {
	return []byte(`<project><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>lib</artifactId><version>` +
		version + `</version></project>`)
}

// OCIError is the code of an OCI error body ("" if none).
func OCIError(body string) string {
	var doc struct {
		Errors []struct{ Code string } `json:"errors"`
	}
	if json.Unmarshal([]byte(body), &doc) != nil || len(doc.Errors) == 0 {
		return ""
	}
	return doc.Errors[0].Code
}

// NpmError is the message of an npm {"error": ...} body; ok false when the
// body is not that shape.
func NpmError(body string) (string, bool) {
	var doc map[string]any
	if json.Unmarshal([]byte(body), &doc) != nil {
		return "", false
	}
	s, ok := doc["error"].(string)
	return s, ok && strings.TrimSpace(s) != ""
}
