package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func testFS() fstest.MapFS {
	js := strings.Repeat("console.log('artifact registry');\n", 200)
	return fstest.MapFS{
		"dist/index.html":              {Data: []byte(`<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>`)},
		"dist/playground.html":         {Data: []byte(`<!doctype html><html><head><script type="module" src="/assets/playground-abc123.js"></script></head><body><div id="playground"></div></body></html>`)},
		"dist/assets/index-abc123.js":  {Data: []byte(js)},
		"dist/assets/index-def456.css": {Data: []byte("body{margin:0}")},
		"dist/robots.txt":              {Data: []byte("User-agent: *\nDisallow: /\n")},
	}
}

func get(t *testing.T, h http.Handler, method, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestRoutesFallBackToIndex(t *testing.T) {
	h, err := newHandler(testFS())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/", "/sign-in", "/n/acme", "/n/acme/repositories?format=npm", "/n/acme/r/my.repo", "/n/acme/r/app/images/team/api", "/n/acme/r/app/images/x.y/z.tar"} {
		rec := get(t, h, http.MethodGet, p)
		if rec.Code != http.StatusOK {
			t.Errorf("%s: status %d", p, rec.Code)
			continue
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("%s: content type %q", p, ct)
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("%s: cache-control %q", p, cc)
		}
		if !strings.Contains(rec.Body.String(), `<div id="root">`) {
			t.Errorf("%s: not index.html: %q", p, rec.Body.String())
		}
		if rec.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no CSP", p)
		}
	}
}

func TestAssets(t *testing.T) {
	h, err := newHandler(testFS())
	if err != nil {
		t.Fatal(err)
	}
	rec := get(t, h, http.MethodGet, "/assets/index-def456.css")
	if rec.Code != http.StatusOK || rec.Body.String() != "body{margin:0}" {
		t.Fatalf("css: %d %q", rec.Code, rec.Body.String())
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
		t.Errorf("css cache-control %q", cc)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/css") {
		t.Errorf("css content type %q", ct)
	}

	// Missing assets and top-level files are real 404s, never index.html.
	for _, p := range []string{"/assets/index-old.js", "/assets/nope/x.css", "/assets/", "/favicon.ico", "/index-abc123.js"} {
		rec := get(t, h, http.MethodGet, p)
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", p, rec.Code)
		}
		if strings.Contains(rec.Body.String(), "<div id=\"root\">") {
			t.Errorf("%s: served index.html", p)
		}
	}

	// Unhashed top-level files exist and are revalidated.
	rec = get(t, h, http.MethodGet, "/robots.txt")
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("robots.txt: %d %q", rec.Code, rec.Header().Get("Cache-Control"))
	}

	// The playground page is served at its route only, never as a file.
	if rec := get(t, h, http.MethodGet, "/playground.html"); rec.Code != http.StatusNotFound {
		t.Errorf("/playground.html: %d, want 404", rec.Code)
	}

	// /index.html itself is the app, not a separate cached file.
	rec = get(t, h, http.MethodGet, "/index.html")
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("/index.html: %d %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
}

