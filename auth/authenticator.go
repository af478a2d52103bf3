package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/invalidate"
	"github.com/artifact-registry/artifact-registry/store"
)

// Defaults of Options.
const (
	DefaultAdminUser = "admin"
	// DefaultCacheTTL is how long a token lookup is reused. With a
	// Listener it is only a backstop: a revocation (or expiry moved,
	// namespace condition imposed) made on another replica takes effect
	// here within invalidate.Bound. Without one it is that bound.
	// Revocations made through this Authenticator take effect at once on
	// this replica.
	DefaultCacheTTL = 5 * time.Second
	// DefaultCacheSize bounds the lookup cache (entries, positive and
	// negative).
	DefaultCacheSize = 10000
	// DefaultFlushInterval is how often buffered last_used_at values are
	// written.
	DefaultFlushInterval = 30 * time.Second
	// DefaultBearerTTL is the lifetime of OCI bearer tokens.
	DefaultBearerTTL = 5 * time.Minute
	// DefaultService is the OCI token service name.
	DefaultService = "artifact-registry"
	// Realm is the realm of the Basic challenges.
	Realm = "artifact-registry"
)

// Options configures an Authenticator. Zero values take the defaults.
type Options struct {
	// AdminToken is the super-user credential; empty: there is none.
	AdminToken string
	// AdminTokenFunc, when set, replaces AdminToken: the admin token is
	// what it returns at each authentication, so a token that is rotated
	// while the server runs (admintoken.File) takes effect at once.
	AdminTokenFunc func() string
	// AdminUser is the admin's name in "who am I" answers.
	AdminUser string
	// CacheTTL, CacheSize: the token lookup cache.
	CacheTTL  time.Duration
	CacheSize int
	// Listener, when set, tells the caches (token lookups, signing keys)
	// what other replicas changed, and the caches are bypassed while it is
	// not Fresh. Nil: the caches rely on their TTLs (one replica, tests).
	Listener *invalidate.Listener
	// FlushInterval is the period of Run's last_used_at flush.
	FlushInterval time.Duration
	// Clock decides expiry and cache age; tests inject a fake one.
	Clock  store.Clock
	Logger *slog.Logger

	// OCI bearer tokens (TokenHandler) are signed with the keys of
	// store.SigningKeys, shared by every replica (signing.go).
	// BearerTTL is the lifetime of issued bearer tokens.
	BearerTTL time.Duration
	// Service is the OCI token service name (challenge and token "aud").
	Service string

	// Web UI sessions (session.go): idle timeout, absolute lifetime, and
	// whether cookies are Secure whatever the request (the public URL is
	// https behind a proxy that ends TLS).
	SessionIdle     time.Duration
	SessionLifetime time.Duration
	SecureCookies   bool
	// FailureLimit is how many failed authentications a client address
	// may make at once before it gets ErrRateLimited; they come back at
	// FailureLimit per FailureWindow. 0: no limit.
	FailureLimit  int
	FailureWindow time.Duration
	// FailureAddresses bounds the client addresses tracked at once.
	FailureAddresses int
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (ClientAddr); none by default: the TCP peer is the client.
	TrustedProxies []netip.Prefix
}

