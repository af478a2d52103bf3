package security

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testserver"
)

// TestBadInputIsRefused replays hostile input the surfaces already refuse,
// against the real server as the super-user (so no refusal is only an
// authorization one): each gets its 4xx in the protocol's format and
// changes nothing.
func TestBadInputIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	admin := testserver.Basic(testserver.AdminToken)
	img := "/v2/" + testserver.Home + "/oci-private/img"
	cfg := testserver.SHA([]byte(cfgBlob))
	mvn := "/maven/" + testserver.Home + "/mvn-private/"
	xxe := []byte(`<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>` +
		`<metadata><groupId>com.example</groupId><artifactId>lib</artifactId><versioning><latest>&x;</latest></versioning></metadata>`)
	for _, c := range []struct {
		name, method, path string
		body               []byte
		hdr                []string
		status             []int
		ociCode            string
	}{
		// Maven path traversal: never a redirect, never another file.
		{"maven dot-dot", http.MethodGet, mvn + "com/example/../../../mvn-public/com/example/lib/1.0/lib-1.0.pom", nil, nil, []int{400}, ""},
		{"maven encoded dot-dot", http.MethodGet, mvn + "com/example/%2e%2e/%2e%2e/lib/1.0/lib-1.0.pom", nil, nil, []int{400}, ""},
		{"maven encoded slash", http.MethodGet, mvn + "com%2fexample/lib/1.0/lib-1.0.pom", nil, nil, []int{400, 404}, ""},
		{"maven dot-dot put", http.MethodPut, mvn + "com/example/lib/1.0/../../../../../../../etc/passwd", []byte("x"), nil, []int{400}, ""},
		{"maven backslash", http.MethodPut, mvn + `com/example/lib/1.0/..\..\lib-1.0.jar`, []byte("x"), nil, []int{400}, ""},
		{"maven nul", http.MethodPut, mvn + "com/example/lib/1.0/lib-1.0%00.jar", []byte("x"), nil, []int{400}, ""},
		// XXE: a client's metadata with an external entity never makes the
		// server read a file (checked below on the served metadata too).
		{"maven metadata with XXE", http.MethodPut, mvn + "com/example/lib/maven-metadata.xml", xxe, nil, []int{200, 201, 400, 409}, ""},
		// OCI digests, names and references.
		{"oci malformed digest", http.MethodGet, img + "/blobs/sha256:xyz", nil, nil, []int{400}, "DIGEST_INVALID"},
		{"oci unknown algorithm", http.MethodGet, img + "/blobs/md5:d41d8cd98f00b204e9800998ecf8427e", nil, nil, []int{400}, "UNSUPPORTED"},
		{"oci short digest", http.MethodGet, img + "/manifests/sha256:abcd", nil, nil, []int{400}, ""},
		{"oci digest mismatch", http.MethodPost, img + "/blobs/uploads/?digest=" + testserver.SHA([]byte("other")), []byte("bytes"), nil, []int{400}, "DIGEST_INVALID"},
		{"oci name traversal", http.MethodGet, "/v2/" + testserver.Home + "/oci-private/../oci-public/img/manifests/v1", nil, nil, []int{400, 404}, ""},
		{"oci bad tag", http.MethodPut, img + "/manifests/-bad!tag", manifestBody(), []string{"Content-Type", "application/vnd.oci.image.manifest.v1+json"}, []int{400}, ""},
		// Ranges.
		{"oci range past end", http.MethodGet, img + "/blobs/" + cfg, nil, []string{"Range", "bytes=1000-2000"}, []int{416}, ""},
		{"oci range garbage", http.MethodGet, img + "/blobs/" + cfg, nil, []string{"Range", "bytes=abc"}, []int{200, 400, 416}, ""},
		{"oci range inverted", http.MethodGet, img + "/blobs/" + cfg, nil, []string{"Range", "bytes=10-2"}, []int{200, 400, 416}, ""},
		{"oci chunk out of order", http.MethodPatch, "", []byte("abc"), []string{"Content-Range", "100-102"}, []int{416}, ""},
		// Sizes.
		{"oci oversize manifest", http.MethodPut, img + "/manifests/big", bytes.Repeat([]byte(" "), 4<<20+1),
			[]string{"Content-Type", "application/vnd.oci.image.manifest.v1+json"}, []int{413}, "SIZE_INVALID"},
		{"oci manifest not JSON", http.MethodPut, img + "/manifests/bad", []byte("{"),
			[]string{"Content-Type", "application/vnd.oci.image.manifest.v1+json"}, []int{400}, "MANIFEST_INVALID"},
		// npm.
		{"npm name traversal", http.MethodGet, "/npm/" + testserver.Home + "/npm-private/..%2f..%2fetc%2fpasswd", nil, nil, []int{400, 404}, ""},
		{"npm publish not JSON", http.MethodPut, "/npm/" + testserver.Home + "/npm-private/pkg2", []byte("{"), []string{"Content-Type", "application/json"}, []int{400}, ""},
	} {
		path := c.path
		if c.name == "oci chunk out of order" {
			r := w.Do(http.MethodPost, img+"/blobs/uploads/", admin, nil)
			if r.Status != http.StatusAccepted {
				t.Fatalf("start upload: %d %s", r.Status, r.Body)
			}
			path = r.Header.Get("Location")
			path = strings.TrimPrefix(path, w.URL)
		}
		authz := admin
		if strings.HasPrefix(path, "/npm/") {
			authz = testserver.Bearer(testserver.AdminToken)
		}
		r := w.Do(c.method, path, authz, c.body, c.hdr...)
		ok := false
		for _, s := range c.status {
			ok = ok || r.Status == s
		}
		if !ok {
			t.Errorf("%s: %d %.300s, want one of %v", c.name, r.Status, r.Body, c.status)
			continue
		}
		if c.ociCode != "" && testserver.OCIError(r.Body) != c.ociCode {
			t.Errorf("%s: %d %.300s, want OCI code %s", c.name, r.Status, r.Body, c.ociCode)
		}
		if strings.HasPrefix(path, "/npm/") && r.Status >= 400 {
			if _, isErr := testserver.NpmError(r.Body); !isErr {
				t.Errorf("%s: %d %.300s is not an npm error", c.name, r.Status, r.Body)
			}
		}
		if strings.Contains(r.Body, "root:") {
			t.Errorf("%s: the response holds /etc/passwd: %.300s", c.name, r.Body)
		}
	}
	// Nothing was written by what was refused, nor read through the entity.
	r := w.Do(http.MethodGet, mvn+"com/example/lib/maven-metadata.xml", admin, nil)
	if strings.Contains(r.Body, "root:") {
		t.Errorf("maven-metadata.xml served the entity's file: %.300s", r.Body)
	}
	if r := w.Do(http.MethodGet, img+"/manifests/big", admin, nil); r.Status != http.StatusNotFound {
		t.Errorf("the oversize manifest was stored: %d", r.Status)
	}
}
