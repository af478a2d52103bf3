package oci

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/upstream"
)

// Pull-through caches (repositories of kind REMOTE; docs/remote-repositories.md).
// A remote's names resolve like hosted ones (/v2/<namespace>/<remote>/<image>/...);
// the handlers then serve from the cache and go to the upstream through
// the upstream layer (package upstream: one client per remote, built on
// first use, with its token cache, breaker, rate-limit gate, negative
// cache and single-flight fills). Pushes, deletes and uploads through a
// remote are refused (405 UNSUPPORTED).
//
// Authorization: reading a remote needs READ on it, as for a hosted
// repository. A reader's pull may fetch and cache upstream content on the
// repository's behalf: that is what the cache is for, and the cache holds
// only what the remote's upstream serves for the names asked for, so a
// reader gains nothing it could not pull through the remote anyway.

// RemoteOptions configure the pull-through caches.
type RemoteOptions struct {
	// Keyring opens the stored upstream credentials (nil: a remote with
	// credentials cannot be used, its pulls answer 503).
	Keyring container.Keyring
	// Upstream is the base configuration of every remote's upstream
	// client (timeouts, breaker, spool directory, trusted realms); Name,
	// URL, Credentials, HealthRecorder, Metrics and Logger are set per
	// remote.
	Upstream upstream.Config
	// Metrics is the process's upstream metrics and CacheMetrics the
	// cache outcomes (nil: private, unregistered sets).
	Metrics      *upstream.Metrics
	CacheMetrics *CacheMetrics
}

// remoteFlightTimeout bounds a shared manifest resolution: it runs on a
// context of its own, so that a client leaving does not fail the others
// waiting on it.
const remoteFlightTimeout = 2 * time.Minute

// remotes holds the upstream clients of the remotes this process served.
type remotes struct {
	h    *handler
	opts RemoteOptions
	log  *slog.Logger

	clients upstream.Clients
	// flights shares one manifest resolution per (remote, image,
	// reference) among concurrent requests.
	flights singleflight.Group
	metrics *CacheMetrics
}

func newRemotes(h *handler, opts RemoteOptions) *remotes {
	if opts.Metrics == nil {
		opts.Metrics = upstream.NewMetrics()
	}
	if opts.CacheMetrics == nil {
		opts.CacheMetrics = NewCacheMetrics()
	}
	return &remotes{h: h, opts: opts, log: h.log, metrics: opts.CacheMetrics}
}

// client returns the upstream client of the target's remote, building it
// when the remote's settings changed since (settings_changed_at, read
// with the target on every request: a change made through any instance
// applies to the next request here).
func (rs *remotes) client(ctx context.Context, t *container.Target) (*upstream.Client, error) {
	return rs.clients.Get(t.Remote.ID.String(), t.Remote.SettingsChangedAt, func() (*upstream.Client, error) {
		return rs.build(ctx, t)
	})
}

// build makes the upstream client of a remote: its URL, its credentials
// opened from the keyring, and a health recorder writing the remote's
// row. Nothing is sent upstream here.
func (rs *remotes) build(ctx context.Context, t *container.Target) (*upstream.Client, error) {
	cfg := rs.opts.Upstream
	cfg.Name = t.NamespaceSlug + "/" + t.RepositoryName
	cfg.URL = upstreamBaseURL(t.Remote.URL)
	cfg.Metrics = rs.opts.Metrics
	cfg.Logger = rs.log
	cfg.Credentials = nil
	if t.Remote.HasCredentials {
		creds, err := rs.h.container.RemoteCredentials(ctx, t.NamespaceID, t.Remote.ID)
		if err != nil {
			return nil, err
		}
		if creds != nil {
			cfg.Credentials = &upstream.Credentials{Username: creds.Username, Password: creds.Password}
		}
	}
	nsID, remoteID := t.NamespaceID, t.Remote.ID
	cfg.HealthRecorder = upstream.HealthFunc(func(ctx context.Context, h upstream.Health) error {
		return rs.h.container.RecordRemoteHealth(ctx, nsID, remoteID, h.Status, h.CheckedAt, h.LastError)
	})
	return upstream.New(cfg)
}

// upstreamBaseURL is where a remote's registry API lives: the URL users
// give for Docker Hub is often its index host, whose registry API is on
// another name.
func upstreamBaseURL(u string) string {
	if container.IsDockerHub(u) {
		return "https://registry-1.docker.io"
	}
	return u
}

// CacheMetrics are the cache outcomes of the pull-through caches, per
// kind of content; the upstream layer exports the upstream side.
type CacheMetrics struct {
	requests *prometheus.CounterVec
}

// MetricRemoteCacheRequests counts content requests of pull-through
// caches by outcome: hit (served from the cache), revalidated (a stale
// tag the upstream confirmed), miss (fetched upstream), stale (the
// upstream could not be asked: served from the cache with a Warning),
// error (nothing cached to serve: 502/503/504).
const MetricRemoteCacheRequests = "artifact_registry_remote_cache_requests_total"

// NewCacheMetrics builds an unregistered set.
func NewCacheMetrics() *CacheMetrics {
	return &CacheMetrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricRemoteCacheRequests,
		Help: "Content requests of container pull-through caches by kind (manifest, blob, tags, referrers) and outcome (hit, revalidated, miss, stale, error).",
	}, []string{"kind", "outcome"})}
}

// Collectors returns the metrics to register.
func (m *CacheMetrics) Collectors() []prometheus.Collector { return []prometheus.Collector{m.requests} }

func (m *CacheMetrics) observe(kind, outcome string) { m.requests.WithLabelValues(kind, outcome).Inc() }

// staleWarning is the Warning header of content served from the cache
// because the upstream could not be asked (RFC 9111 section 5.5's code
// 110, "Response is Stale").
const staleWarning = `110 artifact-registry "Response is Stale: the upstream registry could not be reached, serving the cached copy"`

// upstreamFailure maps an upstream failure with nothing cached to serve
// to the OCI error: 404 with the protocol's code for content the
// upstream does not have, else 502, 503 (with Retry-After when known) or
// 504, never 500, with a message that names no URL and no credential.
func (h *handler) upstreamFailure(err error, notFound func() *apiError) error {
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		if errors.Is(err, context.DeadlineExceeded) {
			// The shared resolution's own deadline (the client's would
			// have ended the request first).
			return newErr(http.StatusGatewayTimeout, codeUnavailable, "upstream did not answer in time")
		}
		return err
	}
	if ue.Kind == upstream.KindNotFound {
		return notFound()
	}
	e := newErr(ue.ClientStatus(), codeUnavailable, "%s", ue.ClientMessage())
	if e.Status == http.StatusServiceUnavailable {
		e.RetryAfter = 1
		if !ue.RetryAt.IsZero() {
			e.RetryAfter = max(1, int(time.Until(ue.RetryAt).Seconds()+0.999))
		}
	}
	return e
}
