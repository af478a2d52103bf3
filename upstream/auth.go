package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/publicsuffix"
	"golang.org/x/sync/singleflight"
)

// Credentials are the upstream account of a remote, in plaintext: the
// caller decrypts them and hands them over; this package never logs
// them, never puts them in an error and sends them only where the
// package doc says.
type Credentials struct {
	Username string
	Password string
}

// challenge is one WWW-Authenticate challenge the package can answer.
type challenge struct {
	scheme string // "bearer" or "basic"
	params map[string]string
}

func (c *challenge) scopes() []string { return strings.Fields(c.params["scope"]) }

// parseChallenges parses WWW-Authenticate values (RFC 7235: one header
// may hold several challenges, each "scheme param=value, param="quoted"").
func parseChallenges(values []string) []challenge {
	var out []challenge
	for _, v := range values {
		p := challengeParser{s: v}
		for p.i < len(p.s) {
			p.skip(", \t")
			scheme := p.token()
			if scheme == "" {
				p.i++ // a stray character
				continue
			}
			ch := challenge{scheme: strings.ToLower(scheme), params: map[string]string{}}
			for {
				p.skip(" \t")
				save := p.i
				name := p.token()
				p.skip(" \t")
				if name == "" || !p.consume('=') {
					// The next challenge's scheme (or a token68, which
					// the next round skips as a scheme without params).
					p.i = save
					break
				}
				p.skip(" \t")
				var val string
				if p.peek() == '"' {
					val = p.quoted()
				} else {
					val = p.token()
				}
				ch.params[strings.ToLower(name)] = val
				p.skip(" \t")
				if !p.consume(',') {
					break
				}
				p.skip(", \t")
			}
			out = append(out, ch)
		}
	}
	return out
}

type challengeParser struct {
	s string
	i int
}

func (p *challengeParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *challengeParser) consume(b byte) bool {
	if p.peek() == b && p.i < len(p.s) {
		p.i++
		return true
	}
	return false
}

