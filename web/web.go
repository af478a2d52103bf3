// Package web serves the browser pages: the Vite build of this folder's
// React app (dist/, committed and embedded), which talks to /graphql only,
// and the GraphQL playground (GraphiQL, built from the same sources), so
// both work without any network but this server's.
//
// Rebuild dist/ with `npm --prefix web ci && npm --prefix web run build`;
// check-dist.sh verifies that the committed files match the sources.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed dist
var dist embed.FS

// Cache policies.
const (
	// Files under /assets/ carry a content hash in their name.
	cacheImmutable = "public, max-age=31536000, immutable"
	// index.html (and unhashed files) are revalidated on every load, so a
	// new build is picked up at once; the ETag makes that a 304.
	cacheRevalidate = "no-cache"
)

// contentSecurityPolicy allows only this origin: the bundles have no
// inline scripts, and the pages talk to /graphql on the same origin.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one embedded file with its precomputed representations.
type file struct {
	name        string
	data        []byte
	etag        string
	contentType string
	gzipOnce    sync.Once
	gzipped     []byte // nil when compression does not pay
}

func (f *file) gzip() []byte {
	f.gzipOnce.Do(func() {
		if !compressible(f.contentType) || len(f.data) < 1024 {
			return
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = zw.Write(f.data)
		_ = zw.Close()
		if b.Len() < len(f.data)*9/10 {
			f.gzipped = b.Bytes()
		}
	})
	return f.gzipped
}

func compressible(ct string) bool {
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "javascript") ||
		strings.Contains(ct, "json") || strings.Contains(ct, "svg")
}

// The pages of the build. They are served only at their routes, with the
// security headers, never as files.
const (
	indexPage      = "index.html"
	playgroundPage = "playground.html"
)

type handler struct {
	files      map[string]*file // by path relative to dist, e.g. "assets/index-abc.js"
	index      *file
	playground *file
}

// embedded is the handler over dist, read once for every caller.
var embedded = sync.OnceValue(func() *handler {
	h, err := newHandler(dist)
	if err != nil {
		panic("web: embedded UI: " + err.Error())
	}
	return h
})

// Handler serves the UI at /: files of the build, index.html for every
// client-side route, and real 404s for missing files under /assets/ (and
// for top-level names with an extension, which no route uses). Mount it as
// the router's catch-all, after the protocol and API routes.
func Handler() http.Handler { return embedded() }

// Playground serves the GraphQL playground page (mount it at GET and HEAD
// /graphql/playground); its scripts and styles are files of the build
// under /assets/, which Handler serves. It holds no data: the page's
// queries go to /graphql as whoever the session cookie or the
// Authorization header typed into it says.
func Playground() http.Handler { return embedded().playgroundHandler() }

func newHandler(fsys fs.FS) (*handler, error) {
	sub, err := fs.Sub(fsys, "dist")
	if err != nil {
		return nil, err
	}
	h := &handler{files: map[string]*file{}}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = http.DetectContentType(data)
		}
		h.files[p] = &file{name: p, data: data, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, contentType: ct}
		return nil
	})
	if err != nil {
		return nil, err
	}
	h.index, h.playground = h.files[indexPage], h.files[playgroundPage]
	if h.index == nil || h.playground == nil {
		return nil, fs.ErrNotExist
	}
	return h, nil
}

func (h *handler) playgroundHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowRead(w, r) {
			return
		}
		h.servePage(w, r, h.playground)
	})
}

func allowRead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// servePage serves a page of the build with the headers that confine it.
func (h *handler) servePage(w http.ResponseWriter, r *http.Request, f *file) {
	w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "same-origin")
	h.serve(w, r, f, cacheRevalidate)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !allowRead(w, r) {
		return
	}
	p := path.Clean("/" + r.URL.Path)
	rel := strings.TrimPrefix(p, "/")

	if f, ok := h.files[rel]; ok && f != h.index && f != h.playground {
		if strings.HasPrefix(rel, "assets/") {
			h.serve(w, r, f, cacheImmutable)
		} else {
			h.serve(w, r, f, cacheRevalidate)
		}
		return
	}
	if rel == "assets" || strings.HasPrefix(rel, "assets/") ||
		(rel != indexPage && !strings.Contains(rel, "/") && path.Ext(rel) != "") {
		// A missing build file: answering index.html here would hand the
		// browser HTML for a script or stylesheet.
		w.Header().Set("Cache-Control", cacheRevalidate)
		http.NotFound(w, r)
		return
	}
	// Every other path is a client-side route.
	h.servePage(w, r, h.index)
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, f *file, cache string) {
	hd := w.Header()
	hd.Set("Cache-Control", cache)
	hd.Set("Content-Type", f.contentType)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("ETag", f.etag)
	data := f.data
	if gz := f.gzip(); gz != nil {
		hd.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			hd.Set("Content-Encoding", "gzip")
			// A distinct validator per representation.
			hd.Set("ETag", strings.TrimSuffix(f.etag, `"`)+`-gz"`)
			data = gz
		}
	}
	// ServeContent answers If-None-Match (304), HEAD and Range.
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(data))
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			params = strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return params != "q=0" && params != "q=0.0" && params != "q=0.00" && params != "q=0.000"
		}
	}
	return false
}
