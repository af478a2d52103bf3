package maven

import (
	"net/http"
	"strings"
	"testing"
)

// plantedXHTML is a POM a browser would render as XHTML and run.
const plantedXHTML = `<?xml version="1.0"?>
<html xmlns="http://www.w3.org/1999/xhtml"><head><script>document.title = "planted"</script></head><body/></html>`

// checkSafe asserts the headers that keep served bytes from rendering on
// the registry's origin; attachment names the file a download gets.
func checkSafe(t *testing.T, what string, r result, attachment string) {
	t.Helper()
	if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", what, got)
	}
	if got := r.header.Get("Content-Security-Policy"); got != "default-src 'none'; sandbox" {
		t.Errorf("%s: Content-Security-Policy %q", what, got)
	}
	want := ""
	if attachment != "" {
		want = "attachment; filename=" + attachment
	}
	if got := r.header.Get("Content-Disposition"); got != want {
		t.Errorf("%s: Content-Disposition %q, want %q", what, got, want)
	}
}

// TestServedFilesNeverRender covers every byte-serving answer of the Maven
// surface (GET, HEAD, ranges, revalidation, checksums, metadata, errors)
// for files a browser would otherwise render.
func TestServedFilesNeverRender(t *testing.T) {
	t.Parallel()
	s := newMavenServer(t)
	v := relBase + "/1.0.0/anchor-lib-1.0.0"
	s.deployFile(t, v+".pom", []byte(plantedXHTML))
	files := map[string]string{ // path -> Content-Type
		v + ".pom":       "application/octet-stream",
		v + "-notes.xml": "application/octet-stream",
		v + ".html":      "application/octet-stream",
		v + ".svg":       "application/octet-stream",
		v + ".txt":       "application/octet-stream",
		v + ".jar":       "application/java-archive",
	}
	for p := range files {
		if !strings.HasSuffix(p, ".pom") {
			s.deployFile(t, p, []byte(plantedXHTML))
		}
	}
	snap := snapBase + "/2.0.0-SNAPSHOT/anchor-lib-2.0.0-20260101.000000-1"
	s.deployFile(t, snap+".pom", []byte(plantedXHTML))
	files[snap+".pom"] = "application/octet-stream"
	// A non-timestamped SNAPSHOT name serves the latest build.
	files[snapBase+"/2.0.0-SNAPSHOT/anchor-lib-2.0.0-SNAPSHOT.pom"] = "application/octet-stream"

	for p, ct := range files {
		name := p[strings.LastIndex(p, "/")+1:]
		for _, anon := range []bool{false, true} {
			r := s.do(t, http.MethodGet, p, nil, !anon)
			if r.status != http.StatusOK || r.body != plantedXHTML {
				t.Fatalf("GET %s: %d %q", p, r.status, r.body)
			}
			if got := r.header.Get("Content-Type"); got != ct {
				t.Errorf("GET %s: Content-Type %q, want %q", p, got, ct)
			}
			checkSafe(t, "GET "+p, r, name)
		}
		head := s.do(t, http.MethodHead, p, nil, false)
		if head.status != http.StatusOK || head.header.Get("Content-Type") != ct {
			t.Errorf("HEAD %s: %d %q", p, head.status, head.header.Get("Content-Type"))
		}
		checkSafe(t, "HEAD "+p, head, name)
		rng := s.do(t, http.MethodGet, p, nil, false, "Range", "bytes=0-9")
		if rng.status != http.StatusPartialContent || rng.header.Get("Content-Type") != ct {
			t.Errorf("range %s: %d %q", p, rng.status, rng.header.Get("Content-Type"))
		}
		checkSafe(t, "range "+p, rng, name)
		inm := s.do(t, http.MethodGet, p, nil, false, "If-None-Match", s.do(t, http.MethodHead, p, nil, false).header.Get("ETag"))
		if inm.status != http.StatusNotModified {
			t.Errorf("If-None-Match %s: %d", p, inm.status)
		}
		checkSafe(t, "304 "+p, inm, name)
		sum := s.do(t, http.MethodGet, p+".sha1", nil, false)
		if sum.status != http.StatusOK || sum.header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET %s.sha1: %d %q", p, sum.status, sum.header.Get("Content-Type"))
		}
		checkSafe(t, "GET "+p+".sha1", sum, name+".sha1")
	}

	// Metadata, rendered by the server from user-chosen names.
	for _, p := range []string{relBase + "/maven-metadata.xml", snapBase + "/2.0.0-SNAPSHOT/maven-metadata.xml"} {
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			r := s.do(t, m, p, nil, false)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/octet-stream" {
				t.Errorf("%s %s: %d %q", m, p, r.status, r.header.Get("Content-Type"))
			}
			checkSafe(t, m+" "+p, r, "maven-metadata.xml")
		}
	}

	// Errors echo the path: plain text, protected, never an attachment.
	for _, p := range []string{
		relBase + "/1.0.0/%3Cscript%3E.html",
		"/maven/acme/nosuch/a/b/1/b-1.pom",
		"/maven/acme/releases/%2e%2e/x",
	} {
		r := s.do(t, http.MethodGet, p, nil, false)
		if r.status < 400 || r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("GET %s: %d %q", p, r.status, r.header.Get("Content-Type"))
		}
		checkSafe(t, "error "+p, r, "")
	}
}

func TestContentTypeIsNeverRenderable(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"a-1.pom": "application/octet-stream", "maven-metadata.xml": "application/octet-stream",
		"a-1-notes.xml": "application/octet-stream", "a-1.html": "application/octet-stream",
		"a-1.svg": "application/octet-stream", "a-1.xhtml": "application/octet-stream",
		"a-1.module": "application/octet-stream", "a-1": "application/octet-stream",
		"a-1.jar": "application/java-archive", "a-1.jar.asc": "application/pgp-signature",
		"a-1.pom.sha1": "text/plain; charset=utf-8",
	} {
		if got := contentType(name); got != want {
			t.Errorf("contentType(%q) = %q, want %q", name, got, want)
		}
	}
}
