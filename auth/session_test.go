package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

func sessionCount(t *testing.T, f *fixture) int {
	t.Helper()
	var n int
	if err := f.st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM ui_sessions`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustSignIn(t *testing.T, a *Authenticator, secret string) *Session {
	t.Helper()
	s, err := a.SignIn(context.Background(), secret)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
	return s
}

func wantEnded(t *testing.T, a *Authenticator, s *Session, why string) {
	t.Helper()
	_, err := a.LookupSession(context.Background(), s.Secret)
	if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), why) {
		t.Fatalf("lookup of an ended session: %v; want ErrUnauthenticated saying %q", err, why)
	}
}

// TestSessionLifecycle: an admin session works until sign-out, on every
// Authenticator of the database (another instance), and stores only the
// hash of its secret.
func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, Options{})
	s := mustSignIn(t, f.authn, testAdminToken)
	if !s.Principal.IsAdmin() || len(s.Secret) != 43 || s.CSRFToken == "" || s.CSRFToken == s.Secret {
		t.Fatalf("session %+v", s)
	}
	var stored []byte
	if err := f.st.Pool().QueryRow(ctx, `SELECT session_sha256 || admin_binding FROM ui_sessions`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), s.Secret) || strings.Contains(string(stored), testAdminToken) {
		t.Fatal("the session row holds a secret")
	}
	other := New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock})
	got, err := other.LookupSession(ctx, s.Secret)
	if err != nil || !got.Principal.IsAdmin() || got.CSRFToken != s.CSRFToken {
		t.Fatalf("lookup on another instance: %+v %v", got, err)
	}
	if err := f.authn.SignOut(ctx, s.Secret); err != nil {
		t.Fatal(err)
	}
	wantEnded(t, other, s, "signed out")
	if n := sessionCount(t, f); n != 0 {
		t.Fatalf("%d session rows after sign-out", n)
	}
	for _, bad := range []string{"", "short", strings.Repeat("!", 43), s.Secret[:42] + "*"} {
		if _, err := f.authn.LookupSession(ctx, bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("lookup %q: %v", bad, err)
		}
	}
}

// TestSessionSignInRefusals: only a valid admin or access token opens a
// session; nothing is stored for a refusal.
func TestSessionSignInRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for _, secret := range []string{"not-a-token", testAdminToken + "x", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.e30.sig"} {
		if _, err := f.authn.SignIn(context.Background(), secret); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("sign in with %q: %v", secret, err)
		}
	}
	if n := sessionCount(t, f); n != 0 {
		t.Fatalf("%d session rows after refused sign-ins", n)
	}
}

// TestSessionExpiry: idle timeout (touches keep a session alive), then
// the absolute lifetime however active; ended sessions are deleted.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{SessionIdle: time.Hour, SessionLifetime: 3 * time.Hour})
	idle := mustSignIn(t, f.authn, testAdminToken)
	busy := mustSignIn(t, f.authn, testAdminToken)
	for range 5 { // 2h30 of activity every 30 minutes
		f.clock.Advance(30 * time.Minute)
		if _, err := f.authn.LookupSession(context.Background(), busy.Secret); err != nil {
			t.Fatalf("active session: %v", err)
		}
	}
	wantEnded(t, f.authn, idle, "idle")
	f.clock.Advance(31 * time.Minute) // 3h01 after sign-in, 31 min after the last use
	wantEnded(t, f.authn, busy, "expired")
	if n := sessionCount(t, f); n != 0 {
		t.Fatalf("%d session rows left", n)
	}
}

// TestSessionAdminTokenChange: an admin session stops working when the
// configured admin token changes (the new instance has another token).
func TestSessionAdminTokenChange(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	s := mustSignIn(t, f.authn, testAdminToken)
	rotated := New(f.st, Options{AdminToken: "a-new-admin-token-after-rotation", Clock: f.clock})
	wantEnded(t, rotated, s, "admin token was changed")
	none := New(f.st, Options{Clock: f.clock})
	s = mustSignIn(t, f.authn, testAdminToken)
	wantEnded(t, none, s, "admin token was changed")
}

// TestSessionOfAccessToken: a token session is the token's principal and
// ends with the token's revocation or expiry.
func TestSessionOfAccessToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, Options{})
	secret := f.mint("reader", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	s := mustSignIn(t, f.authn, secret)
	if s.Principal.TokenID() != f.tokens["reader"].ID || s.Principal.NamespaceSlug() != "acme" {
		t.Fatalf("principal %v", s.Principal)
	}
	if _, err := f.authn.RevokeToken(ctx, f.admin, NamespaceOf(f.acme), f.tokens["reader"].ID); err != nil {
		t.Fatal(err)
	}
	wantEnded(t, f.authn, s, "revoked")

	exp := f.clock.Now().Add(time.Minute)
	secret = f.mint("short", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead), ExpiresAt: &exp})
	s = mustSignIn(t, f.authn, secret)
	f.clock.Advance(2 * time.Minute)
	wantEnded(t, f.authn, s, "expired")
}

// TestSessionSweep deletes the sessions ended by time and keeps the
// others.
func TestSessionSweep(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{SessionIdle: time.Hour, SessionLifetime: 2 * time.Hour})
	mustSignIn(t, f.authn, testAdminToken)
	mustSignIn(t, f.authn, testAdminToken)
	f.clock.Advance(90 * time.Minute)
	live := mustSignIn(t, f.authn, testAdminToken)
	n, err := f.authn.SweepSessions(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("sweep: %d, %v; want 2", n, err)
	}
	if _, err := f.authn.LookupSession(context.Background(), live.Secret); err != nil {
		t.Fatalf("live session after the sweep: %v", err)
	}
	if c := sessionCount(t, f); c != 1 {
		t.Fatalf("%d rows after the sweep; want 1", c)
	}
}

type sessionClient struct {
	t *testing.T
	h http.Handler
}

func (c sessionClient) do(method, body string, hdr ...string) *httptest.ResponseRecorder {
	c.t.Helper()
	r := httptest.NewRequest(method, "http://registry.test"+SessionPath, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, r)
	return w
}

func sessionCookieOf(t *testing.T, w *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == SessionCookie {
			return c
		}
	}
	t.Fatalf("no %s cookie in %v", SessionCookie, w.Header())
	return nil
}

// TestSessionHandler: the HTTP side of sign-in, session and sign-out,
// cookie attributes, bounded bodies and the origin and CSRF checks.
func TestSessionHandler(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{SecureCookies: true})
	c := sessionClient{t, f.authn.SessionHandler()}
	js := []string{"Content-Type", "application/json"}

	w := c.do(http.MethodPost, `{"token":"`+testAdminToken+`"}`, js...)
	if w.Code != http.StatusCreated || strings.Contains(w.Body.String(), testAdminToken) {
		t.Fatalf("sign in: %d %s", w.Code, w.Body)
	}
	ck := sessionCookieOf(t, w)
	if !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" ||
		ck.MaxAge <= 0 || ck.MaxAge > int(DefaultSessionLifetime/time.Second) {
		t.Fatalf("cookie %+v", ck)
	}
	if w.Header().Get("Cache-Control") != "no-store" || !strings.Contains(w.Body.String(), `"kind":"ADMIN"`) {
		t.Fatalf("answer %v %s", w.Header(), w.Body)
	}
	cookie := SessionCookie + "=" + ck.Value
	s, err := f.authn.LookupSession(context.Background(), ck.Value)
	if err != nil {
		t.Fatal(err)
	}
	if w := c.do(http.MethodGet, "", "Cookie", cookie); !strings.Contains(w.Body.String(), `"csrfToken":"`+s.CSRFToken+`"`) {
		t.Fatalf("GET: %d %s", w.Code, w.Body)
	}

	for _, tc := range []struct {
		name, method, body string
		hdr                []string
		status             int
	}{
		{"wrong token", http.MethodPost, `{"token":"nope"}`, js, http.StatusUnauthorized},
		{"empty token", http.MethodPost, `{"token":""}`, js, http.StatusUnauthorized},
		{"unknown field", http.MethodPost, `{"token":"x","y":1}`, js, http.StatusBadRequest},
		{"form post", http.MethodPost, `token=x`, []string{"Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"text/plain", http.MethodPost, `{"token":"x"}`, []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{"huge body", http.MethodPost, `{"token":"` + strings.Repeat("a", 5000) + `"}`, js, http.StatusRequestEntityTooLarge},
		{"cross origin", http.MethodPost, `{"token":"` + testAdminToken + `"}`, append([]string{"Origin", "https://evil.example"}, js...), http.StatusForbidden},
		{"sign-out without CSRF", http.MethodDelete, "", []string{"Cookie", cookie}, http.StatusForbidden},
		{"sign-out cross origin", http.MethodDelete, "", []string{"Cookie", cookie, CSRFHeader, s.CSRFToken, "Origin", "null"}, http.StatusForbidden},
		{"PUT", http.MethodPut, "", nil, http.StatusMethodNotAllowed},
	} {
		if w := c.do(tc.method, tc.body, tc.hdr...); w.Code != tc.status || !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("%s: %d %s; want %d", tc.name, w.Code, w.Body, tc.status)
		}
	}
	if n := sessionCount(t, f); n != 1 {
		t.Fatalf("%d sessions after refused requests; want 1", n)
	}

	w = c.do(http.MethodDelete, "", "Cookie", cookie, CSRFHeader, s.CSRFToken, "Origin", "http://registry.test")
	if w.Code != http.StatusNoContent || sessionCookieOf(t, w).MaxAge >= 0 {
		t.Fatalf("sign out: %d %v", w.Code, w.Header())
	}
	w = c.do(http.MethodGet, "", "Cookie", cookie)
	if !strings.Contains(w.Body.String(), `"signedIn":false`) || sessionCookieOf(t, w).MaxAge >= 0 {
		t.Fatalf("GET after sign-out: %s %v", w.Body, w.Header())
	}
}

// TestAuthenticateBrowser: the cookie needs its CSRF token; the
// Authorization header needs none and wins over a cookie; an ended
// session is refused and its cookie expired.
func TestAuthenticateBrowser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	s := mustSignIn(t, f.authn, testAdminToken)
	other := mustSignIn(t, f.authn, testAdminToken)
	auth := func(hdr ...string) (*Principal, *httptest.ResponseRecorder, error) {
		r := httptest.NewRequest(http.MethodPost, "/graphql", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Add(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		p, err := f.authn.AuthenticateBrowser(w, r)
		return p, w, err
	}
	cookie := SessionCookie + "=" + s.Secret
	if p, _, err := auth("Cookie", cookie, CSRFHeader, s.CSRFToken); err != nil || !p.IsAdmin() {
		t.Fatalf("cookie and CSRF: %v %v", p, err)
	}
	for name, hdr := range map[string][]string{
		"no CSRF":            {"Cookie", cookie},
		"empty CSRF":         {"Cookie", cookie, CSRFHeader, ""},
		"another session's":  {"Cookie", cookie, CSRFHeader, other.CSRFToken},
		"the cookie as CSRF": {"Cookie", cookie, CSRFHeader, s.Secret},
		"two CSRF headers":   {"Cookie", cookie, CSRFHeader, s.CSRFToken, CSRFHeader, s.CSRFToken},
		"malformed cookie":   {"Cookie", SessionCookie + "=abc"},
	} {
		if _, _, err := auth(hdr...); !errors.Is(err, ErrCSRFToken) || GraphQLCode(err) != CodeCSRFToken || HTTPStatus(err) != http.StatusForbidden {
			t.Errorf("%s: %v", name, err)
		}
	}
	if p, _, err := auth("Authorization", bearer(testAdminToken), "Cookie", SessionCookie+"=garbage"); err != nil || !p.IsAdmin() {
		t.Fatalf("bearer with a stray cookie: %v %v", p, err)
	}
	if p, _, err := auth(); err != nil || !p.IsAnonymous() {
		t.Fatalf("nothing: %v %v", p, err)
	}
	if err := f.authn.SignOut(context.Background(), s.Secret); err != nil {
		t.Fatal(err)
	}
	_, w, err := auth("Cookie", cookie, CSRFHeader, s.CSRFToken)
	if !errors.Is(err, ErrUnauthenticated) || sessionCookieOf(t, w).MaxAge >= 0 {
		t.Fatalf("signed-out session: %v %v", err, w.Header())
	}
}
