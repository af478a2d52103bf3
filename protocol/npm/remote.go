package npm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/countbuf"
	"github.com/artifact-registry/artifact-registry/protocol/blobredirect"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
	"github.com/artifact-registry/artifact-registry/store"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
	"github.com/artifact-registry/artifact-registry/upstream"
)

// Pull-through caches (repositories of format NPM and kind REMOTE;
// docs/remote-repositories.md). A remote's registry URL is a hosted one's
// (/npm/<namespace>/<remote>/); its packuments and tarballs come from the
// upstream registry through the upstream layer (one client per remote:
// breaker, rate-limit gate, negative cache, single-flight fills) and are
// cached in the namespace's blob store:
//
//   - a packument is stored verbatim with the upstream's ETag and
//     Last-Modified, served for the remote's metadata validity, then
//     revalidated with a conditional GET (a 304 only bumps the check
//     time). Full and abbreviated documents are both rendered from it at
//     serve time, dist.tarball rewritten to this registry, with their own
//     ETags and Vary: Accept;
//   - a tarball is fetched from the upstream's origin only (a packument
//     naming another host gets the upstream's own tarball path instead),
//     verified against dist.integrity (sha512) or dist.shasum while it
//     streams to the client, and cached forever (until evicted);
//   - when the upstream cannot be asked, cached packuments are served with
//     a Warning header, listing only the versions whose tarballs are
//     cached (when there are some: an install then resolves to what can
//     be served) with the dist-tags recomputed; uncached tarballs answer
//     503/504 with npm's {"error": ...}.
//
// Reading a remote needs READ on it, as for a hosted repository; a read
// may fill the cache on the repository's behalf. Publish, unpublish,
// deprecate and dist-tag changes are authorized like a hosted
// repository's, then refused (405).

// RemoteOptions configure the npm pull-through caches.
type RemoteOptions struct {
	// Keyring opens the stored upstream credentials (nil: a remote with
	// credentials cannot be used, its reads answer 503).
	Keyring npmstore.Keyring
	// Upstream is the base configuration of every remote's upstream
	// client; Name, URL, Credentials, HealthRecorder, Metrics and Logger
	// are set per remote.
	Upstream upstream.Config
	// Metrics is the process's upstream metrics and CacheMetrics the
	// cache outcomes (nil: private, unregistered sets).
	Metrics      *upstream.Metrics
	CacheMetrics *CacheMetrics
	// TarballHosts are hosts ("cdn.example" or "10.0.0.5:8080") besides
	// the upstream's own from which a packument's dist.tarball may be
	// fetched.
	TarballHosts []string
	// MaxPackumentSize bounds an upstream packument (default 128 MiB).
	MaxPackumentSize int64
	// Clock is the time of freshness decisions (default time.Now).
	Clock func() time.Time
}

const (
	defaultMaxPackumentSize = 128 << 20
	// maxSearchBody bounds an upstream search answer.
	maxSearchBody = 4 << 20
	// remoteFlightTimeout bounds a shared packument resolution, which runs
	// on a context of its own so that a client leaving does not fail the
	// others waiting on it.
	remoteFlightTimeout = 2 * time.Minute
	// staleWarning is the Warning header of a packument served from the
	// cache because the upstream could not be asked (RFC 9111 section
	// 5.5's code 110).
	staleWarning = `110 artifact-registry "Response is Stale: the upstream registry could not be reached, serving the cached copy"`
)

// remotes holds the upstream clients and the shared resolutions of the
// npm remotes this process served.
type remotes struct {
	h       *handler
	opts    RemoteOptions
	log     *slog.Logger
	clients upstream.Clients
	flights singleflight.Group
	metrics *CacheMetrics
	now     func() time.Time
	// rendered caches rendered documents by their ETag (which names the
	// cached packument's digest, the kind and the tarball base).
	rendered *lru.Cache[string, []byte]
	requests *countbuf.Buffer[npmstore.RemoteRequest]
	allowed  map[string]bool
}

