package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// legacyAuth is the transport of proxy mode: it authenticates us to the
// legacy registry, with HTTP Basic or with distribution's token flow
// (`auth: token`: a 401 with `WWW-Authenticate: Bearer realm=…,service=…`
// sends us to a token service for a token of the scope asked).
//
// Bodies (blob PATCH/PUT, manifest PUT) stream through and cannot be sent
// twice, so the token is obtained before forwarding: the realm and
// service are learned once by probing GET /v2/, and the scope is derived
// from the request's path and method. Only a bodiless request is retried,
// once, on a 401 (an expired or revoked token, or a challenge that moved).
// Clients never see the legacy registry's challenge: they authenticate to
// us.
type legacyAuth struct {
	next       http.RoundTripper
	base       *url.URL
	user, pass string
	now        func() time.Time

	probeMu sync.Mutex // one probe at a time
	mu      sync.Mutex // guards the fields below
	probed  bool
	bearer  *bearerChallenge // nil: Basic (or no auth)
	tokens  map[string]legacyToken
	// fetching: one token request per scope at a time; a burst of
	// requests for a scope waits for it instead of each asking.
	fetching map[string]*tokenFetch
}

type tokenFetch struct {
	done chan struct{}
	tok  legacyToken
	err  error
}

type bearerChallenge struct {
	realm, service string
	scopes         []string // what the challenge asked for (retry only)
}

type legacyToken struct {
	value   string
	expires time.Time
}

// errLegacyToken: the token service did not give us a token.
var errLegacyToken = errors.New("the legacy registry's token service did not issue a token")

func newLegacyAuth(next http.RoundTripper, base *url.URL, user, pass string) *legacyAuth {
	if next == nil {
		next = http.DefaultTransport
	}
	return &legacyAuth{next: next, base: base, user: user, pass: pass, now: time.Now, tokens: map[string]legacyToken{}, fetching: map[string]*tokenFetch{}}
}

