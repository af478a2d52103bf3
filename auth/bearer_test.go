package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

type tokenReply struct {
	status int
	header http.Header
	body   tokenResponse
	raw    string
}

func (f *fixture) fetchToken(authorization string, scopes ...string) tokenReply {
	f.t.Helper()
	q := url.Values{"service": {DefaultService}, "scope": scopes}
	r := httptest.NewRequest(http.MethodGet, "/v2/token?"+q.Encode(), nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return f.serveToken(r)
}

func (f *fixture) serveToken(r *http.Request) tokenReply {
	f.t.Helper()
	w := httptest.NewRecorder()
	f.authn.TokenHandler(ContainerResolver(f.st)).ServeHTTP(w, r)
	rep := tokenReply{status: w.Code, header: w.Header(), raw: w.Body.String()}
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &rep.body); err != nil {
			f.t.Fatalf("token body %q: %v", w.Body, err)
		}
		if rep.body.Token == "" || rep.body.Token != rep.body.AccessToken || rep.body.ExpiresIn != 300 {
			f.t.Fatalf("token body %+v", rep.body)
		}
	}
	return rep
}

func claimsOf(t *testing.T, token string) bearerClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c bearerClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) containerTarget(repo string) Target { return f.containerImage(repo, "app") }

func (f *fixture) containerImage(repo, image string) Target {
	f.t.Helper()
	ct, err := container.New(f.st).ResolveTarget(context.Background(), "acme", repo, image)
	if err != nil {
		f.t.Fatal(err)
	}
	return ContainerTarget(ct)
}

func (f *fixture) bearerOutcome(token string, action Action, target Target) string {
	f.t.Helper()
	return f.outcome(bearer(token), action, target)
}

func TestBearerTokenFlow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.repo("acme", "pubimages", enum.FormatOCI, enum.VisibilityPublic)
	read := f.mint("read", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	write := f.mint("write", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeWrite)})
	images, pub := f.containerTarget("images"), f.containerTarget("pubimages")
	pullPush := OCIScope("acme/images/app", ActionRead, ActionWrite)

	// A READ token asking for pull,push gets pull.
	rep := f.fetchToken(basic("ci", read), pullPush)
	if rep.status != 200 {
		t.Fatalf("token for a READ token: %d %s", rep.status, rep.raw)
	}
	c := claimsOf(t, rep.body.Token)
	if len(c.Access) != 1 || c.Access[0].Name != "acme/images/app" || strings.Join(c.Access[0].Actions, ",") != "pull" || c.Kind != "token" {
		t.Fatalf("claims %+v", c)
	}
	if got := f.bearerOutcome(rep.body.Token, ActionRead, images); got != "ok" {
		t.Fatalf("pull with the issued token: %s", got)
	}
	if got := f.bearerOutcome(rep.body.Token, ActionWrite, images); got != "403" {
		t.Fatalf("push with a READ token's bearer: %s, want 403 (the identity may not push)", got)
	}

	// A WRITE token that asked only for pull is sent back for a new token.
	rep = f.fetchToken(bearer(write), OCIScope("acme/images/app", ActionRead))
	p, err := f.authn.Authenticate(request(bearer(rep.body.Token)))
	if err != nil {
		t.Fatal(err)
	}
	err = Authorize(context.Background(), p, ActionWrite, images)
	if !errors.Is(err, ErrUnauthenticated) || !InsufficientScope(err) {
		t.Fatalf("push with a pull-only bearer: %v, want insufficient scope", err)
	}
	rep = f.fetchToken(basic("u", write), pullPush)
	if got := f.bearerOutcome(rep.body.Token, ActionWrite, images); got != "ok" {
		t.Fatalf("push with a pull,push bearer: %s", got)
	}
	// Grants are per repository: another image of it is covered, another
	// repository is not.
	if got := f.bearerOutcome(rep.body.Token, ActionWrite, f.containerImage("images", "tools/other")); got != "ok" {
		t.Fatalf("another image: %s", got)
	}
	if got := f.bearerOutcome(rep.body.Token, ActionRead, pub); got != "401" {
		t.Fatalf("a repository outside the grant: %s, want 401 (insufficient scope)", got)
	}
	// Namespace-level reads (catalog) need no grant; writes do.
	if got := f.bearerOutcome(rep.body.Token, ActionRead, NamespaceTarget(f.acme)); got != "ok" {
		t.Fatalf("namespace read: %s", got)
	}

	// Anonymous: a token for public pulls, nothing for private ones.
	rep = f.fetchToken("", OCIScope("acme/pubimages/app", ActionRead), pullPush)
	if rep.status != 200 {
		t.Fatalf("anonymous token: %d %s", rep.status, rep.raw)
	}
	c = claimsOf(t, rep.body.Token)
	if c.Kind != "anonymous" || len(c.Access) != 1 || c.Access[0].Name != "acme/pubimages/app" {
		t.Fatalf("anonymous claims %+v", c)
	}
	if got := f.bearerOutcome(rep.body.Token, ActionRead, pub); got != "ok" {
		t.Fatalf("anonymous pull of a public image: %s", got)
	}
	if got := f.bearerOutcome(rep.body.Token, ActionRead, images); got != "401" {
		t.Fatalf("anonymous pull of a private image: %s", got)
	}
	// Unknown repositories and other resource types are left out.
	rep = f.fetchToken(bearer(write), "repository:acme/nope/app:pull", "registry:catalog:*", "garbage")
	if rep.status != 200 || len(claimsOf(t, rep.body.Token).Access) != 0 {
		t.Fatalf("unknown scopes: %d %s", rep.status, rep.raw)
	}
	// The super-user gets everything asked for.
	rep = f.fetchToken(basic("admin", testAdminToken), "repository:acme/images/app:*")
	if c := claimsOf(t, rep.body.Token); c.Kind != "admin" || strings.Join(c.Access[0].Actions, ",") != "pull,push,delete" {
		t.Fatalf("admin claims %+v", c)
	}
	if got := f.bearerOutcome(rep.body.Token, ActionDelete, images); got != "ok" {
		t.Fatalf("admin delete: %s", got)
	}
}

func TestTokenEndpointRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	read := f.mint("read", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	scope := OCIScope("acme/images/app", ActionRead)

	for name, h := range map[string]string{
		"wrong password":     basic("ci", read+"x"),
		"empty password":     basic(read, ""),
		"unsupported scheme": "Digest x",
		"unknown token":      basic("ci", "arp_nope"),
	} {
		rep := f.fetchToken(h, scope)
		if rep.status != 401 || rep.header.Get("WWW-Authenticate") != BasicChallenge || !strings.Contains(rep.raw, `"UNAUTHORIZED"`) {
			t.Errorf("%s: %d %q %s", name, rep.status, rep.header.Get("WWW-Authenticate"), rep.raw)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/v2/token?service=elsewhere&scope="+url.QueryEscape(scope), nil)
	if rep := f.serveToken(r); rep.status != 400 {
		t.Errorf("unknown service: %d", rep.status)
	}
	r = httptest.NewRequest(http.MethodPut, "/v2/token", nil)
	if rep := f.serveToken(r); rep.status != 405 {
		t.Errorf("PUT: %d", rep.status)
	}
	r = httptest.NewRequest(http.MethodPost, "/v2/token", strings.NewReader("grant_type=refresh_token&refresh_token=x"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rep := f.serveToken(r); rep.status != 400 || !strings.Contains(rep.raw, "unsupported_grant_type") {
		t.Errorf("refresh grant: %d %s", rep.status, rep.raw)
	}

	// Tampering, expiry, another key.
	rep := f.fetchToken(basic("ci", read), scope)
	tok := rep.body.Token
	parts := strings.Split(tok, ".")
	c := claimsOf(t, tok)
	c.Access[0].Actions = []string{"pull", "push", "delete"}
	forged, _ := json.Marshal(c)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(forged) + "." + parts[2]
	badSig := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString([]byte("not the signature, 32 bytes long"))
	for name, s := range map[string]string{"tampered claims": tampered, "bad signature": badSig, "truncated": tok[:len(tok)-3]} {
		if _, err := f.authn.Authenticate(request(bearer(s))); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A kid that names no stored key.
	unknownKid := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT","kid":"999999"}`)) + "." + parts[1] + "." + parts[2]
	if _, err := f.authn.Authenticate(request(bearer(unknownKid))); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("unknown kid: %v", err)
	}
	// Replicas share the keys through the database, whatever their admin
	// token.
	sibling := New(f.st, Options{AdminToken: "another admin token of another length", Clock: f.clock})
	if _, err := sibling.Authenticate(request(bearer(tok))); err != nil {
		t.Errorf("a replica sharing the database: %v", err)
	}
	// Admin bearer tokens die with the admin token's configuration.
	adminTok := f.fetchToken(basic("admin", testAdminToken), scope).body.Token
	noAdmin := New(f.st, Options{Clock: f.clock})
	if _, err := noAdmin.Authenticate(request(bearer(tok))); err != nil {
		t.Errorf("same key, token bearer: %v", err)
	}
	if _, err := noAdmin.Authenticate(request(bearer(adminTok))); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("admin bearer token without a configured admin: %v", err)
	}
	f.clock.Advance(DefaultBearerTTL)
	if _, err := f.authn.Authenticate(request(bearer(tok))); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired bearer token: %v", err)
	}
}

// Revoking the access token also stops the bearer tokens issued for it:
// at once on this replica, within the cache TTL elsewhere.
func TestBearerRevocation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	read := f.mint("read", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	images := f.containerTarget("images")
	tok := f.fetchToken(basic("ci", read), OCIScope("acme/images/app", ActionRead)).body.Token
	replica := New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock})
	for _, a := range []*Authenticator{f.authn, replica} {
		if _, err := a.Authenticate(request(bearer(tok))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.authn.RevokeToken(context.Background(), f.admin, NamespaceOf(f.acme), f.tokens["read"].ID); err != nil {
		t.Fatal(err)
	}
	if got := f.bearerOutcome(tok, ActionRead, images); got != "401" {
		t.Fatalf("revoking replica: %s", got)
	}
	if _, err := replica.Authenticate(request(bearer(tok))); err != nil {
		t.Fatalf("other replica within the TTL: %v", err)
	}
	f.clock.Advance(DefaultCacheTTL)
	if _, err := replica.Authenticate(request(bearer(tok))); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("other replica after the TTL: %v", err)
	}
}

// Service conditions are checked when the token is used, before grants.
func TestBearerSuspended(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	write := f.mint("write", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeWrite)})
	tok := f.fetchToken(basic("ci", write), OCIScope("acme/images/app", ActionRead, ActionWrite)).body.Token
	if _, err := f.st.SetNamespaceCondition(context.Background(), "acme", store.ConditionSuspended, true); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(DefaultCacheTTL)
	images := f.containerTarget("images")
	p, err := f.authn.Authenticate(request(bearer(tok)))
	if err != nil {
		t.Fatal(err)
	}
	if err := Authorize(context.Background(), p, ActionWrite, images); !errors.Is(err, ErrNamespaceUnavailable) {
		t.Fatalf("push in a suspended namespace: %v", err)
	}
	if err := Authorize(context.Background(), p, ActionRead, images); err != nil {
		t.Fatalf("pull in a suspended namespace: %v", err)
	}
}

