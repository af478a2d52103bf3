package npm

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/artifact-registry/artifact-registry/protocol/npm/npmpublish"
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
// store (npmpublish.CheckJSONText).
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

// decodeJSON is json.Unmarshal after npmpublish.CheckJSONText, with
// npm's 400s.
func decodeJSON(raw []byte, v any) error {
	if err := npmpublish.CheckJSONText(raw); err != nil {
		return errorf(http.StatusBadRequest, "malformed JSON body: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errorf(http.StatusBadRequest, "malformed JSON body: %v", err)
	}
	return nil
}
