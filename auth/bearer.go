package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// OCI token authentication (the distribution "token" spec that docker,
// podman, containerd, crane, oras, regctl and skopeo follow): after a 401
// with
//
//	WWW-Authenticate: Bearer realm="<url>/v2/token",service="artifact-registry",scope="repository:ns/repo/img:pull,push"
//
// the client calls the realm with its credentials (HTTP Basic, or the
// OAuth2 password grant of containerd) and the requested scopes, and gets
// a short-lived token it sends as "Authorization: Bearer <token>". The
// token here is a JWT (HS256, HMAC-SHA256 with a random key kept in the
// database and named by the "kid" header: signing.go) whose claims name
// the identity it was issued to and the granted access.
//
// Each use re-validates the identity (access tokens through the lookup
// cache, so a revocation takes effect within the cache TTL even for issued
// bearer tokens) and then Authorize checks the request as for any other
// credential, narrowed to the granted access. Grants are per repository:
// a scope for ns/repo/img grants on repository ns/repo.

// actionSet is a set of Actions (bit i = Action i).
type actionSet uint8

func (s actionSet) has(a Action) bool { return s&(1<<a) != 0 }

const allRepositoryActions = actionSet(1<<ActionRead | 1<<ActionWrite | 1<<ActionDelete)

// granted reports whether a bearer principal was issued the action on
// the target. Namespace-level reads (catalog) need no grant.
func (p *Principal) granted(action Action, t Target) bool {
	if t.Repository == nil {
		return action == ActionRead
	}
	return p.grants[t.Namespace.Slug+"/"+t.Repository.Name].has(action)
}

// ociActions maps the token spec's action names.
var ociActions = map[string]actionSet{
	"pull":   1 << ActionRead,
	"push":   1 << ActionWrite,
	"delete": 1 << ActionDelete,
	"*":      allRepositoryActions,
}

func ociActionNames(s actionSet) []string {
	var out []string
	for _, n := range []string{"pull", "push", "delete"} {
		if s&ociActions[n] != 0 {
			out = append(out, n)
		}
	}
	return out
}

