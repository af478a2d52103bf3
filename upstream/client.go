package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Config configures the Client of one remote. Zero durations and sizes
// take the defaults named on each field.
type Config struct {
	// Name identifies the remote in metrics labels and logs (the caller
	// picks something stable and harmless, such as "<namespace>/<repo>").
	Name string
	// URL is the upstream's base URL (http or https, no credentials, no
	// query); request paths are resolved under it.
	URL string
	// Credentials, when set, are sent to the upstream (Basic, after a
	// Basic challenge) and to its token realm (see realmPolicy).
	Credentials *Credentials
	// TrustedRealms are hosts ("auth.example" or "10.0.0.5:5001") whose
	// token realm receives the credentials although it is neither the
	// upstream's host:port nor of its registrable domain, and may be on
	// a private address.
	TrustedRealms []string

	// ConnectTimeout bounds the TCP connect (default 10s),
	// TLSHandshakeTimeout the handshake (10s), ResponseHeaderTimeout the
	// wait for response headers once the request is sent (30s),
	// IdleConnTimeout how long an idle keep-alive connection is kept
	// (90s), StallTimeout how long a body read may go without receiving
	// a byte (30s), TokenTimeout one token request (30s).
	ConnectTimeout        time.Duration
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration
	IdleConnTimeout       time.Duration
	StallTimeout          time.Duration
	TokenTimeout          time.Duration
	// TLSConfig is for upstreams behind a private CA (nil: system roots).
	TLSConfig *tls.Config

	// FailureThreshold consecutive failures open the breaker (default 3)
	// for OfflinePeriod (default 1m).
	FailureThreshold int
	OfflinePeriod    time.Duration
	// RateLimitWait is how long requests fail fast after a 429 without a
	// Retry-After (default 30s); MaxRetryAfter caps a Retry-After (10m).
	RateLimitWait time.Duration
	MaxRetryAfter time.Duration

	// NegativeTTL is how long a 404 is remembered (default 30s; < 0
	// disables), in at most NegativeEntries keys (default 10000).
	NegativeTTL     time.Duration
	NegativeEntries int

	// MaxFillSize bounds the bytes one fill accepts (default 16 GiB),
	// MaxFillTime its duration (default 1h): a fill whose clients all
	// left still stops there.
	MaxFillSize int64
	MaxFillTime time.Duration
	// SpoolDir holds the fills' spool files (default os.TempDir()); they
	// are unlinked as soon as they are created, so a crash leaves
	// nothing. Bodies of known length up to MemorySpool bytes (default
	// 1 MiB) are spooled in memory instead.
	SpoolDir    string
	MemorySpool int64

	// HealthRecorder persists the health (nil: kept in memory only);
	// HealthInterval is how often an unchanged status is re-recorded
	// (default 1m).
	HealthRecorder HealthRecorder
	HealthInterval time.Duration

	// Metrics is the process's shared set (nil: a private, unregistered
	// one).
	Metrics *Metrics
	// Logger receives what the package cannot return to a caller (a
	// health record that failed). Default slog.Default().
	Logger *slog.Logger
	// Transport replaces the network transport (then the connect, TLS,
	// header and idle timeouts are the transport's business).
	Transport http.RoundTripper
	// Now is the clock of the breaker, tokens and negative cache
	// (default time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ConnectTimeout, 10*time.Second)
	def(&c.TLSHandshakeTimeout, 10*time.Second)
	def(&c.ResponseHeaderTimeout, 30*time.Second)
	def(&c.IdleConnTimeout, 90*time.Second)
	def(&c.StallTimeout, 30*time.Second)
	def(&c.TokenTimeout, 30*time.Second)
	def(&c.OfflinePeriod, time.Minute)
	def(&c.RateLimitWait, 30*time.Second)
	def(&c.MaxRetryAfter, 10*time.Minute)
	def(&c.NegativeTTL, 30*time.Second)
	def(&c.MaxFillTime, time.Hour)
	def(&c.HealthInterval, time.Minute)
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = 3
	}
	if c.NegativeEntries <= 0 {
		c.NegativeEntries = 10000
	}
	if c.MaxFillSize <= 0 {
		c.MaxFillSize = 16 << 30
	}
	if c.MemorySpool == 0 {
		c.MemorySpool = 1 << 20
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Client talks to one remote's upstream. It is safe for concurrent use;
// build one per remote and keep it while the remote's settings do not
// change (tokens, the breaker and in-flight fills live in it).
type Client struct {
	cfg           Config
	base          *url.URL
	origin        string
	creds         *Credentials
	trustedRealms []string
	now           func() time.Time

	http      *http.Client
	tokenHTTP *http.Client
	transport http.RoundTripper

	challenge atomic.Pointer[challenge]
	tokens    tokens
	breaker   *breaker
	negative  *negativeCache
	health    *healthLog
	metrics   *remoteMetrics

	fillMu sync.Mutex
	fills  map[string]*fill
	// fillCtx is the parent of every fill: detached from the requests
	// that start them, canceled by Close.
	fillCtx    context.Context
	fillCancel context.CancelFunc
	fillWG     sync.WaitGroup
	closed     bool
}

// New builds a Client. It does not contact the upstream: the auth
// challenge is discovered by the first request, so a remote whose
// upstream is down never keeps the server from starting.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	base, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("upstream URL: %w", err)
	}
	if base.Scheme != "http" && base.Scheme != "https" || base.Host == "" {
		return nil, errors.New("upstream URL must be http or https with a host")
	}
	if base.User != nil {
		return nil, errors.New("upstream URL must not hold credentials (give them as Credentials)")
	}
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, errors.New("upstream URL must not have a query or fragment")
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
		if base.RawPath != "" {
			base.RawPath += "/"
		}
	}
	c := &Client{
		cfg:     cfg,
		base:    base,
		origin:  origin(base),
		now:     cfg.Now,
		metrics: cfg.Metrics.remote(cfg.Name),
		fills:   map[string]*fill{},
	}
	if cfg.Credentials != nil {
		cr := *cfg.Credentials
		c.creds = &cr
	}
	for _, h := range cfg.TrustedRealms {
		c.trustedRealms = append(c.trustedRealms, strings.ToLower(h))
	}
	c.transport = cfg.Transport
	if c.transport == nil {
		c.transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:       cfg.TLSConfig,
			TLSHandshakeTimeout:   cfg.TLSHandshakeTimeout,
			ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
			IdleConnTimeout:       cfg.IdleConnTimeout,
			ExpectContinueTimeout: time.Second,
			MaxIdleConnsPerHost:   16,
			ForceAttemptHTTP2:     true,
		}
	}
	c.http = &http.Client{Transport: &authTransport{c: c, base: c.transport}, CheckRedirect: stripOnRedirect}
	c.tokenHTTP = &http.Client{Transport: c.transport, CheckRedirect: stripOnRedirect}
	c.health = &healthLog{rec: cfg.HealthRecorder, interval: cfg.HealthInterval, onError: func(err error) {
		cfg.Logger.Warn("upstream: recording health failed", "remote", cfg.Name, "err", err)
	}}
	c.breaker = &breaker{threshold: cfg.FailureThreshold, openFor: cfg.OfflinePeriod, now: cfg.Now,
		metrics: c.metrics, health: c.health.report}
	c.metrics.breaker.Set(breakerClosed)
	c.negative = newNegativeCache(max(cfg.NegativeTTL, 0), cfg.NegativeEntries, cfg.Now)
	c.fillCtx, c.fillCancel = context.WithCancel(context.Background())
	return c, nil
}