func TestOAuthPasswordGrant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	read := f.mint("read", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	form := url.Values{
		"grant_type": {"password"}, "username": {"ci"}, "password": {read},
		"service": {DefaultService}, "client_id": {"containerd"},
		"scope": {OCIScope("acme/images/app", ActionRead, ActionWrite)},
	}
	r := httptest.NewRequest(http.MethodPost, "/v2/token", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rep := f.serveToken(r)
	if rep.status != 200 || rep.body.Scope != "repository:acme/images/app:pull" {
		t.Fatalf("password grant: %d %s", rep.status, rep.raw)
	}
	form.Set("password", "")
	r = httptest.NewRequest(http.MethodPost, "/v2/token", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rep := f.serveToken(r); rep.status != 401 {
		t.Fatalf("empty password: %d", rep.status)
	}
}

func TestChallenges(t *testing.T) {
	t.Parallel()
	got := OCIBearerChallenge("https://r.example/v2/token", DefaultService, OCIScope("acme/images/app", ActionRead, ActionWrite))
	want := `Bearer realm="https://r.example/v2/token",service="artifact-registry",scope="repository:acme/images/app:pull,push"`
	if got != want {
		t.Fatalf("challenge %s\nwant      %s", got, want)
	}
	a := newAuthenticator(nil, Options{})
	r := httptest.NewRequest(http.MethodGet, "http://reg.example:5000/v2/", nil)
	if got := a.OCIChallenge(r, false, "", ""); got != `Basic realm="artifact-registry"` {
		t.Fatalf("basic: %s", got)
	}
	if got := a.OCIChallenge(r, true, "", ""); got != `Bearer realm="http://reg.example:5000/v2/token",service="artifact-registry"` {
		t.Fatalf("bearer from the request: %s", got)
	}
	r.Header.Set("X-Forwarded-Proto", "https")
	if got := a.OCIChallenge(r, true, "", "repository:a/b/c:pull"); !strings.HasPrefix(got, `Bearer realm="https://reg.example:5000/v2/token"`) || !strings.HasSuffix(got, `scope="repository:a/b/c:pull"`) {
		t.Fatalf("bearer behind TLS proxy: %s", got)
	}
	if b := string(NpmErrorBody(forbidden("no"))); b != `{"error":"no"}` {
		t.Fatalf("npm body %s", b)
	}
}