func TestPlayground(t *testing.T) {
	h, err := newHandler(testFS())
	if err != nil {
		t.Fatal(err)
	}
	pg := h.playgroundHandler()
	rec := get(t, pg, http.MethodGet, "/graphql/playground")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<div id="playground">`) {
		t.Fatalf("playground: %d %q", rec.Code, rec.Body.String())
	}
	// The UI's confinement: same CSP (no inline script, nothing from
	// another origin), no framing, revalidated on every load.
	want := map[string]string{
		"Content-Security-Policy": contentSecurityPolicy,
		"X-Frame-Options":         "DENY",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "same-origin",
		"Cache-Control":           "no-cache",
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("content type %q", ct)
	}
	if rec := get(t, pg, http.MethodHead, "/graphql/playground"); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if rec := get(t, pg, http.MethodPost, "/graphql/playground"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}

	// A build without the page is refused at start.
	fsys := testFS()
	delete(fsys, "dist/playground.html")
	if _, err := newHandler(fsys); err == nil {
		t.Error("a build without playground.html was accepted")
	}
}

func TestGzipAndConditional(t *testing.T) {
	h, err := newHandler(testFS())
	if err != nil {
		t.Fatal(err)
	}
	plain := get(t, h, http.MethodGet, "/assets/index-abc123.js")
	rec := get(t, h, http.MethodGet, "/assets/index-abc123.js", "Accept-Encoding", "br, gzip")
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip: %v", rec.Header())
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(zr)
	if !bytes.Equal(body, plain.Body.Bytes()) {
		t.Fatal("gzip body differs")
	}
	if rec.Header().Get("ETag") == plain.Header().Get("ETag") {
		t.Error("same ETag for both representations")
	}
	if rec := get(t, h, http.MethodGet, "/assets/index-abc123.js", "Accept-Encoding", "gzip;q=0"); rec.Header().Get("Content-Encoding") != "" {
		t.Error("gzip sent although refused")
	}

	etag := get(t, h, http.MethodGet, "/n/acme").Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag on index.html")
	}
	if rec := get(t, h, http.MethodGet, "/n/acme/repositories", "If-None-Match", etag); rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", rec.Code)
	}
}

func TestMethods(t *testing.T) {
	h, err := newHandler(testFS())
	if err != nil {
		t.Fatal(err)
	}
	if rec := get(t, h, http.MethodHead, "/n/acme"); rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Errorf("HEAD: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if rec := get(t, h, http.MethodPost, "/n/acme"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

// TestEmbeddedBuild checks the committed build: both pages reference
// assets that exist and are served with the immutable policy, and the UI
// loads none of the playground's libraries.
func TestEmbeddedBuild(t *testing.T) {
	h := Handler()
	pages := map[string]http.Handler{"/": h, "/graphql/playground": Playground()}
	loads := map[string][]string{}
	for p, ph := range pages {
		rec := get(t, ph, http.MethodGet, p)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", p, rec.Code)
		}
		html := rec.Body.String()
		for _, part := range strings.Split(html, `"/assets/`)[1:] {
			name := "/assets/" + part[:strings.IndexByte(part, '"')]
			loads[p] = append(loads[p], name)
			rec := get(t, h, http.MethodGet, name)
			if rec.Code != http.StatusOK {
				t.Errorf("%s: %s: %d", p, name, rec.Code)
			}
			if rec.Header().Get("Cache-Control") != cacheImmutable {
				t.Errorf("%s: %s: cache-control %q", p, name, rec.Header().Get("Cache-Control"))
			}
		}
		if len(loads[p]) < 2 {
			t.Errorf("%s references %d assets, want a script and a stylesheet:\n%s", p, len(loads[p]), html)
		}
	}
	for _, a := range loads["/"] {
		if strings.Contains(a, "playground") || strings.Contains(a, "graphiql") {
			t.Errorf("the UI loads %s", a)
		}
	}
}

// TestEmbeddedStylesFitCSP checks that no stylesheet of the build loads
// what the pages' CSP refuses: fonts or anything else from another origin
// or from data: URLs (only images may be data: URLs).
func TestEmbeddedStylesFitCSP(t *testing.T) {
	h := embedded()
	n := 0
	for name, f := range h.files {
		if !strings.HasSuffix(name, ".css") {
			continue
		}
		n++
		css := string(f.data)
		for _, part := range strings.Split(css, "url(")[1:] {
			target := strings.Trim(strings.TrimSpace(part[:max(strings.IndexByte(part, ')'), 0)]), `"'`)
			switch {
			case strings.HasPrefix(target, "data:image/"):
			case strings.HasPrefix(target, "/") && !strings.HasPrefix(target, "//"):
			case strings.HasPrefix(target, "#"):
			default:
				t.Errorf("%s: url(%.80s) is refused by the CSP", name, target)
			}
		}
		if strings.Contains(css, "@import") {
			t.Errorf("%s: @import", name)
		}
	}
	if n < 2 {
		t.Errorf("%d stylesheets in the build, want the UI's and the playground's", n)
	}
}