// Name is Config.Name.
func (c *Client) Name() string { return c.cfg.Name }

// Health is the upstream's health as this process last saw it. Status
// and RetryAt also reflect an open breaker or a pending Retry-After.
func (c *Client) Health() Health {
	h := c.health.current()
	if offline, retryAt := c.breaker.snapshot(); offline {
		h.Status = enum.HealthUnhealthy
		h.RetryAt = retryAt
	}
	return h
}

// Request is one upstream request.
type Request struct {
	// Method defaults to GET.
	Method string
	// Path is resolved under the upstream URL ("v2/library/alpine/
	// manifests/latest"; keep escapes such as npm's "@scope%2fname"). An
	// absolute http(s) URL is used as is: it gets credentials only if it
	// is on the upstream's origin.
	Path string
	// Header is sent as is (Accept, If-None-Match, ...). Authorization is
	// the package's business and is ignored here.
	Header http.Header
	// Scopes are the token scopes the request needs
	// ("repository:library/alpine:pull"); tokens are cached by them.
	Scopes []string
	// NegativeKey is the key of the negative cache (default: the
	// resolved URL's path and query). An empty key after defaulting is
	// never cached.
	NegativeKey string
}

func (c *Client) resolve(p string) (*url.URL, error) {
	ref, err := url.Parse(p)
	if err != nil {
		return nil, fmt.Errorf("upstream request path: %w", err)
	}
	if ref.IsAbs() {
		if ref.Scheme != "http" && ref.Scheme != "https" || ref.Host == "" || ref.User != nil {
			return nil, errors.New("upstream request URL must be http(s) with a host and no credentials")
		}
		return ref, nil
	}
	if ref.Host != "" {
		return nil, errors.New("upstream request path must not name a host")
	}
	ref.Path = strings.TrimPrefix(ref.Path, "/")
	ref.RawPath = strings.TrimPrefix(ref.RawPath, "/")
	return c.base.ResolveReference(ref), nil
}

