package oci

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

const plantedHTML = `<html><script>document.title = "planted"</script></html>`

// checkSafe asserts the headers that keep served bytes from rendering on
// the registry's origin; attachment is the expected Content-Disposition.
func checkSafe(t *testing.T, what string, hdr http.Header, attachment string) {
	t.Helper()
	if got := hdr.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", what, got)
	}
	if got := hdr.Values("Content-Security-Policy"); len(got) != 1 || got[0] != "default-src 'none'; sandbox" {
		t.Errorf("%s: Content-Security-Policy %q", what, got)
	}
	if got := hdr.Values("Content-Disposition"); strings.Join(got, ", ") != attachment {
		t.Errorf("%s: Content-Disposition %q, want %q", what, got, attachment)
	}
}

func fileName(d string) string { return "attachment; filename=" + strings.Replace(d, ":", "_", 1) }

// TestServedBytesNeverRender covers every answer of the OCI surface:
// blobs and manifests (GET, HEAD, ranges, revalidation) and referrers are
// attachments; every other answer, errors and the token endpoint
// included, is at least never sniffed and never runs scripts.
func TestServedBytesNeverRender(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "public", enum.FormatOCI, enum.VisibilityPublic)
	name := "acme/public/app"
	c := newBenchClient(t, s, name)
	cfg := []byte(`{"architecture":"amd64","os":"linux"}`)
	cd, ld := c.putBlob(cfg), c.putBlob([]byte(plantedHTML))
	img := imageManifest(cd, ld, int64(len(cfg)), int64(len(plantedHTML)))
	img["annotations"] = map[string]string{"org.opencontainers.image.description": plantedHTML}
	md, _ := c.pushManifest("v1", img)
	sig := imageManifest(cd, ld, int64(len(cfg)), int64(len(plantedHTML)))
	sig["artifactType"] = "text/html"
	sig["subject"] = map[string]any{"mediaType": mtOCIManifest, "digest": md, "size": 1}
	c.pushManifest("sig", sig)

	blob := "/v2/" + name + "/blobs/" + ld
	for _, auth := range []bool{true, false} {
		resp := s.do(t, http.MethodGet, blob, nil, nil, auth)
		if body := wantStatus(t, resp, http.StatusOK); body != plantedHTML || resp.Header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("GET blob: %q %q", body, resp.Header.Get("Content-Type"))
		}
		checkSafe(t, "GET blob", resp.Header, fileName(ld))
	}
	for _, tc := range []struct {
		method string
		hdr    map[string]string
		status int
	}{
		{http.MethodHead, nil, http.StatusOK},
		{http.MethodGet, map[string]string{"Range": "bytes=0-5"}, http.StatusPartialContent},
		{http.MethodGet, map[string]string{"If-None-Match": `"` + ld + `"`}, http.StatusNotModified},
	} {
		resp := s.do(t, tc.method, blob, nil, tc.hdr, false)
		wantStatus(t, resp, tc.status)
		checkSafe(t, tc.method+" blob "+resp.Status, resp.Header, fileName(ld))
	}

	for _, ref := range []string{"v1", md} {
		u := "/v2/" + name + "/manifests/" + ref
		for _, tc := range []struct {
			method string
			hdr    map[string]string
			status int
		}{
			{http.MethodGet, map[string]string{"Accept": mtOCIManifest}, http.StatusOK},
			{http.MethodHead, map[string]string{"Accept": mtOCIManifest}, http.StatusOK},
			{http.MethodGet, map[string]string{"If-None-Match": `"` + md + `"`}, http.StatusNotModified},
		} {
			resp := s.do(t, tc.method, u, nil, tc.hdr, false)
			wantStatus(t, resp, tc.status)
			checkSafe(t, tc.method+" manifest "+ref+" "+resp.Status, resp.Header, fileName(md))
		}
	}

	resp := s.do(t, http.MethodGet, "/v2/"+name+"/referrers/"+md, nil, nil, false)
	if body := wantStatus(t, resp, http.StatusOK); !strings.Contains(body, `"artifactType":"text/html"`) {
		t.Errorf("referrers: %s", body)
	}
	checkSafe(t, "referrers", resp.Header, fileName(md)+"-referrers.json")

	// Everything else: protected, not an attachment.
	for _, tc := range []struct {
		method, path string
		auth         bool
		status       int
	}{
		{http.MethodGet, "/v2/" + name + "/tags/list", false, http.StatusOK},
		{http.MethodGet, "/v2/", false, http.StatusUnauthorized},
		{http.MethodGet, "/v2/_catalog", true, http.StatusOK},
		{http.MethodGet, "/v2/token?scope=repository:" + name + ":pull", false, http.StatusOK},
		{http.MethodGet, "/v2/" + name + "/blobs/" + sha([]byte("none")), false, http.StatusNotFound},
		{http.MethodHead, "/v2/" + name + "/blobs/" + sha([]byte("none")), false, http.StatusNotFound},
		{http.MethodGet, "/v2/" + name + "/manifests/%3Cscript%3E", false, http.StatusBadRequest},
		{http.MethodGet, "/v2/" + name + "/nosuch", false, http.StatusNotFound},
		{http.MethodPost, "/v2/" + name + "/blobs/uploads/", false, http.StatusUnauthorized},
	} {
		resp := s.do(t, tc.method, tc.path, nil, nil, tc.auth)
		wantStatus(t, resp, tc.status)
		checkSafe(t, tc.method+" "+tc.path, resp.Header, "")
	}
}