func newRemotes(h *handler, opts RemoteOptions) *remotes {
	if opts.Metrics == nil {
		opts.Metrics = upstream.NewMetrics()
	}
	if opts.CacheMetrics == nil {
		opts.CacheMetrics = NewCacheMetrics()
	}
	if opts.MaxPackumentSize <= 0 {
		opts.MaxPackumentSize = defaultMaxPackumentSize
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	rendered, _ := lru.New[string, []byte](256)
	rs := &remotes{h: h, opts: opts, log: h.log, metrics: opts.CacheMetrics, now: opts.Clock, rendered: rendered,
		requests: countbuf.New("npm remote request counters", h.log, h.npm.RecordRemoteRequests), allowed: map[string]bool{}}
	for _, host := range opts.TarballHosts {
		rs.allowed[strings.ToLower(host)] = true
	}
	return rs
}

// client returns the upstream client of a remote, rebuilt when its
// settings changed.
func (rs *remotes) client(ctx context.Context, repo *npmstore.Repository) (*upstream.Client, error) {
	r := repo.Remote
	return rs.clients.Get(r.ID.String(), r.SettingsChangedAt, func() (*upstream.Client, error) {
		cfg := rs.opts.Upstream
		cfg.Name = repo.NamespaceSlug + "/" + repo.RepositoryName
		cfg.URL = r.URL
		cfg.Metrics = rs.opts.Metrics
		cfg.Logger = rs.log
		cfg.Credentials = nil
		if r.HasCredentials {
			creds, err := rs.h.npm.RemoteCredentials(ctx, rs.opts.Keyring, repo.NamespaceID, r.ID)
			if err != nil {
				return nil, err
			}
			if creds != nil {
				cfg.Credentials = &upstream.Credentials{Username: creds.Username, Password: creds.Password}
			}
		}
		nsID, remoteID := repo.NamespaceID, r.ID
		cfg.HealthRecorder = upstream.HealthFunc(func(ctx context.Context, h upstream.Health) error {
			return rs.h.npm.RecordRemoteHealth(ctx, nsID, remoteID, h.Status, h.CheckedAt, h.LastError)
		})
		return upstream.New(cfg)
	})
}

// CacheMetrics are the cache outcomes of the npm pull-through caches.
type CacheMetrics struct {
	requests *prometheus.CounterVec
}

// MetricRemoteCacheRequests counts content requests of npm pull-through
// caches by kind (packument, tarball) and outcome: hit (served from the
// cache), revalidated (a stale packument the upstream confirmed or
// replaced), miss (fetched upstream), stale (the upstream could not be
// asked: served from the cache with a Warning), error (nothing cached to
// serve).
const MetricRemoteCacheRequests = "artifact_registry_npm_remote_cache_requests_total"

// NewCacheMetrics builds an unregistered set.
func NewCacheMetrics() *CacheMetrics {
	return &CacheMetrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricRemoteCacheRequests,
		Help: "Content requests of npm pull-through caches by kind (packument, tarball) and outcome (hit, revalidated, miss, stale, error).",
	}, []string{"kind", "outcome"})}
}

// Collectors returns the metrics to register.
func (m *CacheMetrics) Collectors() []prometheus.Collector { return []prometheus.Collector{m.requests} }

func (m *CacheMetrics) observe(kind, outcome string) { m.requests.WithLabelValues(kind, outcome).Inc() }

// --- routing

