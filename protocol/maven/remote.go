package maven

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/protocol/blobredirect"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
	"github.com/artifact-registry/artifact-registry/upstream"
)

// Maven proxies (repositories of kind REMOTE; docs/remote-repositories.md,
// "Maven"). A proxy answers GET and HEAD of the Maven layout from its cache
// and asks its upstream through the upstream layer (one client per proxy:
// breaker, rate-limit gate, negative cache of 404s, single-flight fills):
//
//   - release files are immutable: once cached they are served without
//     asking the upstream again;
//   - maven-metadata.xml (package and SNAPSHOT version level) and every
//     file of a SNAPSHOT version are served for the proxy's metadata
//     validity, then revalidated with If-None-Match / If-Modified-Since;
//   - the .md5, .sha1, .sha256 and .sha512 sidecars are always computed
//     from the cached bytes; the upstream's .sha1, when it has one, must
//     match the bytes or they are not cached (502);
//   - when the upstream cannot be asked, cached files are served (stale
//     ones with a Warning header) and uncached ones answer 502, 503 or
//     504;
//   - deploys are refused with 405 once authorized.
//
// Authorization is that of a hosted repository: READ to read. A reader's
// request may fetch and cache what the upstream has under the path it
// asked for: that is what a proxy is for, and it gains the reader nothing
// it could not download through the proxy anyway.

// RemoteOptions configure the Maven proxies.
type RemoteOptions struct {
	// Keyring opens the stored upstream credentials (nil: a proxy with
	// credentials cannot be used, its misses answer 503).
	Keyring container.Keyring
	// Upstream is the base configuration of every proxy's upstream client
	// (timeouts, breaker, spool directory); Name, URL, Credentials,
	// NegativeTTL, HealthRecorder, Metrics and Logger are set per proxy.
	Upstream upstream.Config
	// Metrics is the process's upstream metrics and CacheMetrics the
	// cache outcomes (nil: private, unregistered sets).
	Metrics      *upstream.Metrics
	CacheMetrics *CacheMetrics
}

// waitLimit is the largest file whose answer waits for the fill's
// verdict (the whole body received, its length and the upstream's .sha1
// checked, the cache committed) before its first byte is sent: a wrong
// file then gets a clean 502 with a message. Larger files stream while
// they arrive; a wrong one is cut off before its end (the client sees a
// broken transfer) and is not cached.
const waitLimit = 16 << 20

// maxUpstreamChecksum bounds the upstream's .sha1 body.
const maxUpstreamChecksum = 1 << 10

// CacheMetrics are the outcomes of the Maven proxies' requests.
type CacheMetrics struct {
	requests *prometheus.CounterVec
}

// MetricMavenRemoteRequests counts the content requests of Maven proxies by
// kind (metadata, snapshot, release, checksum) and outcome: hit (served
// from the cache), revalidated (the upstream confirmed a stale copy),
// miss (fetched upstream), stale (the upstream could not be asked: served
// from the cache with a Warning), not_found, error (nothing cached to
// serve: 502/503/504).
const MetricMavenRemoteRequests = "artifact_registry_maven_remote_requests_total"

// NewCacheMetrics builds an unregistered set.
func NewCacheMetrics() *CacheMetrics {
	return &CacheMetrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricMavenRemoteRequests,
		Help: "Content requests of Maven proxies by kind (metadata, snapshot, release, checksum) and outcome (hit, revalidated, miss, stale, not_found, error).",
	}, []string{"kind", "outcome"})}
}

// Collectors returns the metrics to register.
func (m *CacheMetrics) Collectors() []prometheus.Collector { return []prometheus.Collector{m.requests} }

func (m *CacheMetrics) observe(kind, outcome string) { m.requests.WithLabelValues(kind, outcome).Inc() }

// remotes holds the upstream clients of the proxies this process served.
type remotes struct {
	h       *handler
	opts    RemoteOptions
	clients upstream.Clients
}

