// Package blobredirect sends blob downloads off the application tier:
// with --storage-redirect, a GET of a blob's bytes that passed the
// protocol's authorization and accounting answers 307 Temporary Redirect
// to a short-lived signed URL of the object, and the client fetches the
// bytes from the object store. Each protocol calls Redirect at the point
// where it would open the object, after it has authorized the caller and
// counted (or decided to count) the download, so that a redirected
// download is counted exactly as a streamed one.
//
// 307 rather than 302: it is what the reference registry answers, and it
// forbids a client to turn the follow-up into anything but the same GET.
//
// What stays here: HEAD (no bytes to move), conditional requests (our
// ETags are not the object store's, so the object store cannot evaluate
// them), downloads the object store cannot sign, and pull-through cache
// fills, which stream upstream bytes through this process by nature. Range
// requests are redirected: clients repeat the Range header to the new
// location and the object store honours it.
package blobredirect

import (
	"log/slog"
	"net/http"

	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
)

// conditionals are the request headers that make a GET conditional on a
// validator of ours.
var conditionals = []string{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range"}

// bodyHeaders describe a body the redirect does not carry.
var bodyHeaders = []string{"Content-Length", "Content-Range", "Content-Type", "Content-Disposition", "ETag", "Accept-Ranges", "Last-Modified"}

// Redirect answers a GET of blob b with a redirect to a signed URL whose
// response carries contentType and an attachment disposition naming
// filename, when the store redirects downloads and the request may be
// redirected (see the package comment). It reports whether it answered;
// when it did not, nothing was written and the caller serves the bytes.
// A URL that cannot be signed is logged and the bytes are served here.
func Redirect(w http.ResponseWriter, r *http.Request, st *store.Store, log *slog.Logger, b *store.Blob, contentType, filename string) bool {
	if !Eligible(r, st) {
		return false
	}
	u, err := st.DownloadURL(r.Context(), b, contentType, httpsafe.Disposition(filename))
	if err != nil {
		log.Warn("blob download served here: signing its URL failed", "path", r.URL.Path, "err", err)
		return false
	}
	hdr := w.Header()
	for _, k := range bodyHeaders {
		hdr.Del(k)
	}
	// The signed URL is a bearer credential for the bytes: no cache may
	// keep it or hand it to another client.
	hdr.Set("Cache-Control", "no-store, private")
	hdr.Set("Referrer-Policy", "no-referrer")
	hdr.Set("Location", u)
	hdr.Set("Content-Length", "0")
	w.WriteHeader(http.StatusTemporaryRedirect)
	return true
}

// Eligible reports whether a download request would be redirected: a
// plain GET, with redirects on.
func Eligible(r *http.Request, st *store.Store) bool {
	if r.Method != http.MethodGet || !st.RedirectsDownloads() {
		return false
	}
	for _, k := range conditionals {
		if r.Header.Get(k) != "" {
			return false
		}
	}
	return true
}

// Whole reports whether a GET asks for the whole file (no Range), the
// requests the protocols count as downloads.
func Whole(r *http.Request) bool { return r.Header.Get("Range") == "" }