// routeRemote serves the paths of a pull-through cache; handled is false
// for the paths a remote shares with hosted registries (ping, whoami,
// login, tokens, audit).
func (h *handler) routeRemote(req *request) (handled bool, err error) {
	rest, m := req.rest, req.r.Method
	if len(rest) == 0 {
		return false, nil
	}
	if rest[0] == "-" {
		switch {
		case len(rest) == 3 && rest[1] == "v1" && rest[2] == "search":
			if m != http.MethodGet {
				return true, methodNotAllowed(req.r)
			}
			return true, h.remoteSearch(req)
		case len(rest) >= 4 && rest[1] == "package":
			name, tail := rest[2], rest[3:]
			if strings.HasPrefix(name, "@") && !strings.Contains(name, "/") && len(tail) > 0 && tail[0] != "dist-tags" {
				name, tail = name+"/"+tail[0], tail[1:]
			}
			if len(tail) == 0 || tail[0] != "dist-tags" || len(tail) > 2 {
				return true, errorf(http.StatusNotFound, "no such endpoint: %s", req.r.URL.Path)
			}
			if len(tail) == 1 && (m == http.MethodGet || m == http.MethodHead) {
				return true, h.remoteDistTags(req, name)
			}
			return true, h.remoteRefuse(req, auth.ActionWrite)
		}
		return false, nil
	}
	name, tail := rest[0], rest[1:]
	if strings.HasPrefix(name, "@") && !strings.Contains(name, "/") && len(tail) > 0 {
		name, tail = name+"/"+tail[0], tail[1:]
	}
	read := m == http.MethodGet || m == http.MethodHead
	switch {
	case len(tail) == 0 && read:
		return true, h.remotePackument(req, name)
	case len(tail) == 2 && tail[0] == "-" && read:
		return true, h.remoteTarball(req, name, tail[1])
	case len(tail) == 1 && read:
		return true, h.remoteVersion(req, name, tail[0])
	case m == http.MethodDelete:
		return true, h.remoteRefuse(req, auth.ActionDelete)
	case m == http.MethodPut || m == http.MethodPost:
		return true, h.remoteRefuse(req, auth.ActionWrite)
	case read:
		return true, errorf(http.StatusNotFound, "no such endpoint: %s", req.r.URL.Path)
	}
	return true, methodNotAllowed(req.r)
}

// remoteRefuse authorizes a change like on a hosted repository (a caller
// without the right learns only that), then refuses it.
func (h *handler) remoteRefuse(req *request, action auth.Action) error {
	repo, err := h.writeRepo(req, action)
	if err != nil {
		return err
	}
	return errorf(http.StatusMethodNotAllowed,
		"%s/%s is a remote repository (a pull-through cache of its upstream registry): it serves what the upstream has; publish, unpublish, deprecate and dist-tag changes go to a hosted repository",
		repo.NamespaceSlug, repo.RepositoryName)
}

// remoteRead resolves and authorizes a read of a remote.
func (h *handler) remoteRead(req *request, name string) (*npmstore.Repository, error) {
	repo, err := h.readRepo(req)
	if err != nil {
		return nil, err
	}
	if !npmname.Plausible(name) {
		return nil, errorf(http.StatusNotFound, "no such package available")
	}
	return repo, nil
}

// --- upstream failures

// upstreamFailure maps an upstream failure with nothing cached to serve
// to npm's error: 404 for what the upstream does not have, else 502, 503
// (with Retry-After) or 504, never 500, with a message that names no URL
// and no credential.
func upstreamFailure(err error, notFound string) error {
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		if errors.Is(err, context.DeadlineExceeded) {
			return errorf(http.StatusGatewayTimeout, "the upstream registry did not answer in time")
		}
		if store.HasCode(err, npmstore.CodeNoKeyring) {
			return errorf(http.StatusServiceUnavailable, "this remote's upstream credentials cannot be opened on this instance (no keyring)")
		}
		return err
	}
	if ue.Kind == upstream.KindNotFound {
		return errorf(http.StatusNotFound, "%s", notFound)
	}
	status := ue.ClientStatus()
	if ue.Temporary() && status == http.StatusBadGateway {
		// Nothing cached and the upstream cannot be asked (unreachable,
		// failing, refusing our credentials): the cache is unavailable
		// for this content, which npm reports and retries as such.
		status = http.StatusServiceUnavailable
	}
	e := errorf(status, "%s", ue.ClientMessage())
	if e.status == http.StatusServiceUnavailable {
		after := 1
		if !ue.RetryAt.IsZero() {
			after = max(1, int(time.Until(ue.RetryAt).Seconds()+0.999))
		}
		e.header = map[string]string{"Retry-After": strconv.Itoa(after)}
	}
	return e
}

