package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
)

// Web UI sessions. The UI posts the token a person typed once (SignIn);
// the answer sets an HttpOnly, SameSite=Strict cookie holding a random
// 256-bit session secret, and the token is never kept by the browser. The
// session row (store: ui_sessions) holds only the secret's SHA-256 and
// what the session stands for, so every instance sees it and a sign-out
// ends it everywhere at once (no process-local state).
//
// A request authenticated by the cookie must also carry the session's
// CSRF token in the X-CSRF-Token header (AuthenticateBrowser). The CSRF
// token is an HMAC of the session secret: the server derives it from the
// cookie on every request, the UI keeps it in memory only (GET /-/session
// hands it out again after a reload) and a cross-site page can neither
// read it nor set the header without a CORS preflight we never grant.

// Session defaults (Options.SessionIdle, Options.SessionLifetime).
const (
	DefaultSessionIdle     = 2 * time.Hour
	DefaultSessionLifetime = 12 * time.Hour
)

const (
	// SessionCookie is the name of the session cookie.
	SessionCookie = "ar_session"
	// CSRFHeader carries the CSRF token of a cookie-authenticated request.
	CSRFHeader = "X-CSRF-Token"
	// sessionTouchEvery bounds the writes of last_seen_at: idle expiry is
	// late by at most this much.
	sessionTouchEvery  = time.Minute
	sessionSecretBytes = 32
)

// ErrCSRFToken refuses a cookie-authenticated request without the
// session's CSRF token (403, GraphQL CSRF_TOKEN_INVALID).
var ErrCSRFToken error = &Error{Kind: ErrForbidden,
	Message: "a request authenticated by the session cookie needs the session's CSRF token in the " + CSRFHeader + " header; scripts send Authorization: Bearer <token> instead"}

// Session is a signed-in browser session.
type Session struct {
	// Secret is the cookie value. Never log it.
	Secret string
	// CSRFToken is what cookie-authenticated requests send in CSRFHeader.
	CSRFToken string
	Principal *Principal
	ExpiresAt time.Time
}

// sessionKey is a decoded session secret.
type sessionKey [sessionSecretBytes]byte

func (k *sessionKey) hash() [32]byte { return sha256.Sum256(k[:]) }