func (a *legacyAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	ch, err := a.challenge(req.Context())
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	scopes := legacyScopes(req)
	if err := a.authorize(out, ch, scopes); err != nil {
		return nil, err
	}
	resp, err := a.next.RoundTrip(out)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	fresh, ok := parseBearerChallenge(resp.Header.Get("WWW-Authenticate"))
	if !ok {
		return resp, nil
	}
	// Learn the challenge (the registry may have switched to token auth,
	// or moved its realm) and drop the token it refused.
	a.mu.Lock()
	a.bearer = &bearerChallenge{realm: fresh.realm, service: fresh.service}
	a.probed = true
	if ch != nil {
		delete(a.tokens, tokenKey(ch, scopes))
	}
	a.mu.Unlock()
	if req.Body != nil && req.Body != http.NoBody {
		return resp, nil // the body is spent; the next request carries a token
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if len(fresh.scopes) > 0 {
		scopes = fresh.scopes
	}
	retry := req.Clone(req.Context())
	if err := a.authorize(retry, &fresh, scopes); err != nil {
		return nil, err
	}
	return a.next.RoundTrip(retry)
}

// challenge returns the legacy registry's Bearer challenge, probing
// GET /v2/ once; nil means it does not ask for tokens.
func (a *legacyAuth) challenge(ctx context.Context) (*bearerChallenge, error) {
	a.mu.Lock()
	if a.probed {
		defer a.mu.Unlock()
		return a.bearer, nil
	}
	a.mu.Unlock()
	a.probeMu.Lock()
	defer a.probeMu.Unlock()
	a.mu.Lock()
	if a.probed {
		defer a.mu.Unlock()
		return a.bearer, nil
	}
	a.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base.String()+"/v2/", nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.next.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("probe the legacy registry: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	var ch *bearerChallenge
	if resp.StatusCode == http.StatusUnauthorized {
		if c, ok := parseBearerChallenge(resp.Header.Get("WWW-Authenticate")); ok {
			ch = &bearerChallenge{realm: c.realm, service: c.service}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.probed, a.bearer = true, ch
	return ch, nil
}

// authorize sets the Authorization header of out.
func (a *legacyAuth) authorize(out *http.Request, ch *bearerChallenge, scopes []string) error {
	out.Header.Del("Authorization")
	if ch == nil {
		if a.user != "" {
			out.SetBasicAuth(a.user, a.pass)
		}
		return nil
	}
	tok, err := a.token(out.Context(), ch, scopes)
	if err != nil {
		return err
	}
	out.Header.Set("Authorization", "Bearer "+tok)
	return nil
}

func tokenKey(ch *bearerChallenge, scopes []string) string {
	return ch.realm + "\x00" + ch.service + "\x00" + strings.Join(scopes, " ")
}

// token returns a cached token of the scopes or fetches one from the realm.
func (a *legacyAuth) token(ctx context.Context, ch *bearerChallenge, scopes []string) (string, error) {
	key := tokenKey(ch, scopes)
	a.mu.Lock()
	if t, ok := a.tokens[key]; ok && a.now().Before(t.expires) {
		a.mu.Unlock()
		return t.value, nil
	}
	f, waiting := a.fetching[key]
	if !waiting {
		f = &tokenFetch{done: make(chan struct{})}
		a.fetching[key] = f
	}
	a.mu.Unlock()
	if waiting {
		select {
		case <-f.done:
			return f.tok.value, f.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	// Others may wait on this fetch: one client giving up must not fail
	// them (the token client has its own timeout).
	f.tok, f.err = a.fetchToken(context.WithoutCancel(ctx), ch, scopes)
	a.mu.Lock()
	delete(a.fetching, key)
	if f.err == nil {
		now := a.now()
		for k, old := range a.tokens { // keep the cache to live tokens
			if !now.Before(old.expires) {
				delete(a.tokens, k)
			}
		}
		a.tokens[key] = f.tok
	}
	a.mu.Unlock()
	close(f.done)
	return f.tok.value, f.err
}

func (a *legacyAuth) fetchToken(ctx context.Context, ch *bearerChallenge, scopes []string) (legacyToken, error) {
	u, err := url.Parse(ch.realm)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return legacyToken{}, fmt.Errorf("%w: realm %q is not an http(s) URL", errLegacyToken, ch.realm)
	}
	q := u.Query()
	if ch.service != "" {
		q.Set("service", ch.service)
	}
	for _, s := range scopes {
		q.Add("scope", s)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return legacyToken{}, err
	}
	if a.user != "" {
		req.SetBasicAuth(a.user, a.pass)
	}
	start := a.now()
	resp, err := (&http.Client{Transport: a.next, Timeout: time.Minute}).Do(req)
	if err != nil {
		return legacyToken{}, fmt.Errorf("%w: %w", errLegacyToken, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return legacyToken{}, fmt.Errorf("%w: token service answered %d", errLegacyCredentials, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return legacyToken{}, fmt.Errorf("%w: token service answered %d", errLegacyToken, resp.StatusCode)
	}
	var body struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return legacyToken{}, fmt.Errorf("%w: token answer: %w", errLegacyToken, err)
	}
	t := legacyToken{value: body.Token}
	if t.value == "" {
		t.value = body.AccessToken
	}
	if t.value == "" {
		return legacyToken{}, fmt.Errorf("%w: answer has neither token nor access_token", errLegacyToken)
	}
	// The token auth spec: no expires_in means 60 seconds. A margin keeps
	// a token from expiring on its way to the registry.
	life := time.Duration(body.ExpiresIn) * time.Second
	if body.ExpiresIn <= 0 {
		life = 60 * time.Second
	}
	t.expires = start.Add(life - min(life/10, 10*time.Second))
	return t, nil
}

// legacyPath splits /v2/<name>/<endpoint>; the name is the longest prefix
// followed by an API endpoint, so names with a "blobs" component work.
var legacyPath = regexp.MustCompile(`^/v2/(.+)/(?:manifests|blobs|tags|referrers)/`)

// legacyScopes derives the token scopes a request needs, as distribution
// checks them: pull for reads, delete for DELETE, pull,push for other
// writes, and pull on the source of a cross-repository mount.
func legacyScopes(r *http.Request) []string {
	m := legacyPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return nil
	}
	actions := "pull,push"
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		actions = "pull"
	case http.MethodDelete:
		actions = "delete"
	}
	scopes := []string{"repository:" + m[1] + ":" + actions}
	if from := r.URL.Query().Get("from"); from != "" && r.Method == http.MethodPost && from != m[1] {
		scopes = append(scopes, "repository:"+from+":pull")
	}
	return scopes
}

// parseBearerChallenge reads `Bearer realm="…",service="…",scope="…"`.
func parseBearerChallenge(h string) (bearerChallenge, bool) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "bearer") {
		return bearerChallenge{}, false
	}
	params := parseAuthParams(rest)
	c := bearerChallenge{realm: params["realm"], service: params["service"]}
	if s := params["scope"]; s != "" {
		c.scopes = strings.Fields(s)
	}
	return c, c.realm != ""
}

// parseAuthParams parses RFC 7235 auth-params: key=token or key="quoted".
func parseAuthParams(s string) map[string]string {
	out := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t,")
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return out
		}
		key := strings.ToLower(strings.TrimSpace(s[:eq]))
		s = strings.TrimLeft(s[eq+1:], " \t")
		var val strings.Builder
		if strings.HasPrefix(s, `"`) {
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				val.WriteByte(s[i])
			}
			s = s[min(i+1, len(s)):]
		} else {
			end := strings.IndexAny(s, ", \t")
			if end < 0 {
				end = len(s)
			}
			val.WriteString(s[:end])
			s = s[end:]
		}
		out[key] = val.String()
	}
}