func newRemotes(h *handler, opts RemoteOptions) *remotes {
	if opts.Metrics == nil {
		opts.Metrics = upstream.NewMetrics()
	}
	if opts.CacheMetrics == nil {
		opts.CacheMetrics = NewCacheMetrics()
	}
	return &remotes{h: h, opts: opts}
}

// client returns the upstream client of the target's proxy, building it
// when the proxy's settings changed since (settings_changed_at is read
// with the target on every request: a change made through any instance,
// an invalidation included, applies to the next request here).
func (rs *remotes) client(ctx context.Context, t *mavenstore.Target) (*upstream.Client, error) {
	return rs.clients.Get(t.Remote.ID.String(), t.Remote.SettingsChangedAt, func() (*upstream.Client, error) {
		return rs.build(ctx, t)
	})
}

// build makes the upstream client of a proxy. Nothing is sent upstream.
func (rs *remotes) build(ctx context.Context, t *mavenstore.Target) (*upstream.Client, error) {
	cfg := rs.opts.Upstream
	cfg.Name = t.NamespaceSlug + "/" + t.RepositoryName
	cfg.URL = t.Remote.URL
	cfg.Metrics = rs.opts.Metrics
	cfg.Logger = rs.h.log
	cfg.Credentials = nil
	cfg.NegativeTTL = t.Remote.NegativeTTL
	if cfg.NegativeTTL <= 0 {
		cfg.NegativeTTL = -1 // 0 means "default" to the upstream layer
	}
	if t.Remote.HasCredentials {
		creds, err := rs.h.maven.RemoteCredentials(ctx, t.NamespaceID, t.Remote.ID)
		if err != nil {
			return nil, err
		}
		if creds != nil {
			cfg.Credentials = &upstream.Credentials{Username: creds.Username, Password: creds.Password}
		}
	}
	nsID, remoteID := t.NamespaceID, t.Remote.ID
	cfg.HealthRecorder = upstream.HealthFunc(func(ctx context.Context, h upstream.Health) error {
		return rs.h.maven.RecordRemoteHealth(ctx, nsID, remoteID, h.Status, h.CheckedAt, h.LastError)
	})
	return upstream.New(cfg)
}

// staleWarning is the Warning header of a file served from the cache
// because the upstream could not be asked (RFC 9111 section 5.5, code
// 110).
const staleWarning = `110 artifact-registry "Response is Stale: the upstream repository could not be reached, serving the cached copy"`

// remoteRefused answers a deploy through a proxy, once authorized.
func remoteRefused(t *mavenstore.Target) error {
	return &httpError{status: http.StatusMethodNotAllowed, header: map[string]string{"Allow": "GET, HEAD"},
		msg: "repository " + t.NamespaceSlug + "/" + t.RepositoryName +
			" is a remote (proxy) repository: it only serves what its upstream has; deploy to a hosted repository"}
}