func (p *challengeParser) skip(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// token reads an RFC 7230 token.
func (p *challengeParser) token() string {
	start := p.i
	for p.i < len(p.s) && isTokenChar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func isTokenChar(c byte) bool {
	if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~/:", c) >= 0
}

func (p *challengeParser) quoted() string {
	p.i++ // opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return b.String()
		case '\\':
			if p.i < len(p.s) {
				b.WriteByte(p.s[p.i])
				p.i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// pickChallenge prefers Bearer (tokens carry less than the password on
// every request), then Basic. A Bearer challenge whose realm is a name
// rather than a token service URL is not the token flow: npm registries
// answer `Bearer realm="<name>"` to ask for the client's own credentials,
// which they take as Basic; such a challenge is answered as Basic (to the
// upstream's origin only, like any Basic challenge).
func pickChallenge(chs []challenge) *challenge {
	for i := range chs {
		if chs[i].scheme == "bearer" && chs[i].params["realm"] != "" && tokenService(chs[i].params["realm"]) {
			return &chs[i]
		}
	}
	for i := range chs {
		if chs[i].scheme == "basic" {
			return &chs[i]
		}
	}
	for i := range chs {
		if chs[i].scheme == "bearer" && chs[i].params["realm"] != "" {
			return &challenge{scheme: "basic", params: chs[i].params}
		}
	}
	return nil
}

// tokenService reports whether a Bearer realm names a token service (an
// absolute URL; realmPolicy then decides whether it is usable).
func tokenService(realm string) bool {
	u, err := url.Parse(realm)
	return err == nil && u.Scheme != ""
}

// canonicalHost is host:port with the scheme's default port filled in
// and the host lowercased.
func canonicalHost(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// origin is scheme://host:port: the unit credentials are bound to.
func origin(u *url.URL) string { return u.Scheme + "://" + canonicalHost(u) }

// privateHost reports whether a realm host is a name or literal for this
// machine or a private network: a token request there could probe the
// internal network on an upstream's say-so.
func privateHost(host string) bool {
	h := strings.ToLower(host)
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast())
}

// registrable is a DNS host's registrable domain (eTLD+1), or "" for an
// IP literal, a single-label name or a public suffix itself: those only
// ever match exactly.
func registrable(host string) string {
	h := strings.ToLower(host)
	if net.ParseIP(h) != nil || !strings.Contains(h, ".") {
		return ""
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return ""
	}
	return d
}

// realmPolicy decides what a Bearer realm gets. Credentials go to the
// upstream's own host:port, to a host named in TrustedRealms, or to a
// host of the same registrable domain; and only over https unless the
// upstream itself is plain http. A realm on a loopback or private address
// that is none of those is refused outright (an upstream must not make us
// send requests into our own network); any other realm is asked
// anonymously.
func (c *Client) realmPolicy(realm *url.URL) (sendCredentials bool, err error) {
	if realm.Scheme != "http" && realm.Scheme != "https" || realm.Host == "" {
		return false, &Error{Kind: KindUnauthorized, msg: "announced an unusable token realm"}
	}
	rh := canonicalHost(realm)
	trusted := rh == canonicalHost(c.base) || slices.Contains(c.trustedRealms, rh) ||
		slices.Contains(c.trustedRealms, strings.ToLower(realm.Hostname()))
	if !trusted && privateHost(realm.Hostname()) {
		return false, &Error{Kind: KindUnauthorized, msg: "announced a token realm on a private address"}
	}
	if d := registrable(realm.Hostname()); !trusted && d != "" && d == registrable(c.base.Hostname()) {
		trusted = true
	}
	if realm.Scheme == "http" && c.base.Scheme == "https" {
		return false, nil
	}
	return trusted, nil
}

// tokens caches bearer tokens by (realm, service, scopes the caller asked
// for) until shortly before they expire.
type tokens struct {
	mu sync.Mutex
	m  map[string]tokenEntry
	sf singleflight.Group
}

type tokenEntry struct {
	token   string
	expires time.Time
}

const maxTokens = 1024

func (t *tokens) get(key string, now time.Time) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[key]
	if !ok || !now.Before(e.expires) {
		return "", false
	}
	return e.token, true
}

func (t *tokens) put(key string, e tokenEntry, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]tokenEntry{}
	}
	if len(t.m) >= maxTokens {
		for k, v := range t.m {
			if !now.Before(v.expires) {
				delete(t.m, k)
			}
		}
		if len(t.m) >= maxTokens {
			clear(t.m)
		}
	}
	t.m[key] = e
}

type scopesKey struct{}

func withScopes(ctx context.Context, scopes []string) context.Context {
	if len(scopes) == 0 {
		return ctx
	}
	return context.WithValue(ctx, scopesKey{}, scopes)
}

func scopesFrom(ctx context.Context) []string {
	s, _ := ctx.Value(scopesKey{}).([]string)
	return s
}

// authorization returns the Authorization value for a request to the
// upstream under ch, "" when none applies. fromChallenge: ch came with
// this request's 401, so its scope is this request's too. rejected is a
// value the upstream just refused: a cached token equal to it is not
// reused.
func (c *Client) authorization(ctx context.Context, ch *challenge, scopes []string, fromChallenge bool, rejected string) (string, error) {
	if ch.scheme == "basic" {
		if c.creds == nil {
			return "", nil
		}
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.creds.Username+":"+c.creds.Password)), nil
	}
	realm, err := url.Parse(ch.params["realm"])
	if err != nil {
		return "", &Error{Kind: KindUnauthorized, msg: "announced an unusable token realm"}
	}
	sendCreds, err := c.realmPolicy(realm)
	if err != nil {
		return "", err
	}
	service := ch.params["service"]
	want := slices.Clone(scopes)
	slices.Sort(want)
	want = slices.Compact(want)
	key := realm.String() + "\x00" + service + "\x00" + strings.Join(want, " ")
	if tok, ok := c.tokens.get(key, c.now()); ok && "Bearer "+tok != rejected {
		return "Bearer " + tok, nil
	}
	ask := want
	if fromChallenge || len(want) == 0 {
		ask = append(slices.Clone(want), ch.scopes()...)
		slices.Sort(ask)
		ask = slices.Compact(ask)
	}
	res := c.tokens.sf.DoChan(key, func() (any, error) {
		// A concurrent request may have refreshed it while this one
		// queued behind the flight that refused it.
		if tok, ok := c.tokens.get(key, c.now()); ok && "Bearer "+tok != rejected {
			return tok, nil
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.TokenTimeout)
		defer cancel()
		e, err := c.fetchToken(fctx, realm, service, ask, sendCreds)
		if err != nil {
			return nil, err
		}
		c.tokens.put(key, e, c.now())
		return e.token, nil
	})
	select {
	case r := <-res:
		if r.Err != nil {
			return "", r.Err
		}
		return "Bearer " + r.Val.(string), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// maxTokenResponse bounds a token endpoint's answer.
const maxTokenResponse = 1 << 20

// fetchToken asks the realm for a token (the distribution token auth
// spec: GET realm?service=…&scope=…, Basic credentials when allowed).
func (c *Client) fetchToken(ctx context.Context, realm *url.URL, service string, scopes []string, sendCreds bool) (tokenEntry, error) {
	u := *realm
	q := u.Query()
	if service != "" {
		q.Set("service", service)
	}
	for _, s := range scopes {
		q.Add("scope", s)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tokenEntry{}, &Error{Kind: KindUnauthorized, msg: "announced an unusable token realm"}
	}
	if sendCreds && c.creds != nil {
		req.SetBasicAuth(c.creds.Username, c.creds.Password)
	}
	start := c.now()
	resp, err := c.tokenHTTP.Do(req)
	if err != nil {
		c.metrics.token("error")
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return tokenEntry{}, newError(KindTimeout, "token endpoint timed out", err)
		}
		e := classify(err)
		e.msg = "token endpoint " + e.msg
		return tokenEntry{}, e
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxTokenResponse))
		e := statusError(resp.StatusCode)
		switch e.Kind {
		case KindUnauthorized:
			c.metrics.token("refused")
		default:
			c.metrics.token("error")
		}
		if e.Kind == KindNotFound {
			// A realm that does not exist is a broken auth setup, not
			// missing content.
			e = &Error{Kind: KindUnauthorized, Status: resp.StatusCode, msg: "failed (404)"}
		}
		if e.Kind == KindRateLimited {
			e.RetryAt = retryAfter(resp.Header, c.now(), c.cfg.RateLimitWait, c.cfg.MaxRetryAfter)
		}
		e.msg = "token endpoint " + e.msg
		return tokenEntry{}, e
	}
	var body struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenResponse)).Decode(&body); err != nil {
		c.metrics.token("error")
		return tokenEntry{}, newError(KindInvalid, "token endpoint answered unreadable JSON", nil)
	}
	tok := body.Token
	if tok == "" {
		tok = body.AccessToken
	}
	if tok == "" {
		c.metrics.token("error")
		return tokenEntry{}, newError(KindInvalid, "token endpoint answered no token", nil)
	}
	life := time.Duration(body.ExpiresIn) * time.Second
	if body.ExpiresIn <= 0 {
		life = 60 * time.Second // the spec's default
	}
	// Refresh early: a token must not expire between our check and the
	// upstream's.
	life -= min(life/10, 30*time.Second)
	c.metrics.token("ok")
	return tokenEntry{token: tok, expires: start.Add(life)}, nil
}

