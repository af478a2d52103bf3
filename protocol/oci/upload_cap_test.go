package oci

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Past the per-repository cap of open upload sessions, starting one more
// (resumable or monolithic) answers 429 TOO_MANY_REQUESTS with the OCI
// error body; another repository is not affected, and cancelling a
// session frees its place.
func TestUploadSessionCap(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, serverOpts{store: store.Options{MaxUploadSessionsPerRepository: 2}})
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	s.repo(t, "acme", "other", enum.FormatOCI, enum.VisibilityPrivate)
	start := func(name string) *http.Response {
		return s.do(t, http.MethodPost, "/v2/"+name+"/blobs/uploads/", nil, nil, true)
	}
	first := start("acme/images/a")
	wantStatus(t, first, http.StatusAccepted)
	wantStatus(t, start("acme/images/b"), http.StatusAccepted)
	e := wantError(t, start("acme/images/a"), http.StatusTooManyRequests, codeTooManyRequests)
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("429 without a message: %v", e)
	}
	data := []byte("monolithic at the cap")
	wantError(t, s.do(t, http.MethodPost, "/v2/acme/images/a/blobs/uploads/?digest="+sha(data), bytes.NewReader(data),
		map[string]string{"Content-Type": "application/octet-stream"}, true), http.StatusTooManyRequests, codeTooManyRequests)
	wantStatus(t, start("acme/other/a"), http.StatusAccepted)

	wantStatus(t, s.do(t, http.MethodDelete, first.Header.Get("Location"), nil, nil, true), http.StatusNoContent)
	wantStatus(t, s.do(t, http.MethodPost, "/v2/acme/images/a/blobs/uploads/?digest="+sha(data), bytes.NewReader(data),
		map[string]string{"Content-Type": "application/octet-stream"}, true), http.StatusCreated)
	wantStatus(t, start("acme/images/a"), http.StatusAccepted)
	wantError(t, start("acme/images/c"), http.StatusTooManyRequests, codeTooManyRequests)
}
