package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

func TestParseChallenges(t *testing.T) {
	cases := []struct {
		in   []string
		want []challenge
	}{
		{[]string{`Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:library/alpine:pull"`},
			[]challenge{{"bearer", map[string]string{"realm": "https://auth.example.com/token", "service": "registry.example.com", "scope": "repository:library/alpine:pull"}}}},
		{[]string{`Basic realm="Registry Realm"`}, []challenge{{"basic", map[string]string{"realm": "Registry Realm"}}}},
		{[]string{`Basic realm="a, b", Bearer realm="https://x/t", service=svc`},
			[]challenge{{"basic", map[string]string{"realm": "a, b"}}, {"bearer", map[string]string{"realm": "https://x/t", "service": "svc"}}}},
		{[]string{`Negotiate`, `bearer  REALM = "r\"q" , scope="a:b:pull b:c:pull"`},
			[]challenge{{"negotiate", map[string]string{}}, {"bearer", map[string]string{"realm": `r"q`, "scope": "a:b:pull b:c:pull"}}}},
		{[]string{`Bearer abc==`}, []challenge{{"bearer", map[string]string{"abc": ""}}, {"=", map[string]string{}}}[:1]},
		{[]string{``, `,,`}, nil},
	}
	for _, tc := range cases {
		got := parseChallenges(tc.in)
		if len(tc.want) == 0 && len(got) == 0 {
			continue
		}
		if !reflect.DeepEqual(got[:len(tc.want)], tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
	if ch := pickChallenge(parseChallenges([]string{`Basic realm="x", Bearer realm="https://r/t"`})); ch == nil || ch.scheme != "bearer" {
		t.Fatalf("pick: %+v", ch)
	}
	if ch := pickChallenge(parseChallenges([]string{`Bearer service="no realm"`})); ch != nil {
		t.Fatalf("a Bearer challenge without realm was picked: %+v", ch)
	}
	// npm registries name their realm: the credentials go as Basic.
	if ch := pickChallenge(parseChallenges([]string{`Bearer realm="artifact-registry"`})); ch == nil || ch.scheme != "basic" {
		t.Fatalf("a named Bearer realm: %+v", ch)
	}
	if ch := pickChallenge(parseChallenges([]string{`Bearer realm="ftp://r/t"`})); ch == nil || ch.scheme != "bearer" {
		t.Fatalf("a token service URL of another scheme (realmPolicy refuses it): %+v", ch)
	}
}

// TestNamedBearerRealm: an upstream that answers `Bearer realm="<name>"`
// (an npm registry) gets the credentials as Basic after its challenge,
// then up front; without credentials the 401 stays a refusal.
func TestNamedBearerRealm(t *testing.T) {
	var mu sync.Mutex
	var saw []string
	up := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		saw = append(saw, r.Header.Get("Authorization"))
		mu.Unlock()
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "npm-token" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="artifact-registry"`)
			http.Error(w, `{"error":"authentication required"}`, http.StatusUnauthorized)
			return
		}
		io.WriteString(w, `{"name":"left-pad"}`)
	}))
	c := newTestClient(t, Config{URL: up.URL, Credentials: &Credentials{Username: "ci", Password: "npm-token"}})
	for range 2 {
		resp, err := c.Do(context.Background(), &Request{Path: "/left-pad"})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != `{"name":"left-pad"}` {
			t.Fatalf("body %q", body)
		}
	}
	mu.Lock()
	got := slices.Clone(saw)
	mu.Unlock()
	if len(got) != 3 || got[0] != "" || !strings.HasPrefix(got[1], "Basic ") || got[2] != got[1] {
		t.Fatalf("authorizations %q, want none, then Basic after the challenge and up front", got)
	}
	anon := newTestClient(t, Config{URL: up.URL})
	_, err := anon.Do(context.Background(), &Request{Path: "/left-pad"})
	wantKind(t, err, KindUnauthorized)
}

// tokenRegistry is a fake OCI upstream: /v2/<name>/... answers a Bearer
// (or Basic) challenge, /token issues tokens for the scopes asked, from
// one host:port as distribution's token setups are usually reached.
type tokenRegistry struct {
	mu        sync.Mutex
	user      string
	pass      string
	basic     bool
	service   string
	realm     string // default: this server's /token
	expiresIn int
	tokens    map[string][]string
	issued    []tokenRequest
	hits      counter
	refused   int // 401s answered on /v2/
	redirects map[string]string
	url       string
	// issuer is the server whose tokens this one accepts (nil: itself).
	issuer *tokenRegistry
}

type tokenRequest struct {
	scopes []string
	auth   string
}

func newTokenRegistry(t testing.TB, user, pass string, opts ...func(*tokenRegistry)) *tokenRegistry {
	tr := &tokenRegistry{user: user, pass: pass, service: "fake-upstream", expiresIn: 300,
		tokens: map[string][]string{}, redirects: map[string]string{}}
	for _, o := range opts {
		o(tr)
	}
	s := serve(t, tr)
	tr.url = s.URL
	return tr
}

func (tr *tokenRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tr.hits.add(r.Method, r.URL.Path)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if r.URL.Path == "/token" {
		tr.issued = append(tr.issued, tokenRequest{scopes: r.URL.Query()["scope"], auth: r.Header.Get("Authorization")})
		if u, p, ok := r.BasicAuth(); tr.user != "" && (!ok || u != tr.user || p != tr.pass) {
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("service") != tr.service {
			http.Error(w, "bad service", http.StatusBadRequest)
			return
		}
		tok := fmt.Sprintf("tok%d", len(tr.issued))
		tr.tokens[tok] = r.URL.Query()["scope"]
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_in": tr.expiresIn})
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/v2/") {
		http.NotFound(w, r)
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/v2/")
	i := strings.Index(rest, "/blobs/")
	if i < 0 {
		i = strings.Index(rest, "/manifests/")
	}
	if i < 0 {
		http.NotFound(w, r)
		return
	}
	name := rest[:i]
	need := "repository:" + name + ":pull"
	if !tr.authorized(r, need) {
		tr.refused++
		if tr.basic {
			w.Header().Set("WWW-Authenticate", `Basic realm="fake"`)
		} else {
			realm := tr.realm
			if realm == "" {
				realm = "http://" + r.Host + "/token"
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q,service=%q,scope=%q`, realm, tr.service, need))
		}
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
		return
	}
	if loc, ok := tr.redirects[r.URL.Path]; ok {
		http.Redirect(w, r, loc, http.StatusTemporaryRedirect)
		return
	}
	io.WriteString(w, "content of "+r.URL.Path)
}

