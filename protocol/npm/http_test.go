package npm

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestPublishAndRead covers the basic cycle over raw HTTP: publish,
// packument (full and corgi, ETag/304), tarball, dist-tags file.
func TestPublishAndRead(t *testing.T) {
	e := newEnv(t, envOptions{})
	reg := e.registry("js")

	e.publish("js", newPublish(t, "demo", "1.0.0", map[string]any{"dependencies": map[string]string{"left-pad": "^1.0.0"}}))
	e.publish("js", newPublish(t, "demo", "1.1.0", nil))
	scoped := newPublish(t, "@anchor/lib", "1.0.0", map[string]any{"scripts": map[string]string{"postinstall": "node x.js"}})
	e.publish("js", scoped)

	full := e.packument("js", "demo", false)
	if full["_id"] != "demo" || full["name"] != "demo" || !strings.Contains(full["_rev"].(string), "-") {
		t.Fatalf("full document envelope: %v", full)
	}
	tags := full["dist-tags"].(map[string]any)
	if tags["latest"] != "1.1.0" {
		t.Errorf("latest = %v, want 1.1.0", tags["latest"])
	}
	versions := full["versions"].(map[string]any)
	v1 := versions["1.0.0"].(map[string]any)
	dist := v1["dist"].(map[string]any)
	if dist["tarball"] != reg+"demo/-/demo-1.0.0.tgz" {
		t.Errorf("tarball URL = %v", dist["tarball"])
	}
	if _, ok := v1["readme"]; ok {
		t.Errorf("versions carry readme")
	}
	if full["readme"] != "# demo" || full["description"] != "test package demo" || full["license"] != "MIT" {
		t.Errorf("hoisted fields: readme=%v description=%v license=%v", full["readme"], full["description"], full["license"])
	}
	tm := full["time"].(map[string]any)
	for _, k := range []string{"created", "modified", "1.0.0", "1.1.0"} {
		if _, ok := tm[k]; !ok {
			t.Errorf("time has no %q: %v", k, tm)
		}
	}
	if m := full["maintainers"].([]any); len(m) != 1 || m[0].(map[string]any)["name"] != "admin" {
		t.Errorf("maintainers = %v", full["maintainers"])
	}

	corgi := e.packument("js", "@anchor/lib", true)
	for k := range corgi {
		if !slices.Contains([]string{"name", "modified", "dist-tags", "versions"}, k) {
			t.Errorf("corgi top-level field %q", k)
		}
	}
	cv := corgi["versions"].(map[string]any)["1.0.0"].(map[string]any)
	for k := range cv {
		if !slices.Contains(abbreviatedFields, k) {
			t.Errorf("corgi version field %q", k)
		}
	}
	if cv["hasInstallScript"] != true || cv["_hasShrinkwrap"] != false {
		t.Errorf("install hints: %v", cv)
	}
	if cv["dist"].(map[string]any)["tarball"] != reg+"@anchor/lib/-/lib-1.0.0.tgz" {
		t.Errorf("scoped tarball URL = %v", cv["dist"])
	}

	// ETag and 304.
	status, _, hdr := e.do(http.MethodGet, reg+"demo", "token", nil, nil)
	etag := hdr.Get("ETag")
	if status != http.StatusOK || etag == "" {
		t.Fatalf("GET: %d etag %q", status, etag)
	}
	status, body, _ := e.do(http.MethodGet, reg+"demo", "token", nil, map[string]string{"If-None-Match": etag})
	if status != http.StatusNotModified || len(body) != 0 {
		t.Errorf("If-None-Match: %d %s", status, body)
	}

	// The three scoped-name spellings.
	for _, p := range []string{"@anchor%2flib", "@anchor%2Flib", "@anchor/lib"} {
		if status, body, _ := e.do(http.MethodGet, reg+p, "", nil, nil); status != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, status, body)
		}
	}

	// Tarballs.
	status, body, hdr = e.do(http.MethodGet, reg+"@anchor/lib/-/lib-1.0.0.tgz", "", nil, nil)
	if status != http.StatusOK || !slices.Equal(body, scoped.tarball) || hdr.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("tarball GET: %d %d bytes %q", status, len(body), hdr.Get("Content-Type"))
	}
	status, body, hdr = e.do(http.MethodHead, reg+"demo/-/demo-1.0.0.tgz", "", nil, nil)
	if status != http.StatusOK || len(body) != 0 || hdr.Get("Content-Length") == "" {
		t.Errorf("tarball HEAD: %d %q", status, hdr.Get("Content-Length"))
	}
	if status, _, _ := e.do(http.MethodGet, reg+"demo/-/demo-9.9.9.tgz", "", nil, nil); status != http.StatusNotFound {
		t.Errorf("missing tarball: %d", status)
	}

	// dist-tags file.
	status, body, _ = e.do(http.MethodGet, reg+"-/package/demo/dist-tags", "token", nil, nil)
	var dt map[string]string
	if status != http.StatusOK || json.Unmarshal(body, &dt) != nil || dt["latest"] != "1.1.0" {
		t.Errorf("dist-tags: %d %s", status, body)
	}

	// Unknown package.
	status, body, _ = e.do(http.MethodGet, reg+"no-such-pkg", "", nil, nil)
	if status != http.StatusNotFound || !strings.Contains(string(body), `"error":"no such package available"`) {
		t.Errorf("unknown package: %d %s", status, body)
	}
}