// Do sends one request through the breaker, the rate-limit gate, the
// negative cache and the auth flow. A 2xx or 3xx (304 Not Modified)
// answer is returned with its body, which the caller closes; every other
// outcome is an *Error (the body drained), or the context's error when
// ctx ended first.
func (c *Client) Do(ctx context.Context, r *Request) (*http.Response, error) {
	u, err := c.resolve(r.Path)
	if err != nil {
		return nil, err
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	negKey := r.NegativeKey
	if negKey == "" {
		negKey = u.RequestURI()
		if origin(u) != c.origin {
			negKey = u.String()
		}
	}
	if c.negative.hit(negKey) {
		c.metrics.negativeHits.Inc()
		c.metrics.request("not_found")
		return nil, &Error{Kind: KindNotFound, Status: http.StatusNotFound, Cached: true, msg: "has no such content (cached answer)"}
	}
	probe, gerr := c.breaker.allow()
	if gerr != nil {
		c.metrics.request(gerr.Kind.String())
		return nil, gerr
	}
	rctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(withScopes(rctx, r.Scopes), method, u.String(), nil)
	if err != nil {
		cancel()
		c.breaker.release(probe)
		return nil, err
	}
	for k, v := range r.Header {
		if !strings.EqualFold(k, "Authorization") {
			req.Header[k] = v
		}
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			c.breaker.release(probe)
			c.metrics.request("canceled")
			return nil, ctx.Err()
		}
		e := classify(err)
		c.metrics.request(e.Kind.String())
		switch e.Kind {
		case KindRateLimited:
			if e.RetryAt.IsZero() {
				e.RetryAt = c.now().Add(c.cfg.RateLimitWait)
			}
			c.breaker.rateLimited(probe, e.RetryAt, e)
		case KindUnauthorized:
			c.breaker.refused(probe, e)
		case KindInvalid, KindRejected, KindNotFound:
			// The upstream (or its realm) answered: it is up.
			c.breaker.success(probe)
		default:
			c.breaker.failure(probe, e)
		}
		return nil, e
	}
	c.metrics.duration.Observe(time.Since(start).Seconds())
	c.metrics.observeRateLimit(resp.Header)
	if resp.StatusCode < 400 {
		c.breaker.success(probe)
		c.metrics.request("ok")
		resp.Body = newBody(resp.Body, c, ctx, cancel)
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxChallengeBody))
	resp.Body.Close()
	cancel()
	e := statusError(resp.StatusCode)
	c.metrics.request(e.Kind.String())
	switch e.Kind {
	case KindNotFound:
		c.breaker.success(probe)
		c.negative.add(negKey)
	case KindRateLimited:
		e.RetryAt = retryAfter(resp.Header, c.now(), c.cfg.RateLimitWait, c.cfg.MaxRetryAfter)
		c.breaker.rateLimited(probe, e.RetryAt, e)
	case KindBadGateway:
		c.breaker.failure(probe, e)
	case KindUnauthorized:
		c.breaker.refused(probe, e)
	default:
		c.breaker.success(probe)
	}
	return nil, e
}

// ForgetNotFound drops the negative-cache entry of key (a path that was
// just found elsewhere, or an admin's invalidation).
func (c *Client) ForgetNotFound(key string) { c.negative.forget(key) }

// ForgetAllNotFound empties the negative cache.
func (c *Client) ForgetAllNotFound() { c.negative.purge() }

// Close stops the client: new fills are refused, fills in flight may
// finish until ctx ends and are canceled then; pending health records
// are written. Requests already returned keep working until their
// bodies are closed.
func (c *Client) Close(ctx context.Context) error {
	c.fillMu.Lock()
	c.closed = true
	c.fillMu.Unlock()
	done := make(chan struct{})
	go func() { c.fillWG.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		c.fillCancel()
		<-done
	}
	c.fillCancel()
	c.health.flush()
	if t, ok := c.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return err
}

// body is a response body that fails a read making no progress for
// StallTimeout (a stalled upstream would otherwise hold a client and a
// fill forever) and counts a broken body as a breaker failure.
type body struct {
	rc     io.ReadCloser
	c      *Client
	parent context.Context
	cancel context.CancelFunc
	timer  *time.Timer
	// stalled is set by the timer, which cancels the request.
	stalled  atomic.Bool
	reported bool
}

func newBody(rc io.ReadCloser, c *Client, parent context.Context, cancel context.CancelFunc) *body {
	b := &body{rc: rc, c: c, parent: parent, cancel: cancel}
	b.timer = time.AfterFunc(time.Hour, func() {
		b.stalled.Store(true)
		cancel()
	})
	b.timer.Stop()
	return b
}

func (b *body) Read(p []byte) (int, error) {
	b.timer.Reset(b.c.cfg.StallTimeout)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	if err == nil || err == io.EOF {
		return n, err
	}
	if !b.stalled.Load() && b.parent.Err() != nil {
		return n, b.parent.Err()
	}
	var e *Error
	if b.stalled.Load() {
		e = newError(KindTimeout, "stopped sending", errStalled)
	} else {
		e = classify(err)
		e.msg = "body " + e.msg
	}
	if !b.reported {
		b.reported = true
		b.c.breaker.failure(false, e)
	}
	return n, e
}

func (b *body) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel()
	return err
}