func (tr *tokenRegistry) authorized(r *http.Request, need string) bool {
	if tr.basic {
		u, p, ok := r.BasicAuth()
		return ok && u == tr.user && p == tr.pass
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tr.issuer != nil {
		tr.issuer.mu.Lock()
		defer tr.issuer.mu.Unlock()
		return ok && slices.Contains(tr.issuer.tokens[tok], need)
	}
	return ok && slices.Contains(tr.tokens[tok], need)
}

func (tr *tokenRegistry) setRealm(realm string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.realm = realm
}

func (tr *tokenRegistry) issuedCount() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.issued)
}

func (tr *tokenRegistry) issuedList() []tokenRequest {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.issued)
}

func (tr *tokenRegistry) revokeAll() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	clear(tr.tokens)
}

func (tr *tokenRegistry) refusedCount() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.refused
}

func pull(c *Client, name, path string) (string, error) {
	resp, err := c.Do(context.Background(), &Request{Path: "v2/" + name + "/" + path, Scopes: []string{"repository:" + name + ":pull"}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestTokenCachePerScope: the challenge is discovered by the first
// request; a token is fetched once per scope and reused until it
// expires, then fetched again without a 401 first; concurrent requests of
// a new scope share one token request; a token the upstream stops
// accepting is replaced once.
func TestTokenCachePerScope(t *testing.T) {
	clk := newClock()
	tr := newTokenRegistry(t, "alice", "s3cret-pass")
	c := newTestClient(t, Config{URL: tr.url, Now: clk.Now, Credentials: &Credentials{Username: "alice", Password: "s3cret-pass"}})
	if tr.hits.total() != 0 {
		t.Fatal("New contacted the upstream")
	}
	for range 3 {
		if body, err := pull(c, "team/a", "blobs/x"); err != nil || body != "content of /v2/team/a/blobs/x" {
			t.Fatalf("pull: %q %v", body, err)
		}
	}
	if n := tr.issuedCount(); n != 1 {
		t.Fatalf("tokens %d after 3 pulls of one scope, want 1", n)
	}
	if n := tr.refusedCount(); n != 1 {
		t.Fatalf("401s %d, want 1 (the discovery)", n)
	}
	if _, err := pull(c, "team/b", "manifests/latest"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := pull(c, "team/c", "blobs/y"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := tr.issuedCount(); n != 3 {
		t.Fatalf("tokens %d after scopes a, b and 10 concurrent c, want 3", n)
	}
	if n := tr.refusedCount(); n != 1 {
		t.Fatalf("401s %d: known challenges should get their token before asking", n)
	}
	for _, is := range tr.issuedList() {
		if !strings.HasPrefix(is.auth, "Basic ") || len(is.scopes) != 1 {
			t.Fatalf("token request %+v", is)
		}
	}
	if got := tr.issuedList()[1].scopes[0]; got != "repository:team/b:pull" {
		t.Fatalf("scope asked %q", got)
	}

	// Expiry: refreshed before use, no 401.
	clk.Advance(300 * time.Second)
	if _, err := pull(c, "team/a", "blobs/x"); err != nil {
		t.Fatal(err)
	}
	if n, r := tr.issuedCount(), tr.refusedCount(); n != 4 || r != 1 {
		t.Fatalf("after expiry: tokens %d, 401s %d; want 4, 1", n, r)
	}
	// Still within its life: reused.
	clk.Advance(200 * time.Second)
	if _, err := pull(c, "team/a", "blobs/x"); err != nil {
		t.Fatal(err)
	}
	if n := tr.issuedCount(); n != 4 {
		t.Fatalf("tokens %d, want 4", n)
	}
	// Revoked upstream: one 401, one new token, success.
	tr.revokeAll()
	if _, err := pull(c, "team/a", "blobs/x"); err != nil {
		t.Fatal(err)
	}
	if n, r := tr.issuedCount(), tr.refusedCount(); n != 5 || r != 2 {
		t.Fatalf("after revocation: tokens %d, 401s %d; want 5, 2", n, r)
	}
}

// TestTokenRefused: wrong credentials give KindUnauthorized (no retry
// loop), without the password in the error.
func TestTokenRefused(t *testing.T) {
	tr := newTokenRegistry(t, "alice", "right-password")
	c := newTestClient(t, Config{URL: tr.url, Credentials: &Credentials{Username: "alice", Password: "wrong-password"}})
	_, err := pull(c, "a", "blobs/x")
	e := wantKind(t, err, KindUnauthorized)
	if strings.Contains(err.Error(), "wrong-password") || strings.Contains(err.Error(), tr.url) || e.ClientStatus() != http.StatusBadGateway {
		t.Fatalf("error %q", err)
	}
	if n := tr.issuedCount(); n != 1 {
		t.Fatalf("token requests %d, want 1", n)
	}
	if c.breaker.consecutiveFailures() != 0 {
		t.Fatal("refused credentials counted as an outage")
	}
	if h := c.Health(); h.Status != enum.HealthUnhealthy || !strings.Contains(h.LastError, "credentials") {
		t.Fatalf("health %+v", h)
	}

	basic := newTokenRegistry(t, "bob", "pw-of-bob", func(tr *tokenRegistry) { tr.basic = true })
	c = newTestClient(t, Config{URL: basic.url, Credentials: &Credentials{Username: "bob", Password: "nope-nope"}})
	wantKind(t, func() error { _, err := pull(c, "a", "blobs/x"); return err }(), KindUnauthorized)
	if n := basic.hits.get(http.MethodGet, "/v2/a/blobs/x"); n != 2 {
		t.Fatalf("basic: %d requests, want 2 (challenge, one answer)", n)
	}
	c = newTestClient(t, Config{URL: basic.url, Credentials: &Credentials{Username: "bob", Password: "pw-of-bob"}})
	for range 3 {
		if _, err := pull(c, "a", "blobs/x"); err != nil {
			t.Fatal(err)
		}
	}
	if n := basic.hits.get(http.MethodGet, "/v2/a/blobs/x"); n != 2+4 {
		t.Fatalf("basic: %d requests, want 6 (one challenge, then Basic sent up front)", n)
	}
	anon := newTestClient(t, Config{URL: basic.url})
	wantKind(t, func() error { _, err := pull(anon, "a", "blobs/x"); return err }(), KindUnauthorized)
}

// TestRealmPolicy: the token realm gets the credentials only on the
// upstream's host:port, a trusted host or the same registrable domain,
// never over plain http from an https upstream; a realm on a private
// address elsewhere is not contacted at all.
func TestRealmPolicy(t *testing.T) {
	creds := &Credentials{Username: "alice", Password: "s3cret-pass"}
	// The registry answers Bearer challenges naming an outside realm;
	// its tokens come from that realm's server.
	auth := newTokenRegistry(t, "", "")
	reg := newTokenRegistry(t, "", "", func(tr *tokenRegistry) { tr.issuer = auth })
	regAddr, authAddr := hostOf(reg.url), hostOf(auth.url)

	t.Run("private-address", func(t *testing.T) {
		reg.setRealm(auth.url + "/token")
		c := newTestClient(t, Config{URL: reg.url, Credentials: creds})
		_, err := pull(c, "a", "blobs/x")
		if e := wantKind(t, err, KindUnauthorized); !strings.Contains(e.Error(), "private") {
			t.Fatalf("error %v", e)
		}
		if auth.issuedCount() != 0 {
			t.Fatal("a realm on a private address was contacted")
		}
	})

	cases := []struct {
		name, upstream, realm string
		trusted               []string
		wantCreds             bool
	}{
		{"trusted-host", reg.url, auth.url + "/token", []string{authAddr}, true},
		{"same-registrable-domain", "http://registry.example.com", "http://auth.example.com/token", nil, true},
		{"subdomain-of-upstream", "http://example.com", "http://auth.example.com/token", nil, true},
		{"other-domain", "http://registry.example.com", "http://auth.example.org/token", nil, false},
		{"public-suffix-neighbour", "http://a.github.io", "http://b.github.io/token", nil, false},
	}
	m := map[string]string{
		"registry.example.com:80": regAddr, "example.com:80": regAddr, "a.github.io:80": regAddr,
		"auth.example.com:80": authAddr, "auth.example.org:80": authAddr, "b.github.io:80": authAddr,
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg.setRealm(tc.realm)
			before := auth.issuedCount()
			c := newTestClient(t, Config{URL: tc.upstream, Credentials: creds, TrustedRealms: tc.trusted, Transport: mappedTransport(m)})
			if _, err := pull(c, "a", "blobs/x"); err != nil {
				t.Fatal(err)
			}
			issued := auth.issuedList()
			if len(issued) != before+1 {
				t.Fatalf("token requests %d", len(issued)-before)
			}
			if got := issued[len(issued)-1].auth != ""; got != tc.wantCreds {
				t.Fatalf("credentials sent to the realm: %v, want %v", got, tc.wantCreds)
			}
		})
	}

	t.Run("https-upstream-http-realm", func(t *testing.T) {
		tls := httptest.NewTLSServer(reg)
		t.Cleanup(tls.Close)
		reg.setRealm("http://auth.example.com/token")
		tr := mappedTransport(map[string]string{"example.com:443": hostOf(strings.Replace(tls.URL, "https://", "http://", 1)), "auth.example.com:80": authAddr})
		tr.TLSClientConfig = tls.Client().Transport.(*http.Transport).TLSClientConfig
		c := newTestClient(t, Config{URL: "https://example.com", Credentials: creds, Transport: tr})
		if _, err := pull(c, "a", "blobs/x"); err != nil {
			t.Fatal(err)
		}
		issued := auth.issuedList()
		if issued[len(issued)-1].auth != "" {
			t.Fatal("credentials went to a plain-http realm of an https upstream")
		}
	})
}

// TestRedirectStripsCredentials: a blob redirected to another host (a CDN
// or a bucket, here even a subdomain of the upstream, which Go's own
// client would trust) receives no Authorization, Basic or Bearer; a
// redirect within the upstream's origin keeps it.
func TestRedirectStripsCredentials(t *testing.T) {
	var mu sync.Mutex
	var cdnSaw []string
	cdn := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cdnSaw = append(cdnSaw, r.Header.Get("Authorization")+"|"+r.Header.Get("Cookie"))
		mu.Unlock()
		io.WriteString(w, "from the cdn")
	}))
	for _, basic := range []bool{true, false} {
		name := map[bool]string{true: "basic", false: "bearer"}[basic]
		t.Run(name, func(t *testing.T) {
			reg := newTokenRegistry(t, "alice", "s3cret-pass", func(tr *tokenRegistry) {
				tr.basic = basic
				tr.redirects["/v2/a/blobs/cdn"] = "http://cdn.registry.example.com/blob"
				tr.redirects["/v2/a/blobs/local"] = "http://registry.example.com/v2/a/blobs/data"
			})
			m := map[string]string{"registry.example.com:80": hostOf(reg.url), "cdn.registry.example.com:80": hostOf(cdn.URL)}
			c := newTestClient(t, Config{URL: "http://registry.example.com", Transport: mappedTransport(m),
				Credentials: &Credentials{Username: "alice", Password: "s3cret-pass"}})
			mu.Lock()
			cdnSaw = nil
			mu.Unlock()
			body, err := pull(c, "a", "blobs/cdn")
			if err != nil || body != "from the cdn" {
				t.Fatalf("pull: %q %v", body, err)
			}
			// A same-origin redirect keeps the credentials (the target
			// requires them).
			if body, err := pull(c, "a", "blobs/local"); err != nil || body != "content of /v2/a/blobs/data" {
				t.Fatalf("same-origin redirect: %q %v", body, err)
			}
			// An absolute URL elsewhere (an npm tarball host) gets none.
			resp, err := c.Do(context.Background(), &Request{Path: "http://cdn.registry.example.com/direct", Scopes: []string{"repository:a:pull"}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			saw := slices.Clone(cdnSaw)
			mu.Unlock()
			if len(saw) != 2 || saw[0] != "|" || saw[1] != "|" {
				t.Fatalf("the CDN saw %q", saw)
			}
		})
	}
	// The control: Go's default redirect policy forwards Authorization to
	// a subdomain, so the test above would catch a client relying on it.
	reg := newTokenRegistry(t, "alice", "s3cret-pass", func(tr *tokenRegistry) {
		tr.basic = true
		tr.redirects["/v2/a/blobs/cdn"] = "http://cdn.registry.example.com/blob"
	})
	m := map[string]string{"registry.example.com:80": hostOf(reg.url), "cdn.registry.example.com:80": hostOf(cdn.URL)}
	req, _ := http.NewRequest(http.MethodGet, "http://registry.example.com/v2/a/blobs/cdn", nil)
	req.SetBasicAuth("alice", "s3cret-pass")
	mu.Lock()
	cdnSaw = nil
	mu.Unlock()
	resp, err := (&http.Client{Transport: mappedTransport(m)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(cdnSaw) != 1 || !strings.HasPrefix(cdnSaw[0], "Basic ") {
		t.Fatalf("control: Go's client sent %q to the subdomain", cdnSaw)
	}
}
