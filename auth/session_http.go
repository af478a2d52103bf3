package auth

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// SessionPath is where SessionHandler is mounted.
const SessionPath = "/-/session"

// maxSessionBody bounds a sign-in body: a token is under 100 bytes.
const maxSessionBody = 4 << 10

// SessionHandler serves SessionPath for the web UI:
//
//   - POST {"token": "..."}: sign in (anonymous callers may; the token is
//     checked by AuthenticateSecret). Sets the session cookie and answers
//     who the session is and its CSRF token; never echoes the token.
//   - GET: whether the cookie's session is signed in, and its CSRF token
//     (the UI keeps it in memory only, so it asks again after a reload).
//   - DELETE: sign out (needs the CSRF token), deletes the session and
//     expires the cookie.
//
// POST and DELETE refuse a cross-origin Origin, and POST wants
// application/json, which no cross-site form can send without a preflight.
// Errors are {"error": message, "code": GraphQL code}.
func (a *Authenticator) SessionHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch r.Method {
		case http.MethodGet:
			a.getSession(w, r)
		case http.MethodPost:
			a.postSession(w, r)
		case http.MethodDelete:
			a.deleteSession(w, r)
		default:
			w.Header().Set("Allow", "GET, POST, DELETE")
			writeSessionError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "use GET, POST or DELETE")
		}
	})
}

// sessionInfo is the JSON answer of SessionHandler.
type sessionInfo struct {
	SignedIn  bool       `json:"signedIn"`
	Kind      string     `json:"kind"` // ViewerKind of the GraphQL API
	Name      string     `json:"name,omitempty"`
	Namespace string     `json:"namespace,omitempty"`
	CSRFToken string     `json:"csrfToken,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Message says why a cookie no longer signs in.
	Message string `json:"message,omitempty"`
}

func infoOf(s *Session) sessionInfo {
	kind := "TOKEN"
	if s.Principal.IsAdmin() {
		kind = "ADMIN"
	}
	exp := s.ExpiresAt.UTC()
	return sessionInfo{SignedIn: true, Kind: kind, Name: s.Principal.Name(), Namespace: s.Principal.NamespaceSlug(),
		CSRFToken: s.CSRFToken, ExpiresAt: &exp}
}

func (a *Authenticator) postSession(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeSessionError(w, http.StatusForbidden, CodeForbidden, "cross-origin sign-in refused")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeSessionError(w, http.StatusUnsupportedMediaType, "BAD_REQUEST", `send {"token": "..."} as application/json`)
		return
	}
	var body struct {
		Token string `json:"token"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSessionBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeSessionError(w, http.StatusRequestEntityTooLarge, "BAD_REQUEST", "the sign-in body is limited to 4 KiB")
			return
		}
		writeSessionError(w, http.StatusBadRequest, "BAD_REQUEST", `the body must be {"token": "..."}`)
		return
	}
	if body.Token == "" {
		// No credential: the refusal of any anonymous sign-in.
		writeSessionError(w, http.StatusUnauthorized, CodeUnauthenticated, "sign in with the admin token or a namespace access token")
		return
	}
	// A sign-in is a guess like any other presented credential: it counts
	// against the failure limit of the client address.
	var s *Session
	_, err := a.guard(r, func() (*Principal, error) {
		var err error
		if s, err = a.SignIn(r.Context(), body.Token); err != nil {
			return nil, err
		}
		return s.Principal, nil
	})
	if err != nil {
		a.writeDecisionError(w, r, "sign in", err)
		return
	}
	a.SetSessionCookie(w, r, s)
	writeSessionJSON(w, http.StatusCreated, infoOf(s))
}

func (a *Authenticator) getSession(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		writeSessionJSON(w, http.StatusOK, sessionInfo{Kind: "ANONYMOUS"})
		return
	}
	s, err := a.LookupSession(r.Context(), c.Value)
	var ae *Error
	if errors.As(err, &ae) && errors.Is(err, ErrUnauthenticated) {
		// Not an error for the UI: it is signed out, and learns why.
		a.ExpireSessionCookie(w, r)
		writeSessionJSON(w, http.StatusOK, sessionInfo{Kind: "ANONYMOUS", Message: ae.Message})
		return
	}
	if err != nil {
		a.writeDecisionError(w, r, "look up session", err)
		return
	}
	writeSessionJSON(w, http.StatusOK, infoOf(s))
}

func (a *Authenticator) deleteSession(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeSessionError(w, http.StatusForbidden, CodeForbidden, "cross-origin sign-out refused")
		return
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !a.csrfMatches(r, c.Value) {
		writeSessionError(w, http.StatusForbidden, CodeCSRFToken, ErrCSRFToken.Error())
		return
	}
	if err := a.SignOut(r.Context(), c.Value); err != nil {
		a.writeDecisionError(w, r, "sign out", err)
		return
	}
	a.ExpireSessionCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
}

// sameOrigin reports whether the request's Origin, when the browser sent
// one, is this server's.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser, or a same-origin GET/HEAD
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && u.Host == r.Host
}

func (a *Authenticator) writeDecisionError(w http.ResponseWriter, r *http.Request, what string, err error) {
	if st := HTTPStatus(err); st != 0 {
		if s := RetryAfterSeconds(err); s > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(s))
		}
		writeSessionError(w, st, GraphQLCode(err), err.Error())
		return
	}
	a.opts.Logger.ErrorContext(r.Context(), "auth: "+what, "err", err)
	w.Header().Set("Retry-After", "1")
	writeSessionError(w, http.StatusServiceUnavailable, "INTERNAL", "sessions are unavailable; retry")
}

func writeSessionError(w http.ResponseWriter, status int, code, msg string) {
	writeSessionJSON(w, status, map[string]string{"error": msg, "code": code})
}

func writeSessionJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