// upstreamPath is the file's path under the upstream's base URL, each
// segment escaped.
func upstreamPath(ref mavenstore.FileRef) string {
	segs := strings.Split(ref.GroupID, ".")
	segs = append(segs, ref.ArtifactID)
	if ref.Version != "" {
		segs = append(segs, ref.Version)
	}
	segs = append(segs, ref.FileName)
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// requestKind labels a request in the metrics.
func requestKind(q *request) string {
	switch {
	case q.checksum != "":
		return "checksum"
	case q.isMetadata():
		return "metadata"
	case mavenlayout.IsSnapshotVersion(q.ref.Version):
		return "snapshot"
	}
	return "release"
}

// remoteGet serves GET and HEAD of a proxy.
func (h *handler) remoteGet(w http.ResponseWriter, r *http.Request, t *mavenstore.Target, q *request) error {
	a, err := h.remoteLookup(r.Context(), t, q, q.checksum != "" || r.Method == http.MethodHead)
	if err != nil {
		return err
	}
	if a.file == nil {
		defer a.fr.Close()
		return h.stream(w, r, t, q, a.fr)
	}
	return h.serveCached(w, r, t, q, a.file, a.stale, a.miss)
}

// remoteAnswer is what a proxy has for a request: a cached file (stale
// when the upstream could not be asked, miss when it was fetched now),
// or, for a large file fetched now, the reader to stream it from.
type remoteAnswer struct {
	file        *mavenstore.RemoteFile
	stale, miss bool
	fr          *upstream.FillReader
}

// remoteLookup finds what a proxy has for a request: the cached copy
// while it is valid, else the upstream's (conditionally when a copy is
// cached), else the stale copy when the upstream cannot be asked. With
// wait, a file fetched now is always waited for and cached (never
// streamed). Errors: 404 when the upstream has no such file, the
// upstream's failure as 502/503/504 when nothing is cached.
func (h *handler) remoteLookup(ctx context.Context, t *mavenstore.Target, q *request, wait bool) (*remoteAnswer, error) {
	kind := requestKind(q)
	observe := func(outcome string) { h.remote.opts.CacheMetrics.observe(kind, outcome) }
	ref := q.ref
	mutable := ref.FileName == mavenlayout.MetadataFile || mavenlayout.IsSnapshotVersion(ref.Version)
	cached, err := h.maven.RemoteFile(ctx, t, ref)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if cached != nil && (!mutable || now.Sub(cached.CheckedAt) < t.Remote.MetadataValidity) {
		observe("hit")
		return &remoteAnswer{file: cached}, nil
	}
	c, err := h.remote.client(ctx, t)
	if err != nil {
		if cached != nil && (store.IsUnavailable(err) || store.HasCode(err, container.CodeNoKeyring)) {
			observe("stale")
			return &remoteAnswer{file: cached, stale: true}, nil
		}
		return nil, err
	}
	path := upstreamPath(ref)
	fr, res, err := h.fill(ctx, c, t, ref, path, cached, wait)
	var ue *upstream.Error
	switch {
	case err == nil:
	case errors.As(err, &ue) && ue.Status == http.StatusNotModified && cached != nil:
		if cerr := h.maven.ConfirmRemoteFile(context.WithoutCancel(ctx), t, cached.ID, mavenstore.RemoteFileMeta{}); cerr != nil {
			h.log.Warn("maven: confirming a cached file failed", "file", ref.String(), "err", cerr)
		}
		observe("revalidated")
		return &remoteAnswer{file: cached}, nil
	case errors.As(err, &ue) && ue.Temporary() && cached != nil:
		observe("stale")
		return &remoteAnswer{file: cached, stale: true}, nil
	case errors.As(err, &ue) && ue.Kind == upstream.KindNotFound:
		observe("not_found")
		return nil, newErr(http.StatusNotFound, "not found in the upstream repository: %s", ref)
	default:
		observe("error")
		return nil, h.upstreamFailure(err, ref)
	}
	observe("miss")
	if res != nil {
		// Waited for the verdict: the file is cached.
		fr.Close()
		return &remoteAnswer{file: res, miss: true}, nil
	}
	return &remoteAnswer{miss: true, fr: fr}, nil
}

// fill asks the upstream for a file (conditionally when a stale copy is
// cached) through the single-flight fill, which caches it. The upstream's
// .sha1, when it has one, is fetched first and becomes the fill's
// expected digest. With wait, or for a file of at most waitLimit bytes,
// fill waits for the fill's verdict and returns the cached file; otherwise
// it returns the reader to stream from.
func (h *handler) fill(ctx context.Context, c *upstream.Client, t *mavenstore.Target, ref mavenstore.FileRef, path string,
	cached *mavenstore.RemoteFile, wait bool) (*upstream.FillReader, *mavenstore.RemoteFile, error) {
	expect := upstream.Expect{Size: -1}
	sum, err := upstreamSHA1(ctx, c, path)
	if err != nil {
		return nil, nil, err
	}
	if sum != nil {
		expect.Digests = []upstream.Digest{{Algorithm: upstream.SHA1, Sum: sum}}
	}
	key := "file:" + path
	hdr := http.Header{}
	if cached != nil {
		if cached.ETag != "" {
			hdr.Set("If-None-Match", cached.ETag)
			key += "|" + cached.ETag
		}
		if cached.LastModified != nil {
			hdr.Set("If-Modified-Since", cached.LastModified.UTC().Format(http.TimeFormat))
			key += "|" + cached.LastModified.UTC().Format(time.RFC3339)
		}
	}
	fr, err := c.Fill(ctx, upstream.FillRequest{
		Key:     key,
		Request: upstream.Request{Path: path, Header: hdr, NegativeKey: path},
		Expect:  expect,
		Stage: func(fctx context.Context, body io.Reader) (upstream.Staged, error) {
			st, err := h.maven.StageRemoteFile(fctx, t, body)
			if err != nil {
				return nil, err
			}
			return &remoteStage{h: h, c: c, t: t, ref: ref, path: path, st: st}, nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	if !wait && (fr.Size() < 0 || fr.Size() > waitLimit) {
		return fr, nil, nil
	}
	if _, err := fr.Wait(ctx); err != nil {
		fr.Close()
		return nil, nil, err
	}
	f, err := h.maven.RemoteFile(ctx, t, ref)
	if err == nil && f == nil {
		err = newErr(http.StatusServiceUnavailable, "the file was cached and removed at once, retry")
	}
	if err != nil {
		fr.Close()
		return nil, nil, err
	}
	return fr, f, nil
}

// upstreamSHA1 fetches the upstream's .sha1 of a file: nil when it has
// none (404) or sends something that is not a SHA-1 (some repositories
// hold broken sidecars; the file is then cached with our checksums only).
func upstreamSHA1(ctx context.Context, c *upstream.Client, path string) ([]byte, error) {
	resp, err := c.Do(ctx, &upstream.Request{Path: path + ".sha1", NegativeKey: path + ".sha1"})
	if upstream.IsKind(err, upstream.KindNotFound) || upstream.IsKind(err, upstream.KindRejected) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamChecksum+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxUpstreamChecksum {
		return nil, nil
	}
	s, perr := mavenstore.ParseChecksumBody(mavenlayout.SHA1, body)
	if perr != nil {
		return nil, nil
	}
	return hex.DecodeString(s)
}

// remoteStage is the cache side of a fill: the bytes staged with their
// checksums, committed as the cached file once the fill verified them.
type remoteStage struct {
	h    *handler
	c    *upstream.Client
	t    *mavenstore.Target
	ref  mavenstore.FileRef
	path string
	st   *mavenstore.RemoteStaged
}

func (s *remoteStage) Commit(ctx context.Context, res *upstream.FillResult) error {
	meta := mavenstore.RemoteFileMeta{ETag: res.Header.Get("ETag")}
	if lm, err := http.ParseTime(res.Header.Get("Last-Modified")); err == nil {
		meta.LastModified = &lm
	}
	if _, err := s.h.maven.CommitRemoteFile(ctx, s.t, s.ref, s.st, meta); err != nil {
		return err
	}
	// The path exists now: a remembered 404 of it (or of its checksum) is
	// wrong.
	s.c.ForgetNotFound(s.path)
	s.c.ForgetNotFound(s.path + ".sha1")
	return nil
}

func (s *remoteStage) Discard(ctx context.Context) { s.st.Discard(ctx) }

// serveCached answers from a cached file: the file, or a checksum
// computed from its bytes.
func (h *handler) serveCached(w http.ResponseWriter, r *http.Request, t *mavenstore.Target, q *request, f *mavenstore.RemoteFile, stale, miss bool) error {
	ctx := r.Context()
	hdr := w.Header()
	if stale {
		hdr.Set("Warning", staleWarning)
	}
	hdr.Set("Cache-Control", cacheControl(q))
	if q.checksum != "" {
		sum, ok := f.Checksums.Hex(q.checksum)
		if !ok {
			return newErr(http.StatusNotFound, "no %s checksum for %s", q.checksum, q.ref)
		}
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		httpsafe.Attachment(hdr, q.name)
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(sum))
		h.count(h.maven.RemoteAccessCount(t, mavenstore.RemoteAccess{Miss: miss}))
		return nil
	}
	hdr.Set("Content-Type", contentType(q.ref.FileName))
	httpsafe.Attachment(hdr, q.name)
	sha1hex, _ := f.Checksums.Hex(mavenlayout.SHA1)
	hdr.Set("ETag", `"`+sha1hex+`"`)
	hdr.Set("X-Checksum-Sha1", sha1hex)
	if md5hex, ok := f.Checksums.Hex(mavenlayout.MD5); ok {
		hdr.Set("X-Checksum-Md5", md5hex)
	}
	sha256hex, _ := f.Checksums.Hex(mavenlayout.SHA256)
	hdr.Set("X-Checksum-Sha256", sha256hex)
	if h.redirect(w, r, q, &f.Blob) {
		if blobredirect.Whole(r) {
			h.count(h.maven.RemoteAccessCount(t, mavenstore.RemoteAccess{File: f, Miss: miss}))
		}
		return nil
	}
	br := &blobReader{ctx: ctx, st: h.st, blob: &f.Blob}
	defer br.Close()
	if r.Method == http.MethodGet {
		if err := br.open(0); err != nil {
			return err
		}
	}
	sw := &statusWriter{ResponseWriter: w}
	http.ServeContent(sw, r, "", time.Time{}, br)
	if r.Method == http.MethodGet && sw.status == http.StatusOK {
		h.count(h.maven.RemoteAccessCount(t, mavenstore.RemoteAccess{File: f, Miss: miss}))
	}
	return nil
}

// stream sends a large file while the fill brings it. The checksum
// headers are unknown yet; a body that turns out wrong (or an upstream
// that breaks off) aborts the connection so that the client never takes
// a cut or wrong file for a whole one.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, t *mavenstore.Target, q *request, fr *upstream.FillReader) error {
	hdr := w.Header()
	hdr.Set("Content-Type", contentType(q.ref.FileName))
	hdr.Set("Cache-Control", cacheControl(q))
	httpsafe.Attachment(hdr, q.name)
	if fr.Size() >= 0 {
		hdr.Set("Content-Length", strconv.FormatInt(fr.Size(), 10))
	}
	w.WriteHeader(http.StatusOK)
	// The last byte is held back until the fill's verdict (io.EOF comes
	// only once length and digests matched): with a Content-Length, a
	// client that received every byte would otherwise take a wrong file
	// for a whole one before the abort reaches it.
	var err error
	if n := fr.Size(); n > 0 {
		if _, err = io.CopyN(w, fr, n-1); err == nil {
			var last []byte
			if last, err = io.ReadAll(fr); err == nil {
				_, err = w.Write(last)
			}
		}
	} else {
		_, err = io.Copy(w, fr)
	}
	if err != nil {
		h.log.Warn("maven: streaming an upstream file failed", "path", r.URL.Path, "err", err)
		panic(http.ErrAbortHandler)
	}
	h.count(h.maven.RemoteAccessCount(t, mavenstore.RemoteAccess{Miss: true}))
	return nil
}

// count buffers what an answer counts.
func (h *handler) count(c mavenstore.Count) {
	if !c.Empty() {
		h.counts.Add(c)
	}
}

// upstreamFailure maps an upstream failure with nothing cached to serve:
// 502, 503 (with Retry-After when known) or 504, never 500, with a
// message that names no URL and no credential.
func (h *handler) upstreamFailure(err error, ref mavenstore.FileRef) error {
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		return err
	}
	msg := ue.ClientMessage()
	if ue.Kind == upstream.KindInvalid {
		msg = "the upstream's file is not what it claims to be, it was not cached: " + msg
	}
	e := &httpError{status: ue.ClientStatus(), msg: msg + " (" + ref.String() + ")", err: err}
	if e.status == http.StatusServiceUnavailable {
		after := 1
		if !ue.RetryAt.IsZero() {
			after = max(1, int(time.Until(ue.RetryAt).Seconds()+0.999))
		}
		e.header = map[string]string{"Retry-After": strconv.Itoa(after)}
	}
	return e
}
