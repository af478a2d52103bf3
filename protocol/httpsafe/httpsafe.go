// Package httpsafe keeps bytes that users uploaded from running as a page
// of the registry's origin. The registry serves its UI, its GraphQL API
// and every protocol from one origin, so an uploaded document a browser
// renders (an XHTML .pom, an SVG, an HTML file inside any artifact) would
// otherwise run its scripts with the UI's privileges. Every protocol
// (and any remote cache that streams upstream bytes) answers through the
// headers set here:
//
//   - X-Content-Type-Options: nosniff, so the declared type is final;
//   - Content-Security-Policy: default-src 'none'; sandbox, so a document
//     that is rendered anyway gets no scripts, no subresources and an
//     opaque origin (no cookies, no storage of ours);
//   - Content-Disposition: attachment on artifact bytes, so a navigation
//     downloads instead of rendering.
//
// Build tools (Maven, npm, OCI clients) ignore all three.
package httpsafe

import (
	"mime"
	"net/http"
	"strings"
	"unicode"
)

// ContentSecurityPolicy sandboxes a response rendered as a document: no
// script, no subresource, an opaque origin.
const ContentSecurityPolicy = "default-src 'none'; sandbox"

// Protect sets the headers every protocol response carries, error bodies
// included.
func Protect(h http.Header) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
}

// Attachment protects a response that carries artifact bytes and makes a
// browser save it as filename (its last path element, see Disposition)
// instead of rendering it.
func Attachment(h http.Header, filename string) {
	Protect(h)
	h.Set("Content-Disposition", Disposition(filename))
}

// Handler sets Protect's headers before next runs, so that every answer of
// next (success, error or panic recovery) carries them.
func Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Protect(w.Header())
		next.ServeHTTP(w, r)
	})
}

// Disposition is the Content-Disposition value "attachment" with a file
// name browsers save safely (RFC 6266): the last path element, with
// control characters and characters file systems refuse replaced by '_';
// an ASCII name as filename=, any other as filename* in the UTF-8
// encoding of RFC 8187.
// An empty or unusable name gives a bare "attachment".
func Disposition(filename string) string {
	name := SafeFilename(filename)
	if name == "" {
		return "attachment"
	}
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" {
		return v
	}
	return "attachment"
}

// SafeFilename is the last path element of name with control characters,
// path separators and the characters Windows refuses in file names
// replaced by '_'. "", "." and ".." give "".
func SafeFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || unicode.IsControl(r) || strings.ContainsRune(`<>:"/\|?*`, r) ||
			unicode.Is(unicode.Bidi_Control, r) {
			return '_'
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if name == "" || name == "." || name == ".." {
		return ""
	}
	return name
}
