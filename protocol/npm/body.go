package npm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

// maxJSONBody bounds every npm JSON body but a publish's (dist-tag,
// login, token create): they are a few hundred bytes.
const maxJSONBody = 1 << 20

// errBodyTooLarge marks a read past a body's limit.
var errBodyTooLarge = errors.New("npm: request body too large")

// limitedBody reads a request body up to its limit, then fails with
// errBodyTooLarge (and makes the server close the connection, as
// http.MaxBytesReader does). The error stays recognisable however deep
// the read that hit it, which wrapping by the readers above cannot spoil:
// over says so.
type limitedBody struct {
	r    io.Reader
	over bool
	// err is the first read error other than io.EOF: the client's
	// connection failed, not the document.
	err error
}

func newLimitedBody(req *request, limit int64) *limitedBody {
	return &limitedBody{r: http.MaxBytesReader(req.w, req.r.Body, limit)}
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		b.over = true
		err = errBodyTooLarge
	}
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// tooLarge is the 413 of a body over limit bytes.
func tooLarge(limit int64, what string) *apiError {
	return errorf(http.StatusRequestEntityTooLarge, "%s is larger than this registry's limit of %d bytes", what, limit)
}

// readJSON decodes a small JSON body (at most maxJSONBody bytes) into v:
// 413 past the limit, 400 for malformed JSON or text PostgreSQL cannot
// store (checkJSONText).
func readJSON(req *request, v any) error {
	if req.r.ContentLength > maxJSONBody {
		return tooLarge(maxJSONBody, "the request body")
	}
	body := newLimitedBody(req, maxJSONBody)
	raw, err := io.ReadAll(body)
	if body.over {
		return tooLarge(maxJSONBody, "the request body")
	}
	if err != nil {
		return errorf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	return decodeJSON(raw, v)
}

// decodeJSON is json.Unmarshal after checkJSONText, with npm's 400s.
func decodeJSON(raw []byte, v any) error {
	if err := checkJSONText(raw); err != nil {
		return errorf(http.StatusBadRequest, "malformed JSON body: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errorf(http.StatusBadRequest, "malformed JSON body: %v", err)
	}
	return nil
}

// checkJSONText refuses JSON text that encoding/json would accept but
// PostgreSQL cannot store, in jsonb or text: invalid UTF-8 (Go would
// silently replace it), the escape \u0000, and UTF-16 surrogates that do
// not pair up. It looks at escapes wherever they are: in valid JSON a
// backslash only occurs inside strings, and invalid JSON fails to decode
// anyway.
func checkJSONText(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("the body is not valid UTF-8")
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 >= len(b) {
			return nil // truncated: the decoder reports it
		}
		if b[i+1] != 'u' {
			i++ // a one-character escape, \\ included
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			return nil // the decoder reports it
		}
		switch {
		case r == 0:
			return errors.New(`the escape \u0000 is not allowed in strings`)
		case r >= 0xDC00 && r <= 0xDFFF:
			return fmt.Errorf(`lone UTF-16 surrogate \u%04x`, r)
		case r >= 0xD800 && r <= 0xDBFF:
			var low rune
			ok := i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u'
			if ok {
				low, ok = hex4(b, i+8)
			}
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return fmt.Errorf(`lone UTF-16 surrogate \u%04x`, r)
			}
			i += 11
			continue
		}
		i += 5
	}
	return nil
}

// hex4 parses the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