// authTransport adds credentials to requests for the upstream's own
// origin, and nowhere else: http.Client follows redirects above it, so a
// redirect to a CDN or a bucket goes through it without credentials.
type authTransport struct {
	c    *Client
	base http.RoundTripper
}

// maxChallengeBody bounds what is drained of a 401 before resending.
const maxChallengeBody = 64 << 10

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.c
	if origin(req.URL) != c.origin {
		if req.Header.Get("Authorization") != "" {
			req = req.Clone(req.Context())
			req.Header.Del("Authorization")
		}
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	scopes := scopesFrom(ctx)
	sent := ""
	r := req
	if ch := c.challenge.Load(); ch != nil {
		v, err := c.authorization(ctx, ch, scopes, false, "")
		if err != nil {
			return nil, err
		}
		if v != "" {
			r = withAuthorization(req, v)
			sent = v
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	ch := pickChallenge(parseChallenges(resp.Header.Values("Www-Authenticate")))
	if ch == nil {
		return resp, nil
	}
	c.challenge.Store(ch)
	if ch.scheme == "basic" && (c.creds == nil || strings.HasPrefix(sent, "Basic ")) {
		// Nothing to send, or the password was just refused.
		return resp, nil
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil
	}
	v, err := c.authorization(ctx, ch, scopes, true, sent)
	if err != nil || v == "" {
		resp.Body.Close()
		if err == nil {
			err = statusError(http.StatusUnauthorized)
		}
		return nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxChallengeBody))
	resp.Body.Close()
	r = withAuthorization(req, v)
	if req.GetBody != nil {
		if r.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(r)
}

func withAuthorization(req *http.Request, v string) *http.Request {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", v)
	return r
}

// stripOnRedirect is the redirect policy of both HTTP clients: at most
// maxRedirects hops, http and https only, and no Authorization or Cookie
// once a hop leaves the origin the chain started at (the transport adds
// credentials back only on the upstream's own origin).
func stripOnRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return errors.New("too many redirects")
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return errors.New("redirect to an unsupported scheme")
	}
	first := origin(via[0].URL)
	for _, r := range append(via[1:], req) {
		if origin(r.URL) != first {
			req.Header.Del("Authorization")
			req.Header.Del("Cookie")
			break
		}
	}
	return nil
}

const maxRedirects = 10
