package npm

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Access control is package auth's. npm sends its credential on every
// request to the registry: "Authorization: Bearer <_authToken>" or Basic
// (from _auth) with the token as the password. Refusals are npm's
// {"error": "..."} bodies: 401 (with a Bearer challenge; npm prints the
// message), 403, and 404 only for callers allowed to know that a registry
// does not exist (auth.MaskNotFound).
//
// Login needs no account: `npm login`/`npm adduser` send the token as the
// password and get it back as the npm token, so CI and humans have one
// path. `npm whoami` answers the token's name, `npm logout` revokes the
// token, and `npm token list|create|revoke` manage the tokens of the
// registry's namespace.

// identity is the result of authenticating a request, kept for the
// request's other checks.
type identity struct {
	p   *auth.Principal
	err error
}

// principal authenticates the request once. A presented but unusable
// credential is an error (a 401): it never degrades to anonymous.
func (h *handler) principal(req *request) (*auth.Principal, error) {
	if req.who == nil {
		p, err := h.authn.Authenticate(req.r)
		req.who = &identity{p: p, err: err}
		if err == nil {
			// The caller is the actor of this request's transactions: an
			// unpublish records who moved the version to the trash.
			req.r = req.r.WithContext(auth.WithPrincipal(req.r.Context(), p))
		}
	}
	if req.who.err != nil {
		return nil, denied(req.who.err)
	}
	return req.who.p, nil
}

// errLogin is the 401 of anonymous callers where only a credential helps.
var errLogin = &auth.Error{Kind: auth.ErrUnauthenticated,
	Message: "authentication required: set _authToken for this registry in .npmrc (npm login with an access token as the password)"}

// denied maps an auth decision to npm's error; other errors pass through.
func denied(err error) error {
	st := auth.HTTPStatus(err)
	if st == 0 {
		return err
	}
	e := errorf(st, "%s", err.Error())
	switch st {
	case http.StatusUnauthorized:
		e.header = map[string]string{"WWW-Authenticate": auth.NpmChallenge}
	case http.StatusTooManyRequests:
		e.header = map[string]string{"Retry-After": strconv.Itoa(auth.RetryAfterSeconds(err))}
	}
	return e
}

// known requires a credential (whoami, profile, token management).
func (h *handler) known(req *request) (*auth.Principal, error) {
	p, err := h.principal(req)
	if err != nil {
		return nil, err
	}
	if p.IsAnonymous() {
		return nil, denied(errLogin)
	}
	return p, nil
}

// readRepo resolves the registry and authorizes a read.
func (h *handler) readRepo(req *request) (*npmstore.Repository, error) {
	return h.repoFor(req, auth.ActionRead)
}

// writeRepo resolves the registry and authorizes a change: ActionWrite
// (publish, deprecate, dist-tags) or ActionDelete (unpublish).
func (h *handler) writeRepo(req *request, action auth.Action) (*npmstore.Repository, error) {
	return h.repoFor(req, action)
}