// repositoryKey is the grant key of an OCI name: its first two segments.
func repositoryKey(name string) (string, bool) {
	parts := strings.SplitN(name, "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}

type bearerAccess struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

type bearerClaims struct {
	Issuer    string         `json:"iss"`
	Subject   string         `json:"sub"`
	Audience  string         `json:"aud"`
	ExpiresAt int64          `json:"exp"`
	NotBefore int64          `json:"nbf"`
	IssuedAt  int64          `json:"iat"`
	ID        string         `json:"jti"`
	Access    []bearerAccess `json:"access"`
	// Identity the token was issued to.
	Kind      string `json:"ar_kind"`
	Namespace string `json:"ar_ns,omitempty"`
	Token     string `json:"ar_tok,omitempty"`
}

// jwtHeader is the JOSE header of the tokens: HS256 with the signing key
// named by Kid (a store.SigningKey id).
type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
	Kid string `json:"kid"`
}

// clockSkew is the tolerance of nbf.
const clockSkew = 30 * time.Second

// looksLikeBearerToken tells an issued JWT (base64 of a JSON object, so
// "eyJ", and three parts) from access tokens, which contain no dot.
func looksLikeBearerToken(s string) bool {
	return strings.HasPrefix(s, "eyJ") && strings.Count(s, ".") == 2
}

func (a *Authenticator) sign(ctx context.Context, c *bearerClaims) (string, error) {
	kid, key, err := a.keys.signing(ctx)
	if err != nil {
		return "", err
	}
	header, err := json.Marshal(jwtHeader{Alg: "HS256", Typ: "JWT", Kid: kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

// verifySignature checks the header and signature of a token and returns
// its decoded payload (nil when either is wrong).
func (a *Authenticator) verifySignature(ctx context.Context, s string) ([]byte, error) {
	parts := strings.Split(s, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, nil
	}
	var h jwtHeader
	if json.Unmarshal(raw, &h) != nil || h.Alg != "HS256" || h.Kid == "" {
		return nil, nil
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, nil
	}
	key, err := a.keys.verifying(ctx, h.Kid)
	if err != nil || key == nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, m.Sum(nil)) {
		return nil, nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, nil
	}
	return payload, nil
}

// verifyBearer checks an issued token and returns its principal, narrowed
// to the granted access.
func (a *Authenticator) verifyBearer(ctx context.Context, s string) (*Principal, error) {
	invalid := failure(reasonBearer, "invalid bearer token")
	payload, err := a.verifySignature(ctx, s)
	if err != nil {
		return nil, err
	}
	if payload == nil {
		return nil, invalid
	}
	var c bearerClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, invalid
	}
	now := a.opts.Clock.Now()
	switch {
	case c.Audience != a.opts.Service:
		return nil, invalid
	case !now.Before(time.Unix(c.ExpiresAt, 0)):
		return nil, failure(reasonExpired, "the bearer token expired: request a new one")
	case now.Add(clockSkew).Before(time.Unix(c.NotBefore, 0)):
		return nil, invalid
	}
	var base *Principal
	switch c.Kind {
	case KindAdmin.String():
		if a.adminToken() == "" { // the admin token was removed from the configuration
			return nil, invalid
		}
		base = a.admin
	case KindAnonymous.String():
		base = anonymous
	case KindToken.String():
		nsID, err1 := uuid.Parse(c.Namespace)
		id, err2 := uuid.Parse(c.Token)
		if err1 != nil || err2 != nil {
			return nil, invalid
		}
		e, err := a.tokenByID(ctx, nsID, id)
		if err != nil {
			return nil, err
		}
		if base, err = a.accept(e); err != nil {
			return nil, err
		}
	default:
		return nil, invalid
	}
	p := *base
	p.grants = map[string]actionSet{}
	for _, acc := range c.Access {
		key, ok := repositoryKey(acc.Name)
		if acc.Type != "repository" || !ok {
			continue
		}
		for _, name := range acc.Actions {
			p.grants[key] |= ociActions[name]
		}
	}
	return &p, nil
}

// ResolveFunc resolves an OCI repository name (as in a token scope, e.g.
// "ns/repo/image") to its Target; (nil, nil) when it does not exist.
type ResolveFunc func(ctx context.Context, name string) (*Target, error)

// ContainerResolver resolves names with container.ResolveTarget: the
// first segment is the namespace, the second the repository, the rest the
// image.
func ContainerResolver(st *store.Store) ResolveFunc {
	containers := container.New(st)
	return func(ctx context.Context, name string) (*Target, error) {
		parts := strings.SplitN(name, "/", 3)
		if len(parts) < 2 {
			return nil, nil
		}
		image := ""
		if len(parts) == 3 {
			image = parts[2]
		}
		t, err := containers.ResolveTarget(ctx, parts[0], parts[1], image)
		if store.HasCode(err, container.CodeNameUnknown) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		target := ContainerTarget(t)
		return &target, nil
	}
}

// scopeRequest is one parsed scope "type:name:actions".
type scopeRequest struct {
	typ, name string
	actions   actionSet
}

func parseScope(s string) (scopeRequest, bool) {
	i, j := strings.IndexByte(s, ':'), strings.LastIndexByte(s, ':')
	if i < 0 || i == j {
		return scopeRequest{}, false
	}
	req := scopeRequest{typ: s[:i], name: s[i+1 : j]}
	// "repository(plugin)" is an old docker variant of the type.
	if k := strings.IndexByte(req.typ, '('); k > 0 {
		req.typ = req.typ[:k]
	}
	for _, a := range strings.Split(s[j+1:], ",") {
		req.actions |= ociActions[strings.TrimSpace(a)]
	}
	return req, req.name != ""
}

// tokenResponse is the token endpoint's answer (both field names: docker
// reads "token", OAuth2 clients "access_token").
type tokenResponse struct {
	Token       string `json:"token"`
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
	IssuedAt    string `json:"issued_at"`
	Scope       string `json:"scope,omitempty"`
}

// TokenHandler is the OCI token endpoint, to mount at GET and POST
// /v2/token (the realm of OCIChallenge). GET takes HTTP Basic credentials
// (or none: anonymous pulls of public repositories get a token too) and
// ?service=&scope=...; POST is the OAuth2 password grant containerd uses
// (grant_type=password, username, password, scope, service). Every
// requested action that Authorize's permission step allows is granted,
// others are silently left out (the registry then answers 401/403 as the
// spec expects); service conditions are checked when the token is used.
// Bad credentials are a 401 with a Basic challenge.
func (a *Authenticator) TokenHandler(resolve ResolveFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		var (
			p      *Principal
			err    error
			scopes []string
			oauth  bool
		)
		q := r.URL.Query()
		service := q.Get("service")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			scopes = q["scope"]
			p, err = a.Authenticate(r)
		case http.MethodPost:
			oauth = true
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if err := r.ParseForm(); err != nil {
				writeTokenError(w, http.StatusBadRequest, "invalid_request", "malformed form body")
				return
			}
			service = r.PostForm.Get("service")
			scopes = strings.Fields(r.PostForm.Get("scope"))
			switch r.PostForm.Get("grant_type") {
			case "password":
				if r.PostForm.Get("password") == "" {
					err = unauthenticated("the password must be the access token")
				} else {
					p, err = a.AuthenticateRequestSecret(r, r.PostForm.Get("password"))
				}
			default:
				writeTokenError(w, http.StatusBadRequest, "unsupported_grant_type", "only grant_type=password is supported")
				return
			}
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			writeTokenError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "use GET or POST")
			return
		}
		if err != nil {
			if s := RetryAfterSeconds(err); s > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(s))
				writeTokenError(w, http.StatusTooManyRequests, "TOOMANYREQUESTS", err.Error())
				return
			}
			if errors.Is(err, ErrUnauthenticated) {
				w.Header().Set("WWW-Authenticate", BasicChallenge)
				writeTokenError(w, http.StatusUnauthorized, "UNAUTHORIZED", err.Error())
				return
			}
			a.opts.Logger.Error("auth: token endpoint", "err", err)
			writeTokenError(w, statusOf(err), "UNAVAILABLE", "temporarily unavailable, retry")
			return
		}
		if service != "" && service != a.opts.Service {
			writeTokenError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("unknown service %q", service))
			return
		}
		token, granted, err := a.issue(r.Context(), p, scopes, resolve)
		if err != nil {
			a.opts.Logger.Error("auth: token endpoint", "err", err)
			writeTokenError(w, statusOf(err), "UNAVAILABLE", "temporarily unavailable, retry")
			return
		}
		resp := tokenResponse{
			Token: token, AccessToken: token,
			ExpiresIn: int(a.opts.BearerTTL / time.Second),
			IssuedAt:  a.opts.Clock.Now().UTC().Format(time.RFC3339),
		}
		if oauth {
			resp.Scope = strings.Join(granted, " ")
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
}