func temporary(err error) bool {
	var ue *upstream.Error
	if errors.As(err, &ue) {
		return ue.Temporary()
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// --- packuments

// remoteDoc is a packument as the cache holds it.
type remoteDoc struct {
	cached *npmstore.RemotePackument
	body   []byte
	// stale: the upstream could not be asked; the cached copy is served.
	stale bool
	// outcome is the cache metric's ("hit", "revalidated", "miss", "stale").
	outcome string
}

// upstreamName is a package name as the registry path has it: a scoped
// name's slash escaped (@scope%2fname).
func upstreamName(name string) string {
	if scope, pkg, scoped := npmname.Split(name); scoped {
		return "@" + url.PathEscape(scope) + "%2f" + url.PathEscape(pkg)
	}
	return url.PathEscape(name)
}

// packument returns the packument of name: the cached one while fresh,
// otherwise the upstream's (conditional GET when cached), shared by
// concurrent requests of the same package in this process.
func (rs *remotes) packument(ctx context.Context, repo *npmstore.Repository, name string) (*remoteDoc, error) {
	cached, err := rs.h.npm.RemotePackument(ctx, repo, name)
	if err != nil {
		return nil, err
	}
	if cached != nil && rs.now().Sub(cached.CheckedAt) < repo.Remote.MetadataValidity {
		body, err := rs.h.npm.ReadRemotePackument(ctx, cached, rs.opts.MaxPackumentSize)
		if err != nil {
			return nil, err
		}
		return &remoteDoc{cached: cached, body: body, outcome: outcomeHit}, nil
	}
	key := repo.Remote.ID.String() + "\x00" + name
	ch := rs.flights.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), remoteFlightTimeout)
		defer cancel()
		return rs.fetchPackument(fctx, repo, name, cached)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*remoteDoc), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

const (
	outcomeHit         = "hit"
	outcomeRevalidated = "revalidated"
	outcomeMiss        = "miss"
	outcomeStale       = "stale"
	outcomeError       = "error"
)

