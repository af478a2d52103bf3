package oci

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
)

// Error codes of the OCI Distribution Specification (section "Error Codes").
const (
	codeBlobUnknown         = "BLOB_UNKNOWN"
	codeBlobUploadInvalid   = "BLOB_UPLOAD_INVALID"
	codeBlobUploadUnknown   = "BLOB_UPLOAD_UNKNOWN"
	codeDigestInvalid       = "DIGEST_INVALID"
	codeManifestBlobUnknown = "MANIFEST_BLOB_UNKNOWN"
	codeManifestInvalid     = "MANIFEST_INVALID"
	codeManifestUnknown     = "MANIFEST_UNKNOWN"
	codeNameInvalid         = "NAME_INVALID"
	codeNameUnknown         = "NAME_UNKNOWN"
	codeSizeInvalid         = "SIZE_INVALID"
	codeUnauthorized        = "UNAUTHORIZED"
	codeDenied              = "DENIED"
	codeUnsupported         = "UNSUPPORTED"
	codeTooManyRequests     = "TOO_MANY_REQUESTS"
	// codeRateLimited is the spec's code of a 429: too many failed
	// authentications from the client's address.
	codeRateLimited = "TOOMANYREQUESTS"
	// codeUnavailable is the distribution registry's code for a 503.
	codeUnavailable = "UNAVAILABLE"
	// codeUnknown is only used for internal errors (HTTP 500).
	codeUnknown = "UNKNOWN"
)

// apiError is an error the client sees, in the spec's JSON error format.
type apiError struct {
	Status  int
	Code    string
	Message string
	Detail  any
	// RetryAfter, when positive, is sent as the Retry-After header (seconds).
	RetryAfter int
	// Header is copied onto the response (e.g. Range on a 416).
	Header http.Header
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newErr(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *apiError) withDetail(d any) *apiError { e.Detail = d; return e }

func (e *apiError) withHeader(k, v string) *apiError {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Set(k, v)
	return e
}

type errorBody struct {
	Errors []errorEntry `json:"errors"`
}

type errorEntry struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Detail  any    `json:"detail,omitempty"`
}

// writeAPIError writes e as the spec's JSON error document. HEAD responses
// carry the status and headers only.
func writeAPIError(w http.ResponseWriter, r *http.Request, e *apiError) {
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = vs
	}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	body, _ := json.Marshal(errorBody{Errors: []errorEntry{{Code: e.Code, Message: e.Message, Detail: e.Detail}}})
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Del("Docker-Content-Digest")
	h.Del("ETag")
	h.Del("Content-Disposition")
	httpsafe.Protect(h)
	w.WriteHeader(e.Status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}