func statusOf(err error) int {
	if store.HasCode(err, store.CodeRetryable) || store.IsUnavailable(err) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func writeTokenError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", fmt.Sprint(int(store.UnavailableRetryAfter.Seconds())))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]string{{"code": code, "message": msg}},
		// OAuth2 clients read these.
		"error": code, "error_description": msg,
	})
}

// issue computes the grants of p for the requested scopes and signs a token.
func (a *Authenticator) issue(ctx context.Context, p *Principal, scopes []string, resolve ResolveFunc) (string, []string, error) {
	access := map[string]actionSet{}
	for _, s := range scopes {
		req, ok := parseScope(s)
		if !ok || req.typ != "repository" || req.actions == 0 {
			continue
		}
		if _, ok := repositoryKey(req.name); !ok {
			continue
		}
		t, err := resolve(ctx, req.name)
		if err != nil {
			return "", nil, err
		}
		if t == nil {
			continue
		}
		for act := ActionRead; act <= ActionDelete; act++ {
			if !req.actions.has(act) {
				continue
			}
			if p.IsToken() && p.tok.nsReason != "" {
				continue
			}
			if permit(p, act, *t) == nil {
				access[req.name] |= 1 << act
			}
		}
	}
	now := a.opts.Clock.Now()
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", nil, err
	}
	c := &bearerClaims{
		Issuer: a.opts.Service, Audience: a.opts.Service,
		IssuedAt: now.Unix(), NotBefore: now.Unix(), ExpiresAt: now.Add(a.opts.BearerTTL).Unix(),
		ID:     base64.RawURLEncoding.EncodeToString(jti),
		Kind:   p.Kind().String(),
		Access: []bearerAccess{},
	}
	switch p.Kind() {
	case KindToken:
		c.Subject = "token:" + p.tok.id.String()
		c.Namespace, c.Token = p.tok.nsID.String(), p.tok.id.String()
	default:
		c.Subject = p.Kind().String()
	}
	names := make([]string, 0, len(access))
	for n := range access {
		names = append(names, n)
	}
	sort.Strings(names)
	var granted []string
	for _, n := range names {
		acts := ociActionNames(access[n])
		c.Access = append(c.Access, bearerAccess{Type: "repository", Name: n, Actions: acts})
		granted = append(granted, "repository:"+n+":"+strings.Join(acts, ","))
	}
	token, err := a.sign(ctx, c)
	return token, granted, err
}
