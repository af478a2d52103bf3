package npm

import (
	"net/http"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
)

// checkSafe asserts the headers that keep served bytes from rendering on
// the registry's origin; attachment is the expected Content-Disposition.
func checkSafe(t *testing.T, what string, hdr http.Header, attachment string) {
	t.Helper()
	if got := hdr.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", what, got)
	}
	if got := hdr.Get("Content-Security-Policy"); got != "default-src 'none'; sandbox" {
		t.Errorf("%s: Content-Security-Policy %q", what, got)
	}
	if got := hdr.Get("Content-Disposition"); got != attachment {
		t.Errorf("%s: Content-Disposition %q, want %q", what, got, attachment)
	}
}

// TestServedBytesNeverRender covers every answer of the npm surface that
// carries user bytes or user-written text: tarballs are attachments;
// packuments, dist-tags and version documents stay viewable JSON but are
// never sniffed and never run scripts; errors likewise.
func TestServedBytesNeverRender(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	planted := `<script>document.title = "planted"</script>`
	p := npmpack.NewPublish(t, "@anchor/page", "1.0.0", map[string]any{"description": planted})
	p.Tarball = npmpack.Tarball(t, p.PkgJSON, map[string]string{"package/index.html": "<html>" + planted + "</html>"})
	e.publish("js", p)
	reg := e.registry("js")
	tgz := reg + "@anchor/page/-/page-1.0.0.tgz"

	for _, auth := range []string{"token", ""} {
		status, body, hdr := e.do(http.MethodGet, tgz, auth, nil, nil)
		if status != http.StatusOK || string(body) != string(p.Tarball) || hdr.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("GET tarball (auth %q): %d %q", auth, status, hdr.Get("Content-Type"))
		}
		checkSafe(t, "GET tarball", hdr, "attachment; filename=page-1.0.0.tgz")
	}
	status, _, hdr := e.do(http.MethodHead, tgz, "", nil, nil)
	if status != http.StatusOK {
		t.Errorf("HEAD tarball: %d", status)
	}
	checkSafe(t, "HEAD tarball", hdr, "attachment; filename=page-1.0.0.tgz")
	status, _, hdr = e.do(http.MethodGet, tgz, "", nil, map[string]string{"If-None-Match": hdr.Get("ETag")})
	if status != http.StatusNotModified {
		t.Errorf("revalidate tarball: %d", status)
	}
	checkSafe(t, "304 tarball", hdr, "attachment; filename=page-1.0.0.tgz")

	docs := map[string]string{ // URL -> Accept
		reg + escapeName("@anchor/page"):             "application/json",
		reg + "@anchor/page":                         "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*",
		reg + "-/package/@anchor/page/dist-tags":     "",
		reg + escapeName("@anchor/page") + "/1.0.0":  "",
		reg + escapeName("@anchor/page") + "/latest": "",
	}
	for u, accept := range docs {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			status, _, hdr := e.do(m, u, "", nil, map[string]string{"Accept": accept})
			if status != http.StatusOK {
				t.Fatalf("%s %s: %d", m, u, status)
			}
			checkSafe(t, m+" "+u, hdr, "")
			if etag := hdr.Get("ETag"); etag != "" {
				status, _, hdr := e.do(m, u, "", nil, map[string]string{"Accept": accept, "If-None-Match": etag})
				if status != http.StatusNotModified {
					t.Errorf("revalidate %s: %d", u, status)
				}
				checkSafe(t, "304 "+u, hdr, "")
			}
		}
	}

	for _, u := range []string{
		reg + "@anchor/page/-/page-9.9.9.tgz",
		reg + "%3Cscript%3E",
		e.registry("private") + "x",
		e.base + "/npm/acme/",
		reg + "-/nosuch",
	} {
		status, _, hdr := e.do(http.MethodGet, u, "", nil, nil)
		if status < 400 {
			t.Errorf("GET %s: %d", u, status)
		}
		checkSafe(t, "error "+u, hdr, "")
	}
}