// forwardRouter sends every name to the legacy registry.
type forwardRouter struct{ nopRouter }

func (forwardRouter) Route(context.Context, string, bool) (LegacyRoute, error) {
	return LegacyRoute{Decision: LegacyForward, Target: "acme/legacy/app"}, nil
}

// TestLegacyAnswersNeverRender: what a registry:2 in proxy mode answers
// is streamed back with our headers in place of its own, whatever type
// it claims.
func TestLegacyAnswersNeverRender(t *testing.T) {
	t.Parallel()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html")
		h.Set("Content-Security-Policy", "script-src *")
		h.Set("Content-Disposition", "inline")
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case strings.Contains(r.URL.Path, "/blobs/"):
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(plantedHTML))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(plantedHTML))
		}
	}))
	t.Cleanup(upstream.Close)

	st := testsupport.Store(t, testsupport.StoreOptions{Mem: true})
	log := testLogger()
	hs := httpserver.New(httpserver.Options{Logger: log})
	Mount(hs.Router(), st, Options{Auth: auth.New(st, auth.Options{AdminToken: testToken, Logger: log}), Logger: log,
		Legacy: &LegacyOptions{URL: upstream.URL, Router: forwardRouter{}}})
	srv := httptest.NewServer(hs.Handler())
	t.Cleanup(srv.Close)
	s := &testServer{URL: srv.URL, Store: st}

	d := sha([]byte(plantedHTML))
	for _, tc := range []struct {
		method, path string
		status       int
		attachment   string
	}{
		{http.MethodGet, "/v2/team/app/blobs/" + d, http.StatusOK, fileName(d)},
		{http.MethodHead, "/v2/team/app/blobs/" + d, http.StatusOK, fileName(d)},
		{http.MethodGet, "/v2/team/app/manifests/latest", http.StatusNotFound, "attachment; filename=latest"},
	} {
		resp := s.do(t, tc.method, tc.path, nil, nil, true)
		wantStatus(t, resp, tc.status)
		checkSafe(t, tc.method+" "+tc.path, resp.Header, tc.attachment)
	}
	// Refused before forwarding: our own error, protected.
	resp := s.do(t, http.MethodPut, "/v2/team/app/manifests/latest", strings.NewReader("{}"), nil, false)
	wantStatus(t, resp, http.StatusUnauthorized)
	checkSafe(t, "anonymous write", resp.Header, "")

	// Unreachable: a 502 in the spec's format, protected.
	upstream.Close()
	resp = s.do(t, http.MethodGet, "/v2/team/app/blobs/"+d, nil, nil, true)
	wantStatus(t, resp, http.StatusBadGateway)
	checkSafe(t, "502", resp.Header, "")
}