func (o Options) withDefaults() Options {
	if o.AdminUser == "" {
		o.AdminUser = DefaultAdminUser
	}
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.CacheSize <= 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Clock == nil {
		o.Clock = store.SystemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.BearerTTL <= 0 {
		o.BearerTTL = DefaultBearerTTL
	}
	if o.Service == "" {
		o.Service = DefaultService
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.SessionLifetime <= 0 {
		o.SessionLifetime = DefaultSessionLifetime
	}
	if o.FailureWindow <= 0 {
		o.FailureWindow = DefaultFailureWindow
	}
	if o.FailureAddresses <= 0 {
		o.FailureAddresses = DefaultFailureAddresses
	}
	return o
}

// tokenStore is the store side authentication uses (a *store.Store; tests
// wrap it to count calls).
type tokenStore interface {
	AccessTokenByHash(ctx context.Context, namespaceID uuid.UUID, sha [32]byte) (*store.AccessTokenCredential, error)
	AccessTokenByID(ctx context.Context, namespaceID, id uuid.UUID) (*store.AccessTokenCredential, error)
	TouchAccessTokens(ctx context.Context, uses []store.AccessTokenUse) (int64, error)
}

// Authenticator turns credentials into Principals: the admin token, access
// tokens (looked up by hash through a short cache) and the OCI bearer
// tokens it issues. It buffers last_used_at (Run flushes it) and manages
// tokens (CreateToken, RevokeToken, ListTokens). Safe for concurrent use;
// one per process.
type Authenticator struct {
	st      *store.Store
	tokens  tokenStore
	opts    Options
	admin   *Principal
	byHash  *ttlCache[[32]byte]
	byID    *ttlCache[tokenKey]
	usage   usageBuffer
	keys    *keyring
	limiter *failureLimiter
}

type tokenKey struct{ ns, id uuid.UUID }

// New returns an Authenticator over the store.
func New(st *store.Store, opts Options) *Authenticator {
	a := newAuthenticator(st, opts)
	a.st = st
	a.keys = newKeyring(st, a.opts.Clock, a.opts.BearerTTL+KeyRefresh+clockSkew, a.opts.trusted(), func(err error) {
		a.opts.Logger.Warn("auth: token signing keys", "err", err)
	})
	if l := a.opts.Listener; l != nil {
		l.Subscribe(a.invalidate)
	}
	return a
}

// trusted says whether the caches may be used (nil: always, for lack of
// a Listener).
func (o Options) trusted() func() bool {
	if o.Listener == nil {
		return nil
	}
	return o.Listener.Fresh
}

// invalidate applies a change made on some replica to the caches.
func (a *Authenticator) invalidate(ev invalidate.Event) {
	switch ev.Kind {
	case invalidate.Token:
		a.Forget(ev.Namespace, ev.Token)
	case invalidate.Namespace:
		a.forgetNamespace(ev.Namespace)
	case invalidate.SigningKeys:
		a.keys.expire()
	default:
		a.byID.clear()
		a.byHash.clear()
		a.keys.expire()
	}
}

func newAuthenticator(tokens tokenStore, opts Options) *Authenticator {
	opts = opts.withDefaults()
	trusted := opts.trusted()
	a := &Authenticator{
		tokens: tokens,
		opts:   opts,
		admin:  AdminPrincipal(opts.AdminUser),
		byHash: newTTLCache[[32]byte](opts.CacheTTL, opts.CacheSize, opts.Clock, trusted),
		byID:   newTTLCache[tokenKey](opts.CacheTTL, opts.CacheSize, opts.Clock, trusted),
		usage:  usageBuffer{m: map[tokenKey]time.Time{}},
	}
	a.limiter = newFailureLimiter(opts)
	return a
}

// adminToken is the current super-user credential; "" when there is none.
func (a *Authenticator) adminToken() string {
	if a.opts.AdminTokenFunc != nil {
		return a.opts.AdminTokenFunc()
	}
	return a.opts.AdminToken
}

// Options returns the effective options.
func (a *Authenticator) Options() Options { return a.opts }

// Authenticate returns the principal of a request: anonymous without an
// Authorization header, else the principal of its credential (see
// CredentialFromRequest and AuthenticateSecret). Decision errors match
// ErrUnauthenticated; other errors are internal (the store failed:
// 500, or 503 for store.CodeRetryable).
//
// A request that presents a credential counts against the failure limit
// of its client address (ratelimit.go): ErrRateLimited once it is spent.
func (a *Authenticator) Authenticate(r *http.Request) (*Principal, error) {
	cred, err := CredentialFromRequest(r)
	if err == nil && cred == nil {
		return anonymous, nil
	}
	return a.guard(r, func() (*Principal, error) {
		if err != nil {
			return nil, err
		}
		return a.AuthenticateSecret(r.Context(), cred.Secret)
	})
}

// AuthenticateRequestSecret is AuthenticateSecret for a secret that came
// in the body of r (npm login, the OAuth2 password grant): it counts
// against the failure limit of r's client address like Authenticate.
func (a *Authenticator) AuthenticateRequestSecret(r *http.Request, secret string) (*Principal, error) {
	return a.guard(r, func() (*Principal, error) { return a.AuthenticateSecret(r.Context(), secret) })
}

// AuthenticateSecret authenticates a secret presented some other way (npm
// login sends the token as the password in a JSON body). The admin token
// (compared in constant time, as SHA-256 digests), an access token (shape
// checked, then looked up by hash: unknown, revoked and expired tokens
// and tokens of a deleted namespace are ErrUnauthenticated) or an OCI
// bearer token issued by TokenHandler.
func (a *Authenticator) AuthenticateSecret(ctx context.Context, secret string) (*Principal, error) {
	sum := sha256.Sum256([]byte(secret))
	if token := a.adminToken(); token != "" {
		adminSum := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(sum[:], adminSum[:]) == 1 {
			return a.admin, nil
		}
	}
	if looksLikeBearerToken(secret) {
		return a.verifyBearer(ctx, secret)
	}
	// A cached lookup needs no parsing: its hash was looked up, so the
	// secret had the right shape.
	if e, ok := a.byHash.peek(sum); ok {
		return a.accept(e)
	}
	nsID, ok := ParseSecret(secret)
	if !ok {
		return nil, failure(reasonUnknown, "invalid token")
	}
	e, err := a.byHash.get(ctx, sum, func(ctx context.Context) (*store.AccessTokenCredential, error) {
		return a.tokens.AccessTokenByHash(ctx, nsID, sum)
	})
	if err != nil {
		return nil, err
	}
	return a.accept(e)
}

// accept validates a looked-up token now (revocation, expiry, namespace)
// and records its use.
func (a *Authenticator) accept(e *cacheEntry) (*Principal, error) {
	c := e.cred
	if c == nil {
		return nil, failure(reasonUnknown, "invalid token")
	}
	now := a.opts.Clock.Now()
	switch {
	case c.RevokedAt != nil:
		return nil, failure(reasonRevoked, "the token has been revoked")
	case c.ExpiresAt != nil && !now.Before(*c.ExpiresAt):
		return nil, failure(reasonExpired, "the token expired at %s", c.ExpiresAt.UTC().Format(time.RFC3339))
	case c.Namespace.DeletedAt != nil || c.Namespace.PurgedAt != nil:
		return nil, failure(reasonUnknown, "invalid token: its namespace no longer exists")
	}
	a.usage.record(tokenKey{c.NamespaceID, c.ID}, now)
	return e.principal, nil
}

// Forget drops a token from this replica's lookup cache, so a revocation
// made elsewhere takes effect here at once (RevokeToken calls it).
func (a *Authenticator) Forget(namespaceID, tokenID uuid.UUID) {
	a.byID.delete(tokenKey{namespaceID, tokenID})
	a.byHash.deleteFunc(func(e *cacheEntry) bool {
		return e.cred != nil && e.cred.ID == tokenID && e.cred.NamespaceID == namespaceID
	})
}

// forgetNamespace drops the tokens of a namespace whose state changed.
func (a *Authenticator) forgetNamespace(namespaceID uuid.UUID) {
	match := func(e *cacheEntry) bool { return e.cred != nil && e.cred.NamespaceID == namespaceID }
	a.byID.deleteFunc(match)
	a.byHash.deleteFunc(match)
}

// tokenByID is the cached lookup of the OCI bearer tokens' re-validation.
func (a *Authenticator) tokenByID(ctx context.Context, nsID, id uuid.UUID) (*cacheEntry, error) {
	return a.byID.get(ctx, tokenKey{nsID, id}, func(ctx context.Context) (*store.AccessTokenCredential, error) {
		return a.tokens.AccessTokenByID(ctx, nsID, id)
	})
}

func isNotFound(err error) bool { return store.HasCode(err, store.CodeAccessTokenNotFound) }