func (h *handler) repoFor(req *request, action auth.Action) (*npmstore.Repository, error) {
	p, err := h.principal(req)
	if err != nil {
		return nil, err
	}
	repo, err := h.resolve(req)
	if store.HasCode(err, npmstore.CodeRepositoryUnknown) {
		if masked := auth.MaskNotFound(p, req.namespace, err); masked != err {
			return nil, denied(masked)
		}
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if err := auth.Authorize(req.r.Context(), p, action, auth.NpmTarget(repo)); err != nil {
		return nil, denied(err)
	}
	return repo, nil
}

// publisher is the _npmUser name a publish records: the caller's name.
func (h *handler) publisher(req *request) string {
	if req.who != nil && req.who.p != nil {
		return req.who.p.Name()
	}
	return auth.Anonymous().Name()
}

// whoami is GET /-/whoami: the token's name (the admin's user name for
// the admin token).
func (h *handler) whoami(req *request) error {
	p, err := h.known(req)
	if err != nil {
		return err
	}
	writeJSON(req.w, http.StatusOK, map[string]string{"username": p.Name()})
	return nil
}

// profile is GET /-/npm/v1/user (npm profile get).
func (h *handler) profile(req *request) error {
	p, err := h.known(req)
	if err != nil {
		return err
	}
	if req.r.Method != http.MethodGet {
		return methodNotAllowed(req.r)
	}
	writeJSON(req.w, http.StatusOK, map[string]any{
		"tfa": false, "name": p.Name(), "email": "", "email_verified": false,
		"created": "", "updated": "", "cidr_whitelist": nil, "fullname": "",
	})
	return nil
}

// getUser is GET /-/user/org.couchdb.user:<name> (step 3 of npm's login
// fallback after a 409, which this registry never sends; answered anyway).
func (h *handler) getUser(req *request, user string) error {
	if _, err := h.known(req); err != nil {
		return err
	}
	writeJSON(req.w, http.StatusOK, map[string]string{"_id": "org.couchdb.user:" + user, "name": user})
	return nil
}

// login is npm's legacy (CouchDB) login and adduser: PUT
// /-/user/org.couchdb.user:<name>[/-rev/<rev>] with {"name", "password"}.
// The password is an access token of this registry (or the admin token);
// it comes back as the npm token, which npm writes to .npmrc as
// _authToken. The Authorization header is ignored unless the body has no
// password: a stale token in .npmrc must not stop a new login. The check
// is one SHA-256 and a cached lookup, no password hash.
func (h *handler) login(req *request, user string) error {
	var body struct {
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if err := readJSON(req, &body); err != nil {
		return err
	}
	secret := body.Password
	if secret == "" {
		if c, err := auth.CredentialFromRequest(req.r); err == nil && c != nil {
			secret = c.Secret
		}
	}
	refused := errorf(http.StatusUnauthorized, "incorrect username or password: the password is an access token of this registry")
	if secret == "" {
		return refused
	}
	p, err := h.authn.AuthenticateRequestSecret(req.r, secret)
	if err != nil {
		if errors.Is(err, auth.ErrRateLimited) {
			return denied(err)
		}
		if auth.IsDecision(err) {
			return refused
		}
		return err
	}
	if _, ok := auth.ParseSecret(secret); !ok && !p.IsAdmin() {
		return refused // a short-lived OCI bearer token is no npm token
	}
	if body.Name == "" {
		body.Name = user
	}
	writeJSON(req.w, http.StatusCreated, map[string]string{
		"ok":    "you are authenticated as '" + body.Name + "' with token '" + p.Name() + "'",
		"token": secret,
	})
	return nil
}

// logout is DELETE /-/user/token/<token> (npm logout): it revokes the
// access token. The admin token cannot be revoked from npm: npm just drops
// it from .npmrc. A token that no longer works (revoked, expired) is
// logged out already.
func (h *handler) logout(req *request, secret string) error {
	p, err := h.principal(req)
	if err != nil {
		c, cerr := auth.CredentialFromRequest(req.r)
		if auth.IsDecision(req.who.err) && cerr == nil && c != nil && c.Secret == secret {
			writeJSON(req.w, http.StatusOK, map[string]string{"ok": "Logged out"})
			return nil
		}
		return err
	}
	if _, ok := auth.ParseSecret(secret); !ok {
		if sp, err := h.authn.AuthenticateRequestSecret(req.r, secret); err == nil && sp.IsAdmin() {
			writeJSON(req.w, http.StatusOK, map[string]string{"ok": "Logged out"})
			return nil
		}
	}
	if _, err := h.authn.RevokeSecret(req.r.Context(), p, secret); err != nil {
		return denied(err)
	}
	writeJSON(req.w, http.StatusOK, map[string]string{"ok": "Logged out"})
	return nil
}

// tokenNamespace is the registry's namespace, the one whose tokens npm
// token manages; unknown namespaces answer like hidden ones.
func (h *handler) tokenNamespace(req *request, p *auth.Principal) (auth.Namespace, error) {
	ns, err := h.st.NamespaceBySlug(req.r.Context(), req.namespace)
	if store.KindOf(err) == store.KindNotFound {
		if masked := auth.MaskNotFound(p, req.namespace, err); masked != err {
			return auth.Namespace{}, denied(masked)
		}
		return auth.Namespace{}, errorf(http.StatusNotFound, "no such namespace: %s", req.namespace)
	}
	if err != nil {
		return auth.Namespace{}, err
	}
	return auth.NamespaceOf(ns), nil
}

// npmToken is one entry of npm token list.
type npmToken struct {
	// Key is the token id; npm shows its shortest unique prefix and sends
	// it back to revoke.
	Key string `json:"key"`
	// Token is what npm prints before "…": the start of the secret
	// (auth.SecretHint; the secret itself is never stored).
	Token         string     `json:"token"`
	Name          string     `json:"name"`
	Created       time.Time  `json:"created"`
	Updated       time.Time  `json:"updated"`
	Expires       *time.Time `json:"expires,omitempty"`
	Readonly      bool       `json:"readonly"`
	Scopes        []string   `json:"scopes"`
	CIDRWhitelist []string   `json:"cidr_whitelist"`
}

func npmTokenOf(t *store.AccessToken) npmToken {
	hint := t.SecretHint
	if hint == "" { // minted before hints were kept
		hint = auth.SecretNamespacePrefix(t.NamespaceID)
	}
	out := npmToken{Key: t.ID.String(), Token: hint, Name: t.Name,
		Created: t.CreatedAt, Updated: t.CreatedAt, Expires: t.ExpiresAt, Readonly: true, Scopes: []string{}}
	for _, s := range t.Scopes {
		out.Scopes = append(out.Scopes, strings.ToUpper(s.String()))
		if s != enum.TokenScopeRead {
			out.Readonly = false
		}
	}
	return out
}

const tokenPage = 100

// listTokens is GET /-/npm/v1/tokens[?page=<cursor>] (npm token list): the
// live tokens of the registry's namespace, for an ADMIN token of it or
// the admin. npm follows urls.next.
func (h *handler) listTokens(req *request) error {
	p, err := h.known(req)
	if err != nil {
		return err
	}
	ns, err := h.tokenNamespace(req, p)
	if err != nil {
		return err
	}
	var after *store.AccessTokenKey
	if c := req.r.URL.Query().Get("page"); c != "" {
		after = new(store.AccessTokenKey)
		raw, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || json.Unmarshal(raw, after) != nil {
			return errorf(http.StatusBadRequest, "malformed page cursor")
		}
	}
	toks, more, err := h.authn.ListTokens(req.r.Context(), p, ns, after, tokenPage, false)
	if err != nil {
		return denied(err)
	}
	objects := make([]npmToken, 0, len(toks))
	for _, t := range toks {
		objects = append(objects, npmTokenOf(t))
	}
	urls := map[string]string{}
	if more && len(toks) > 0 {
		cur, _ := json.Marshal(toks[len(toks)-1].Key())
		urls["next"] = h.registryURL(req.r, &npmstore.Repository{NamespaceSlug: req.namespace, RepositoryName: req.repository}) +
			"/-/npm/v1/tokens?page=" + base64.RawURLEncoding.EncodeToString(cur)
	}
	writeJSON(req.w, http.StatusOK, map[string]any{"objects": objects, "total": len(objects), "urls": urls})
	return nil
}

// createToken is POST /-/npm/v1/tokens (npm token create): a token of the
// registry's namespace, restricted to this repository, READ for
// --read-only (or packages_and_scopes_permission=read-only) else WRITE,
// expiring after "expires" days if given. The password must be the token
// the caller is logged in with (npm asks for it as a confirmation); the
// caller needs ADMIN on the namespace.
func (h *handler) createToken(req *request) error {
	p, err := h.known(req)
	if err != nil {
		return err
	}
	var body struct {
		Name       string   `json:"name"`
		Password   string   `json:"password"`
		Readonly   bool     `json:"readonly"`
		Permission string   `json:"packages_and_scopes_permission"`
		Expires    *int     `json:"expires"`
		CIDR       []string `json:"cidr_whitelist"`
	}
	if err := readJSON(req, &body); err != nil {
		return err
	}
	if len(body.CIDR) > 0 {
		return errorf(http.StatusBadRequest, "CIDR whitelists are not supported by this registry")
	}
	if err := h.confirm(req, p, body.Password); err != nil {
		return err
	}
	ns, err := h.tokenNamespace(req, p)
	if err != nil {
		return err
	}
	spec := auth.TokenSpec{Name: body.Name, Scopes: []enum.TokenScope{enum.TokenScopeWrite}, Repositories: []string{req.repository}}
	if body.Readonly || body.Permission == "read-only" {
		spec.Scopes = []enum.TokenScope{enum.TokenScopeRead}
	}
	if spec.Name == "" {
		spec.Name = "npm-" + time.Now().UTC().Format("20060102-150405.000")
	}
	if body.Expires != nil {
		if *body.Expires <= 0 || *body.Expires > 3650 {
			return errorf(http.StatusBadRequest, "expires must be a number of days between 1 and 3650")
		}
		at := time.Now().Add(time.Duration(*body.Expires) * 24 * time.Hour)
		spec.ExpiresAt = &at
	}
	tok, secret, err := h.authn.CreateToken(req.r.Context(), p, ns, spec)
	if err != nil {
		return tokenError(err)
	}
	out := npmTokenOf(tok)
	out.Token = secret
	writeJSON(req.w, http.StatusCreated, out)
	return nil
}

// confirm checks npm's password prompt: the caller's own token again.
func (h *handler) confirm(req *request, p *auth.Principal, password string) error {
	refused := errorf(http.StatusUnauthorized, "incorrect password: enter the access token you are logged in with")
	if password == "" {
		return refused
	}
	again, err := h.authn.AuthenticateRequestSecret(req.r, password)
	if err != nil {
		if errors.Is(err, auth.ErrRateLimited) {
			return denied(err)
		}
		if auth.IsDecision(err) {
			return refused
		}
		return err
	}
	if again.Kind() != p.Kind() || again.TokenID() != p.TokenID() {
		return refused
	}
	return nil
}

// revokeToken is DELETE /-/npm/v1/tokens/token/<key> (npm token revoke):
// key is a token id from npm token list, or a whole secret.
func (h *handler) revokeToken(req *request, key string) error {
	p, err := h.known(req)
	if err != nil {
		return err
	}
	if strings.HasPrefix(key, auth.SecretPrefix) {
		if _, err := h.authn.RevokeSecret(req.r.Context(), p, key); err != nil {
			return tokenError(err)
		}
		writeJSON(req.w, http.StatusOK, map[string]string{"ok": "token revoked"})
		return nil
	}
	id, err := uuid.Parse(key)
	if err != nil {
		return errorf(http.StatusNotFound, "no such token: %s", key)
	}
	ns, err := h.tokenNamespace(req, p)
	if err != nil {
		return err
	}
	if _, err := h.authn.RevokeToken(req.r.Context(), p, ns, id); err != nil {
		return tokenError(err)
	}
	writeJSON(req.w, http.StatusOK, map[string]string{"ok": "token revoked"})
	return nil
}

// tokenError maps token management failures: decisions, then the store's
// domain errors (bad name, taken name, unknown token).
func tokenError(err error) error {
	if auth.IsDecision(err) {
		return denied(err)
	}
	if store.HasCode(err, store.CodeAccessTokenNotFound) {
		return errorf(http.StatusNotFound, "no such token")
	}
	if de, ok := store.AsError(err); ok {
		switch de.Code.Kind {
		case store.KindNotFound:
			return errorf(http.StatusNotFound, "%s", de.Message)
		case store.KindAlreadyExists, store.KindConflict:
			return errorf(http.StatusConflict, "%s", de.Message)
		case store.KindForbidden:
			return errorf(http.StatusForbidden, "%s", de.Message)
		}
		return errorf(http.StatusBadRequest, "%s", de.Message)
	}
	return err
}