// fetchPackument asks the upstream for a packument (conditionally when
// cached) and caches what it sends.
func (rs *remotes) fetchPackument(ctx context.Context, repo *npmstore.Repository, name string, cached *npmstore.RemotePackument) (*remoteDoc, error) {
	stale := func(cause error) (*remoteDoc, error) {
		if cached == nil || !temporary(cause) {
			return nil, cause
		}
		body, err := rs.h.npm.ReadRemotePackument(ctx, cached, rs.opts.MaxPackumentSize)
		if err != nil {
			return nil, err
		}
		return &remoteDoc{cached: cached, body: body, stale: true, outcome: outcomeStale}, nil
	}
	c, err := rs.client(ctx, repo)
	if err != nil {
		return stale(err)
	}
	hdr := http.Header{"Accept": {"application/json"}}
	if cached != nil {
		if cached.ETag != "" {
			hdr.Set("If-None-Match", cached.ETag)
		} else if cached.LastModified != "" {
			hdr.Set("If-Modified-Since", cached.LastModified)
		}
	}
	resp, err := c.Do(ctx, &upstream.Request{Path: upstreamName(name), Header: hdr})
	if err != nil {
		return stale(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && cached != nil {
		if err := rs.h.npm.ConfirmRemotePackument(ctx, repo, cached.FileID, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")); err != nil {
			return nil, err
		}
		body, err := rs.h.npm.ReadRemotePackument(ctx, cached, rs.opts.MaxPackumentSize)
		if err != nil {
			return nil, err
		}
		return &remoteDoc{cached: cached, body: body, outcome: outcomeRevalidated}, nil
	}
	if resp.StatusCode != http.StatusOK {
		return stale(&upstreamAnswerError{fmt.Sprintf("the upstream registry answered %d for a packument", resp.StatusCode)})
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, rs.opts.MaxPackumentSize+1))
	if err != nil {
		return stale(err)
	}
	if int64(len(body)) > rs.opts.MaxPackumentSize {
		return nil, &upstreamAnswerError{fmt.Sprintf("the upstream packument exceeds the %d byte limit", rs.opts.MaxPackumentSize)}
	}
	listed, err := checkPackument(body, name)
	if err != nil {
		return nil, err
	}
	p, dropped, err := rs.h.npm.CacheRemotePackument(ctx, repo, npmstore.RemotePackumentPut{
		Name: name, Body: body, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified"), Listed: listed})
	if err != nil {
		return nil, err
	}
	if dropped > 0 {
		rs.log.Info("npm remote: cached versions the upstream no longer lists were dropped",
			"remote", repo.NamespaceSlug+"/"+repo.RepositoryName, "package", name, "versions", dropped)
	}
	outcome := outcomeMiss
	if cached != nil {
		outcome = outcomeRevalidated
	}
	return &remoteDoc{cached: p, body: body, outcome: outcome}, nil
}

// upstreamAnswerError is an upstream answer that cannot be used (502).
type upstreamAnswerError struct{ msg string }

func (e *upstreamAnswerError) Error() string { return e.msg }

// checkPackument checks that an upstream packument is a JSON object for
// the package asked for and returns the versions it lists.
func checkPackument(body []byte, name string) (map[string]bool, error) {
	var doc struct {
		Name     string                     `json:"name"`
		Versions map[string]json.RawMessage `json:"versions"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, &upstreamAnswerError{"the upstream packument is not a JSON object with versions"}
	}
	if doc.Name != name {
		return nil, &upstreamAnswerError{fmt.Sprintf("the upstream packument is for %q, not %q", doc.Name, name)}
	}
	listed := make(map[string]bool, len(doc.Versions))
	for v := range doc.Versions {
		listed[v] = true
	}
	return listed, nil
}

// remoteError maps the errors of the remote paths.
func remoteError(err error, notFound string) error {
	var ae *upstreamAnswerError
	if errors.As(err, &ae) {
		return errorf(http.StatusBadGateway, "%s", ae.msg)
	}
	return upstreamFailure(err, notFound)
}

// remotePackument is GET/HEAD /<name> of a remote.
func (h *handler) remotePackument(req *request, name string) error {
	repo, err := h.remoteRead(req, name)
	if err != nil {
		return err
	}
	ctx := req.r.Context()
	doc, err := h.remote.packument(ctx, repo, name)
	if err != nil {
		h.remote.metrics.observe("packument", outcomeError)
		return remoteError(err, "no such package available")
	}
	h.remote.metrics.observe("packument", doc.outcome)
	corgi := wantsCorgi(req.r)
	kind, ct := "full", contentTypeJSON
	if corgi {
		kind, ct = "corgi", contentTypeCorgi
	}
	var keep map[string]bool
	if doc.stale {
		if keep, err = h.npm.CachedRemoteVersions(ctx, repo, name); err != nil {
			return err
		}
	}
	base := h.tarballPrefix(req.r, repo, name)
	etag := renderETag(doc.cached.Blob.SHA256, kind, base, keep)
	hdr := req.w.Header()
	hdr.Set("Vary", "Accept")
	if doc.stale {
		hdr.Set("Warning", staleWarning)
	}
	if notModified(req, etag) {
		return nil
	}
	out, ok := h.remote.rendered.Get(etag)
	if !ok {
		if out, err = renderRemote(doc.body, base, corgi, keep); err != nil {
			return errorf(http.StatusBadGateway, "the cached upstream packument cannot be served: %v", err)
		}
		if len(out) <= 8<<20 {
			h.remote.rendered.Add(etag, out)
		}
	}
	setMetadataHeaders(req.w, etag, ct, len(out))
	req.w.WriteHeader(http.StatusOK)
	if req.r.Method != http.MethodHead {
		_, _ = req.w.Write(out)
	}
	return nil
}

// renderETag names a rendered document: the cached packument's digest,
// the kind, the tarball base (the host and prefix it was rendered for)
// and, for a stale copy, the versions kept.
func renderETag(sha [32]byte, kind, base string, keep map[string]bool) string {
	h := sha256.New()
	h.Write(sha[:])
	h.Write([]byte("\x00" + kind + "\x00" + base))
	if keep != nil {
		vs := make([]string, 0, len(keep))
		for v := range keep {
			vs = append(vs, v)
		}
		slices.Sort(vs)
		h.Write([]byte("\x00stale\x00" + strings.Join(vs, "\x00")))
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:20]) + `"`
}

// remoteVersion is GET /<name>/<version|tag> of a remote.
func (h *handler) remoteVersion(req *request, name, spec string) error {
	repo, err := h.remoteRead(req, name)
	if err != nil {
		return err
	}
	doc, err := h.remote.packument(req.r.Context(), repo, name)
	if err != nil {
		return remoteError(err, "no such package available")
	}
	p, err := parseRemote(doc.body)
	if err != nil {
		return errorf(http.StatusBadGateway, "the cached upstream packument cannot be served: %v", err)
	}
	if v, ok := p.tags[spec]; ok {
		spec = v
	}
	raw, ok := p.versions[spec]
	if !ok {
		return errorf(http.StatusNotFound, "version not found: %s@%s", name, spec)
	}
	out, err := rewriteVersion(raw, h.tarballPrefix(req.r, repo, name), spec, name, false)
	if err != nil {
		return errorf(http.StatusBadGateway, "the cached upstream packument cannot be served: %v", err)
	}
	if doc.stale {
		req.w.Header().Set("Warning", staleWarning)
	}
	writeJSONBytes(req.w, out)
	return nil
}

// remoteDistTags is GET /-/package/<name>/dist-tags of a remote.
func (h *handler) remoteDistTags(req *request, name string) error {
	repo, err := h.remoteRead(req, name)
	if err != nil {
		return err
	}
	doc, err := h.remote.packument(req.r.Context(), repo, name)
	if err != nil {
		return remoteError(err, "no such package available")
	}
	p, err := parseRemote(doc.body)
	if err != nil {
		return errorf(http.StatusBadGateway, "the cached upstream packument cannot be served: %v", err)
	}
	if doc.stale {
		req.w.Header().Set("Warning", staleWarning)
	}
	writeJSON(req.w, http.StatusOK, p.sanitizedTags(nil))
	return nil
}

func writeJSONBytes(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", contentTypeJSON)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// --- search

// remoteSearch passes /-/v1/search through to the upstream.
func (h *handler) remoteSearch(req *request) error {
	repo, err := h.readRepo(req)
	if err != nil {
		return err
	}
	q := req.r.URL.RawQuery
	if len(q) > 2048 {
		return errorf(http.StatusBadRequest, "search query longer than 2048 characters")
	}
	ctx := req.r.Context()
	c, err := h.remote.client(ctx, repo)
	if err != nil {
		return remoteError(err, "no search results")
	}
	p := "-/v1/search"
	if q != "" {
		p += "?" + q
	}
	resp, err := c.Do(ctx, &upstream.Request{Path: p, Header: http.Header{"Accept": {"application/json"}}, NegativeKey: "search"})
	if err != nil {
		return remoteError(err, "the upstream registry has no search")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody+1))
	if err != nil {
		return remoteError(err, "")
	}
	var probe map[string]json.RawMessage
	if resp.StatusCode != http.StatusOK || len(body) > maxSearchBody || json.Unmarshal(body, &probe) != nil {
		return errorf(http.StatusBadGateway, "the upstream registry's search answer cannot be used")
	}
	writeJSONBytes(req.w, body)
	return nil
}

// --- tarballs

// remoteTarball is GET/HEAD /<name>/-/<file> of a remote: the cached
// tarball, or the upstream's, verified while it streams and cached.
// Accept is ignored.
func (h *handler) remoteTarball(req *request, name, file string) error {
	repo, err := h.remoteRead(req, name)
	if err != nil {
		return err
	}
	return h.remoteTarballOf(req, repo, name, file)
}

// remoteTarballOf serves a tarball of remote repo (authorized by the
// caller), counted on repo. Nothing is written before an error is
// returned, so that a virtual can go on to its next upstream.
func (h *handler) remoteTarballOf(req *request, repo *npmstore.Repository, name, file string) error {
	if !strings.HasSuffix(file, ".tgz") || len(file) > 255 {
		return errorf(http.StatusNotFound, "no such tarball: %s", file)
	}
	ctx := req.r.Context()
	record := func(hit bool, t *npmstore.RemoteTarball) {
		outcome := outcomeMiss
		if hit {
			outcome = outcomeHit
		}
		h.remote.metrics.observe("tarball", outcome)
		r := npmstore.RemoteRequest{NamespaceID: repo.NamespaceID, RemoteID: repo.Remote.ID, Hit: hit, At: h.remote.now()}
		if t != nil && req.r.Method == http.MethodGet {
			r.RepositoryID, r.PackageID, r.VersionID = repo.RepositoryID, t.PackageID, t.VersionID
		}
		h.remote.requests.Add(r)
	}
	// find is the cache lookup: nil, nil when the tarball is not cached.
	find := func(ctx context.Context) (*npmstore.RemoteTarball, error) {
		t, err := h.npm.RemoteTarball(ctx, repo, name, file)
		if store.HasCode(err, npmstore.CodeFileUnknown) {
			return nil, nil
		}
		return t, err
	}
	cached := func() (bool, error) {
		t, err := find(ctx)
		if t == nil || err != nil {
			return false, err
		}
		record(true, t)
		return true, h.serveCachedTarball(req, t, file)
	}
	if served, err := cached(); served || err != nil {
		return err
	}
	fail := func(err error) error {
		h.remote.metrics.observe("tarball", outcomeError)
		return remoteError(err, "no such tarball: "+file)
	}
	// The version and its digests come from the packument (fetched first
	// when the tarball is asked for before it).
	doc, err := h.remote.packument(ctx, repo, name)
	if err != nil {
		return fail(err)
	}
	p, err := parseRemote(doc.body)
	if err != nil {
		return fail(&upstreamAnswerError{"the cached upstream packument cannot be read"})
	}
	version, dist, ok := p.versionOfFile(name, file)
	if !ok {
		h.remote.metrics.observe("tarball", outcomeError)
		return errorf(http.StatusNotFound, "no such tarball: %s", file)
	}
	want, err := dist.expect()
	if err != nil {
		return fail(&upstreamAnswerError{fmt.Sprintf("the upstream lists no usable integrity for %s@%s: %v", name, version, err)})
	}
	c, err := h.remote.client(ctx, repo)
	if err != nil {
		return fail(err)
	}
	src := h.remote.tarballSource(repo, name, file, dist.Tarball)
	pj, _ := json.Marshal(map[string]any{"name": name, "version": version, "dist": dist})
	rp := *repo
	stage := func(fctx context.Context, body io.Reader) (upstream.Staged, error) {
		sb, err := h.npm.StageRemoteTarball(fctx, &rp, body)
		if err != nil {
			return nil, err
		}
		return &tarballStaged{h: h, repo: &rp, sb: sb, put: npmstore.RemoteTarballPut{Name: name, Version: version, FileName: file, PackageJSON: pj}}, nil
	}
	fr, err := c.Fill(ctx, upstream.FillRequest{Key: "tgz:" + name + "/" + file,
		Request: upstream.Request{Path: src, Header: http.Header{"Accept": {"application/octet-stream"}}},
		Expect:  upstream.Expect{Size: -1, Digests: []upstream.Digest{want}},
		Stage:   stage,
		Recheck: func(ctx context.Context) (bool, error) {
			t, err := find(ctx)
			return t != nil, err
		}})
	if errors.Is(err, upstream.ErrCached) {
		// Another fill committed it after our lookup.
		if served, err := cached(); served || err != nil {
			return err
		}
		return fail(err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fail(err)
	}
	defer fr.Close()
	record(false, nil)
	w := req.w
	w.Header().Set("Content-Type", "application/octet-stream")
	httpsafe.Attachment(w.Header(), file)
	if size := fr.Size(); size >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	}
	w.WriteHeader(http.StatusOK)
	if req.r.Method == http.MethodHead {
		return nil
	}
	n, err := io.Copy(w, fr)
	if err != nil && ctx.Err() == nil {
		// The upstream failed mid-body or sent bytes that do not match the
		// integrity: cut the connection so that the client cannot take a
		// short or wrong body for a whole one.
		h.log.Warn("npm: upstream tarball fill failed while streaming", "remote", repo.NamespaceSlug+"/"+repo.RepositoryName,
			"package", name, "file", file, "bytes", n, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (h *handler) serveCachedTarball(req *request, t *npmstore.RemoteTarball, file string) error {
	etag := `"` + hex.EncodeToString(t.Blob.SHA256[:]) + `"`
	w := req.w
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	httpsafe.Attachment(w.Header(), file)
	if inm := req.r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(t.Blob.Size, 10))
	if req.r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	// The request was recorded by the caller.
	if blobredirect.Redirect(w, req.r, h.st, h.log, &t.Blob, "application/octet-stream", file) {
		return nil
	}
	rc, err := h.st.OpenBlobObject(req.r.Context(), &t.Blob, 0, -1)
	if err != nil {
		w.Header().Del("Content-Length")
		return err
	}
	defer rc.Close()
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, rc)
	return nil
}

// tarballSource is where a tarball is fetched: the packument's URL when it
// is on the upstream's origin (or an allowed host), otherwise the
// upstream's own tarball path, so that a packument never makes us
// contact a host the remote was not configured for.
func (rs *remotes) tarballSource(repo *npmstore.Repository, name, file, listed string) string {
	own := upstreamTarballPath(name, file)
	u, err := url.Parse(listed)
	if err != nil || u.User != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return own
	}
	base, err := url.Parse(repo.Remote.URL)
	if err != nil {
		return own
	}
	sameOrigin := strings.EqualFold(u.Scheme, base.Scheme) && strings.EqualFold(u.Host, base.Host)
	allowed := rs.allowed[strings.ToLower(u.Host)] && (u.Scheme == "https" || base.Scheme == "http")
	if !sameOrigin && !allowed {
		return own
	}
	u.Fragment = ""
	return u.String()
}

// upstreamTarballPath is the registry's own tarball path of a file, under
// the upstream URL.
func upstreamTarballPath(name, file string) string {
	if scope, pkg, scoped := npmname.Split(name); scoped {
		return "@" + url.PathEscape(scope) + "/" + url.PathEscape(pkg) + "/-/" + url.PathEscape(file)
	}
	return url.PathEscape(name) + "/-/" + url.PathEscape(file)
}

// tarballStaged is a fill's staged tarball (upstream.Staged): committed
// into the cache once the fill verified the bytes.
type tarballStaged struct {
	h    *handler
	repo *npmstore.Repository
	sb   *store.StagedBlob
	put  npmstore.RemoteTarballPut
}

func (s *tarballStaged) Commit(ctx context.Context, res *upstream.FillResult) error {
	if s.sb.Size() != res.Size {
		s.sb.Close(ctx, false)
		return fmt.Errorf("staged tarball of %d bytes, the fill verified %d", s.sb.Size(), res.Size)
	}
	return s.h.npm.CommitRemoteTarball(ctx, s.repo, s.put, s.sb)
}

func (s *tarballStaged) Discard(ctx context.Context) { s.sb.Close(ctx, false) }

// --- counters

// --- small helpers

// fileOfURL is the last path segment of a tarball URL, unescaped.
func fileOfURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return path.Base(u.Path)
}