func (k *sessionKey) mac(label, msg string) []byte {
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func (k *sessionKey) csrfToken() string {
	return base64.RawURLEncoding.EncodeToString(k.mac("csrf", ""))
}

// adminBinding ties an admin session to the admin token it was opened
// with, without storing anything an admin-token guess could be tested
// against.
func (k *sessionKey) adminBinding(adminToken string) []byte { return k.mac("admin", adminToken) }

func parseSessionSecret(s string) (*sessionKey, bool) {
	if base64.RawURLEncoding.EncodedLen(sessionSecretBytes) != len(s) {
		return nil, false
	}
	var k sessionKey
	n, err := base64.RawURLEncoding.Decode(k[:], []byte(s))
	return &k, err == nil && n == sessionSecretBytes
}

func (a *Authenticator) sessionOf(k *sessionKey, p *Principal, expires time.Time) *Session {
	return &Session{
		Secret:    base64.RawURLEncoding.EncodeToString(k[:]),
		CSRFToken: k.csrfToken(),
		Principal: p,
		ExpiresAt: expires,
	}
}

// SignIn authenticates a token as AuthenticateSecret does (failures count
// like any other) and opens a session for it. Only the admin token and
// namespace access tokens open sessions: an OCI bearer token is
// short-lived and narrowed to a few repositories.
func (a *Authenticator) SignIn(ctx context.Context, secret string) (*Session, error) {
	if looksLikeBearerToken(secret) {
		return nil, unauthenticated("sign in with the admin token or a namespace access token")
	}
	p, err := a.AuthenticateSecret(ctx, secret)
	if err != nil {
		return nil, err
	}
	var k sessionKey
	if _, err := rand.Read(k[:]); err != nil {
		return nil, fmt.Errorf("auth: session secret: %w", err)
	}
	now := a.opts.Clock.Now()
	row := store.UISession{CreatedAt: now, ExpiresAt: now.Add(a.opts.SessionLifetime)}
	switch p.Kind() {
	case KindAdmin:
		row.AdminBinding = k.adminBinding(a.adminToken())
	case KindToken:
		row.AccessTokenNamespaceID, row.AccessTokenID = p.NamespaceID(), p.TokenID()
	default:
		return nil, unauthenticated("sign in with the admin token or a namespace access token")
	}
	if err := a.st.CreateUISession(ctx, k.hash(), row); err != nil {
		return nil, err
	}
	return a.sessionOf(&k, p, row.ExpiresAt), nil
}

// sessionEnded is the refusal of every session that no longer works:
// the UI shows it and asks for the token again.
func sessionEnded(why string) error {
	return unauthenticated("your session has ended (%s): sign in again", why)
}

// LookupSession validates a session secret (a cookie value): the row
// exists, is neither past its absolute lifetime nor idle too long, and
// what it stands for is still valid (the admin token unchanged; the access
// token neither revoked nor expired, its namespace serving). A session
// that ended is deleted. Decision errors match ErrUnauthenticated.
func (a *Authenticator) LookupSession(ctx context.Context, secret string) (*Session, error) {
	k, ok := parseSessionSecret(secret)
	if !ok {
		return nil, sessionEnded("malformed session cookie")
	}
	sha := k.hash()
	row, err := a.st.UISessionByHash(ctx, sha)
	if store.HasCode(err, store.CodeUISessionNotFound) {
		return nil, sessionEnded("unknown or signed out")
	}
	if err != nil {
		return nil, err
	}
	p, why, err := a.sessionPrincipal(ctx, k, row)
	if err != nil {
		return nil, err
	}
	if why != "" {
		// Deleted now rather than by the sweep: an ended session is never
		// worth another lookup.
		if err := a.st.DeleteUISession(ctx, sha); err != nil {
			a.opts.Logger.WarnContext(ctx, "auth: delete ended session", "err", err)
		}
		return nil, sessionEnded(why)
	}
	if now := a.opts.Clock.Now(); now.Sub(row.LastSeenAt) >= sessionTouchEvery {
		if err := a.st.TouchUISession(ctx, sha, now); err != nil {
			return nil, err
		}
	}
	return a.sessionOf(k, p, row.ExpiresAt), nil
}

// sessionPrincipal decides a loaded session: its principal, or why it
// ended; err is an internal failure.
func (a *Authenticator) sessionPrincipal(ctx context.Context, k *sessionKey, row *store.UISession) (*Principal, string, error) {
	now := a.opts.Clock.Now()
	switch {
	case !now.Before(row.ExpiresAt):
		return nil, "it expired", nil
	case now.Sub(row.LastSeenAt) >= a.opts.SessionIdle:
		return nil, "idle for too long", nil
	}
	if row.IsAdmin() {
		if token := a.adminToken(); token == "" || !hmac.Equal(row.AdminBinding, k.adminBinding(token)) {
			return nil, "the admin token was changed", nil
		}
		return a.admin, "", nil
	}
	e, err := a.tokenByID(ctx, row.AccessTokenNamespaceID, row.AccessTokenID)
	if err != nil {
		return nil, "", err
	}
	p, err := a.accept(e)
	var ae *Error
	if errors.As(err, &ae) {
		return nil, ae.Message, nil
	}
	return p, "", err
}

// SignOut deletes the session of a secret; an unknown or malformed one is
// no error.
func (a *Authenticator) SignOut(ctx context.Context, secret string) error {
	k, ok := parseSessionSecret(secret)
	if !ok {
		return nil
	}
	return a.st.DeleteUISession(ctx, k.hash())
}

// AuthenticateBrowser authenticates a request of the UI or of a script:
// the Authorization header when there is one (as Authenticate, no CSRF
// token needed: browsers never add it on their own), else the session
// cookie, which needs the session's CSRF token in CSRFHeader (ErrCSRFToken
// otherwise, checked before any lookup). A session that ended is refused
// as ErrUnauthenticated and its cookie expired on w, so the next request
// is anonymous. No credential: anonymous.
func (a *Authenticator) AuthenticateBrowser(w http.ResponseWriter, r *http.Request) (*Principal, error) {
	if len(r.Header.Values("Authorization")) > 0 {
		return a.Authenticate(r)
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return anonymous, nil
	}
	if !a.csrfMatches(r, c.Value) {
		return nil, ErrCSRFToken
	}
	s, err := a.LookupSession(r.Context(), c.Value)
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) {
			a.ExpireSessionCookie(w, r)
		}
		return nil, err
	}
	return s.Principal, nil
}

// csrfMatches compares the CSRF header with the token of the cookie's
// secret, in constant time.
func (a *Authenticator) csrfMatches(r *http.Request, secret string) bool {
	got := r.Header.Values(CSRFHeader)
	if len(got) != 1 {
		return false
	}
	k, ok := parseSessionSecret(secret)
	if !ok {
		// Nothing to compare with; the lookup refuses the cookie.
		return got[0] != ""
	}
	return hmac.Equal([]byte(got[0]), []byte(k.csrfToken()))
}

// SetSessionCookie sets the cookie of s on w: HttpOnly (page scripts
// cannot read it), SameSite=Strict (no cross-site request carries it),
// Path=/, Secure on https, and no longer-lived than the session.
func (a *Authenticator) SetSessionCookie(w http.ResponseWriter, r *http.Request, s *Session) {
	maxAge := int(s.ExpiresAt.Sub(a.opts.Clock.Now()) / time.Second)
	http.SetCookie(w, a.cookie(r, s.Secret, max(maxAge, 1)))
}

// ExpireSessionCookie tells the browser to drop the session cookie.
func (a *Authenticator) ExpireSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, a.cookie(r, "", -1))
}

func (a *Authenticator) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     SessionCookie,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   a.opts.SecureCookies || r.TLS != nil,
	}
}

// SweepSessions deletes the sessions that ended by time (absolute or idle
// expiry), in batches, and returns how many.
func (a *Authenticator) SweepSessions(ctx context.Context) (int64, error) {
	const batch = 1000
	var total int64
	for {
		n, err := a.st.DeleteExpiredUISessions(ctx, a.opts.Clock.Now(), a.opts.SessionIdle, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
	}
}
