package oci

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
)

func TestLegacyTokenChallengeParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bearerChallenge
		ok   bool
	}{
		{`Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull,push"`,
			bearerChallenge{realm: "https://auth.example/token", service: "reg", scopes: []string{"repository:a/b:pull,push"}}, true},
		{`bearer realm=http://x/t, service="s"`, bearerChallenge{realm: "http://x/t", service: "s"}, true},
		{`Bearer realm="http://x/t",scope="repository:a:pull repository:b:pull"`,
			bearerChallenge{realm: "http://x/t", scopes: []string{"repository:a:pull", "repository:b:pull"}}, true},
		{`Bearer realm="http://x/\"q\"",service="s"`, bearerChallenge{realm: `http://x/"q"`, service: "s"}, true},
		{`Basic realm="registry"`, bearerChallenge{}, false},
		{`Bearer service="s"`, bearerChallenge{}, false}, // no realm
		{`Bearer realm="unterminated`, bearerChallenge{realm: "unterminated"}, true},
		{``, bearerChallenge{}, false},
	} {
		got, ok := parseBearerChallenge(tc.in)
		if ok != tc.ok || (ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("parse %q = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLegacyTokenScopes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method, path string
		want         []string
	}{
		{"GET", "/v2/team/app/manifests/latest", []string{"repository:team/app:pull"}},
		{"HEAD", "/v2/team/app/blobs/sha256:aa", []string{"repository:team/app:pull"}},
		{"PATCH", "/v2/team/app/blobs/uploads/123", []string{"repository:team/app:pull,push"}},
		{"PUT", "/v2/team/blobs/app/manifests/v1", []string{"repository:team/blobs/app:pull,push"}},
		{"DELETE", "/v2/a/manifests/sha256:aa", []string{"repository:a:delete"}},
		{"GET", "/v2/a/tags/list", []string{"repository:a:pull"}},
		{"GET", "/v2/a/referrers/sha256:aa", []string{"repository:a:pull"}},
		{"POST", "/v2/a/blobs/uploads/?mount=sha256:aa&from=b/c", []string{"repository:a:pull,push", "repository:b/c:pull"}},
		{"GET", "/v2/", nil},
		{"GET", "/v2/_catalog", nil},
	} {
		r, _ := http.NewRequest(tc.method, "http://legacy"+tc.path, nil)
		if got := legacyScopes(r); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// tokenRegistry is a real distribution registry configured with `auth:
// token`, its token service, and our transport in front of it.
type tokenRegistry struct {
	ts   *legacytest.TokenServer
	base *url.URL
	auth *legacyAuth
	c    *http.Client
}

func newTokenRegistry(t *testing.T, user, password string) *tokenRegistry {
	t.Helper()
	ts := legacytest.StartTokenServer(t, "legacy-user", "legacy-secret")
	host, _ := legacytest.StartRegistryConfig(t, legacytest.V3, filepath.Join(t.TempDir(), "legacy"), ts.RegistryConfig())
	base, _ := url.Parse("http://" + host)
	a := newLegacyAuth(nil, base, user, password)
	return &tokenRegistry{ts: ts, base: base, auth: a,
		c: &http.Client{Transport: a, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (tr *tokenRegistry) do(t *testing.T, method, path string, body io.Reader, header ...string) *http.Response {
	t.Helper()
	u := path
	if !strings.HasPrefix(u, "http") {
		u = tr.base.String() + path
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := tr.c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func expectStatus(t *testing.T, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d, want %d: %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, b)
	}
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// onlyReader hides the length of a body, as a client's streamed upload
// does: the transport cannot buffer or replay it.
type onlyReader struct{ io.Reader }

// The token flow against a real distribution registry: a streamed
// monolithic upload as the very first request (the realm comes from the
// probe, the scope from the path), a chunked upload, a manifest PUT, reads
// and a delete; one token per scope, reused from the cache.
func TestLegacyTokenRealRegistry(t *testing.T) {
	t.Parallel()
	tr := newTokenRegistry(t, "legacy-user", "legacy-secret")

	layer := bytes.Repeat([]byte("layer bytes "), 50_000)
	ld := digestOf(layer)
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	cd := digestOf(config)
	manifest := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`, cd, len(config), ld, len(layer)))
	putManifest := func() *http.Response {
		return tr.do(t, "PUT", "/v2/team/app/manifests/v1", onlyReader{bytes.NewReader(manifest)},
			"Content-Type", "application/vnd.oci.image.manifest.v1+json")
	}

	// The very first request streams a body: authorized (the registry
	// looks at the manifest and finds its blobs missing), so the token
	// was there before the body went out.
	resp := putManifest()
	expectStatus(t, resp, http.StatusBadRequest)
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "BLOB_UNKNOWN") {
		t.Fatalf("manifest PUT before its blobs: %s", b)
	}

	// The layer: POST, then a monolithic streamed PUT.
	resp = tr.do(t, "POST", "/v2/team/app/blobs/uploads/", nil)
	expectStatus(t, resp, http.StatusAccepted)
	loc, _ := tr.base.Parse(resp.Header.Get("Location"))
	q := loc.Query()
	q.Set("digest", ld)
	loc.RawQuery = q.Encode()
	resp = tr.do(t, "PUT", loc.String(), onlyReader{bytes.NewReader(layer)}, "Content-Type", "application/octet-stream")
	expectStatus(t, resp, http.StatusCreated)

	// The config: POST, streamed PATCH, PUT.
	resp = tr.do(t, "POST", "/v2/team/app/blobs/uploads/", nil)
	expectStatus(t, resp, http.StatusAccepted)
	loc, _ = tr.base.Parse(resp.Header.Get("Location"))
	resp = tr.do(t, "PATCH", loc.String(), onlyReader{bytes.NewReader(config)}, "Content-Type", "application/octet-stream")
	expectStatus(t, resp, http.StatusAccepted)
	loc, _ = tr.base.Parse(resp.Header.Get("Location"))
	q = loc.Query()
	q.Set("digest", cd)
	loc.RawQuery = q.Encode()
	resp = tr.do(t, "PUT", loc.String(), nil)
	expectStatus(t, resp, http.StatusCreated)

	expectStatus(t, putManifest(), http.StatusCreated)

	resp = tr.do(t, "GET", "/v2/team/app/manifests/v1", nil, "Accept", "application/vnd.oci.image.manifest.v1+json")
	expectStatus(t, resp, http.StatusOK)
	if got, _ := io.ReadAll(resp.Body); !bytes.Equal(got, manifest) {
		t.Fatalf("manifest: %s", got)
	}
	resp = tr.do(t, "GET", "/v2/team/app/blobs/"+ld, nil)
	expectStatus(t, resp, http.StatusOK)
	if got, _ := io.ReadAll(resp.Body); !bytes.Equal(got, layer) {
		t.Fatal("layer bytes differ")
	}
	expectStatus(t, tr.do(t, "HEAD", "/v2/team/app/blobs/"+cd, nil), http.StatusOK)
	expectStatus(t, tr.do(t, "GET", "/v2/team/app/tags/list", nil), http.StatusOK)
	expectStatus(t, tr.do(t, "GET", "/v2/team/other/manifests/v1", nil), http.StatusNotFound)

	want := []string{"repository:team/app:pull,push", "repository:team/app:pull", "repository:team/other:pull"}
	if got := tr.ts.Issued(); !reflect.DeepEqual(got, want) {
		t.Fatalf("tokens issued for %q, want one per scope %q", got, want)
	}

	// Past expires_in the token is fetched again.
	tr.auth.now = func() time.Time { return time.Now().Add(301 * time.Second) }
	expectStatus(t, tr.do(t, "HEAD", "/v2/team/app/manifests/v1", nil, "Accept", "application/vnd.oci.image.manifest.v1+json"), http.StatusOK)
	if n := len(tr.ts.Issued()); n != 4 {
		t.Fatalf("%d tokens after expiry, want 4", n)
	}
}

// A token the registry refuses (revoked, or signed by a rotated key): a
// bodiless request is retried once with a fresh token; a request with a
// body is not replayed, and the next one gets a fresh token.
func TestLegacyTokenRetry(t *testing.T) {
	t.Parallel()
	tr := newTokenRegistry(t, "legacy-user", "legacy-secret")
	tr.ts.UseAccessToken()
	expectStatus(t, tr.do(t, "GET", "/v2/team/app/tags/list", nil), http.StatusNotFound)

	poison := func(scope string) {
		tr.auth.mu.Lock()
		defer tr.auth.mu.Unlock()
		tr.auth.tokens[tokenKey(tr.auth.bearer, []string{scope})] = legacyToken{value: "not-a-jwt", expires: time.Now().Add(time.Hour)}
	}
	poison("repository:team/app:pull")
	expectStatus(t, tr.do(t, "GET", "/v2/team/app/tags/list", nil), http.StatusNotFound)

	poison("repository:team/app:pull,push")
	body := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` +
		`{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:` + strings.Repeat("0", 64) + `","size":2},"layers":[]}`
	put := func() *http.Response {
		return tr.do(t, "PUT", "/v2/team/app/manifests/v1", onlyReader{strings.NewReader(body)},
			"Content-Type", "application/vnd.oci.image.manifest.v1+json")
	}
	expectStatus(t, put(), http.StatusUnauthorized) // not replayed
	expectStatus(t, put(), http.StatusBadRequest)   // authorized: the config blob is unknown
	if n := len(tr.ts.Issued()); n != 3 {
		t.Fatalf("%d tokens issued, want 3 (pull, its refresh, push)", n)
	}
}

// Wrong configured credentials: the token service refuses them and the
// proxy reports the credentials, never a challenge the client cannot
// answer.
func TestLegacyTokenBadCredentials(t *testing.T) {
	t.Parallel()
	tr := newTokenRegistry(t, "legacy-user", "wrong")
	req, _ := http.NewRequest("GET", tr.base.String()+"/v2/team/app/tags/list", nil)
	_, err := tr.c.Do(req)
	if !errors.Is(err, errLegacyCredentials) {
		t.Fatalf("err = %v, want the credentials error", err)
	}
	if tr.ts.Denied() != 1 {
		t.Fatalf("token service saw %d refused requests", tr.ts.Denied())
	}

	// Through the reverse proxy, the client gets a 502 in the OCI error
	// format naming the cause, and no challenge.
	p, err := newLegacyProxy(LegacyOptions{URL: tr.base.String(), Username: "legacy-user", Password: "wrong", Router: nopRouter{}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, httptest.NewRequest("GET", "/v2/team/app/manifests/v1", nil))
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "refused the configured credentials") ||
		rec.Header().Get("WWW-Authenticate") != "" {
		t.Fatalf("client got %d %q %s", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
	}
}

// countingTransport counts the probes of /v2/.
type countingTransport struct {
	next   http.RoundTripper
	mu     sync.Mutex
	probes int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == "/v2/" {
		c.mu.Lock()
		c.probes++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

// Concurrent first requests: one probe, one token per scope, every
// request authorized.
func TestLegacyTokenConcurrent(t *testing.T) {
	t.Parallel()
	tr := newTokenRegistry(t, "legacy-user", "legacy-secret")
	ct := &countingTransport{next: http.DefaultTransport}
	tr.auth.next = ct
	var wg sync.WaitGroup
	codes := make(chan int, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v2/team/app%d/tags/list", tr.base, i%4), nil)
			resp, err := tr.c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusNotFound {
			t.Fatalf("concurrent read: %d, want 404 (authorized, no such repository)", c)
		}
	}
	if ct.probes != 1 {
		t.Fatalf("%d probes of /v2/, want 1", ct.probes)
	}
	if got := tr.ts.Issued(); len(got) != 4 {
		t.Fatalf("tokens issued: %q, want one per repository", got)
	}
}

// A token service that answers without a token, with a non-JSON body or
// an error status, or is not reachable: the request fails with the token
// error, which the client gets as a 502.
func TestLegacyTokenBadTokenService(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]http.HandlerFunc{
		"no token":    func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"expires_in":60}`) },
		"not JSON":    func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `<html>`) },
		"500":         func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusInternalServerError) },
		"unreachable": nil,
	} {
		t.Run(name, func(t *testing.T) {
			tr := newTokenRegistry(t, "legacy-user", "legacy-secret")
			realm := "http://127.0.0.1:1/token"
			if h != nil {
				srv := httptest.NewServer(h)
				t.Cleanup(srv.Close)
				realm = srv.URL + "/token"
			}
			tr.auth.mu.Lock()
			tr.auth.probed, tr.auth.bearer = true, &bearerChallenge{realm: realm, service: "legacy-registry"}
			tr.auth.mu.Unlock()
			req, _ := http.NewRequest("PUT", tr.base.String()+"/v2/team/app/manifests/v1", strings.NewReader("{}"))
			_, err := tr.c.Do(req)
			if !errors.Is(err, errLegacyToken) {
				t.Fatalf("err = %v, want the token error", err)
			}
		})
	}
}

// BenchmarkLegacyTokenCached: the per-request cost of the token flow once
// the scope's token is cached (scope derivation, cache lookup, header).
func BenchmarkLegacyTokenCached(b *testing.B) {
	base, _ := url.Parse("http://legacy")
	a := newLegacyAuth(nil, base, "u", "p")
	ch := &bearerChallenge{realm: "http://legacy/token", service: "s"}
	a.probed, a.bearer = true, ch
	a.tokens[tokenKey(ch, []string{"repository:team/app:pull"})] = legacyToken{value: "tok", expires: time.Now().Add(time.Hour)}
	req, _ := http.NewRequest("GET", "http://legacy/v2/team/app/blobs/sha256:aa", nil)
	b.ReportAllocs()
	for b.Loop() {
		out := req.Clone(req.Context())
		if err := a.authorize(out, ch, legacyScopes(req)); err != nil {
			b.Fatal(err)
		}
	}
}
