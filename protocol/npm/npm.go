// Package npm serves hosted npm repositories (repositories.format NPM, kind
// HOSTED) as npm registries at
//
//	/npm/<namespace-slug>/<repository>/
//
// for the npm CLI (npm 11; cli_test.go drives the real client):
// packuments (full and abbreviated, from precomputed npm_metadata_files),
// tarballs, publish, dist-tags, deprecate, unpublish, search, whoami, ping
// and the legacy login. Every path is relative to the registry URL,
// /-/ endpoints included. Handlers parse the wire format, call one store
// operation and write the wire response; errors are npm's {"error": "..."}.
// Remote repositories (pull-through caches, remote.go) and virtual
// repositories (merged views over other npm repositories, virtual.go) are
// served at the same URLs.
package npm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"golang.org/x/sync/singleflight"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/countbuf"
	"github.com/artifact-registry/artifact-registry/internal/redact"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Defaults of Options.
const (
	DefaultMaxTarballSize = 256 << 20
	// DefaultMaxPublishSize bounds a publish body: base64 makes a tarball
	// 4/3 larger, so it carries tarballs up to about 190 MiB.
	DefaultMaxPublishSize = 256 << 20
	// DefaultMaxUnpackedSize bounds what the inspection of a tarball
	// decompresses.
	DefaultMaxUnpackedSize = 1 << 30
	DefaultRebuildDelay    = time.Second
	// PathPrefix is where the registries live: PathPrefix + "<namespace>/<repository>/".
	PathPrefix = "/npm/"
)

// JobInserter enqueues River jobs inside a transaction; *river.Client[pgx.Tx]
// implements it.
type JobInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Options configure the npm surface (Mount) and its rebuild worker
// (RegisterWorkers); pass the same values to both.
type Options struct {
	// Auth authenticates requests and manages tokens (npm login, logout,
	// npm token): the process's one Authenticator. Credentials are npm's
	// _authToken (Authorization: Bearer) or the password of Basic auth.
	Auth *auth.Authenticator
	// PublicURL is the external base URL ("https://registry.example"); the
	// tarball URLs of packuments are built from it. Empty: taken from the
	// request (Host, X-Forwarded-Proto), and the background worker does not
	// rebuild (reads still do).
	PublicURL string
	Logger    *slog.Logger
	// PackumentTTL is npm.packument_cache_ttl (default 7 days).
	PackumentTTL time.Duration
	// MaxTarballSize caps one tarball (default 256 MiB).
	MaxTarballSize int64
	// MaxPublishSize caps a publish body, tarball in base64 included
	// (default 256 MiB; --npm-max-publish-bytes): 413 past it.
	MaxPublishSize int64
	// MaxUnpackedSize caps the uncompressed bytes of a tarball, tar
	// headers included (default 1 GiB): 400 past it.
	MaxUnpackedSize int64
	// Jobs enqueues the packument rebuild after each write (River InsertTx
	// in the write transaction). Nil: no background rebuild; the next read
	// rebuilds.
	Jobs JobInserter
	// RebuildDelay schedules the background rebuild this long after the
	// write, so bursts of publishes are rebuilt once (default 1 s; negative:
	// at once).
	RebuildDelay time.Duration
	// Remote configures the pull-through caches (remote.go).
	Remote RemoteOptions
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PackumentTTL <= 0 {
		o.PackumentTTL = npmstore.DefaultPackumentTTL
	}
	if o.MaxTarballSize <= 0 {
		o.MaxTarballSize = DefaultMaxTarballSize
	}
	if o.MaxPublishSize <= 0 {
		o.MaxPublishSize = DefaultMaxPublishSize
	}
	if o.MaxUnpackedSize <= 0 {
		o.MaxUnpackedSize = DefaultMaxUnpackedSize
	}
	if o.RebuildDelay == 0 {
		o.RebuildDelay = DefaultRebuildDelay
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	return o
}

type handler struct {
	st        *store.Store
	npm       *npmstore.Store
	opts      Options
	log       *slog.Logger
	authn     *auth.Authenticator
	rebuilds  singleflight.Group
	downloads *countbuf.Buffer[npmstore.Download]
	remote    *remotes
	// virtualDocs caches merged virtual packuments by their ETag.
	virtualDocs *lru.Cache[string, []byte]
}

func newHandler(st *store.Store, opts Options) *handler {
	opts = opts.withDefaults()
	if opts.Auth == nil {
		panic("npm: Options.Auth is required")
	}
	h := &handler{st: st, npm: npmstore.New(st), opts: opts, log: opts.Logger, authn: opts.Auth}
	h.downloads = countbuf.New("npm download counters", h.log, h.npm.RecordDownloads)
	h.remote = newRemotes(h, opts.Remote)
	h.virtualDocs, _ = lru.New[string, []byte](256)
	return h
}

// Mount registers the npm registries under /npm/ on r. The function it
// returns closes the remotes' upstream clients at shutdown, waiting for the
// fills in flight until its context ends, then writes the counts still
// buffered.
func Mount(r *mux.Router, st *store.Store, opts Options) func(context.Context) {
	h := newHandler(st, opts)
	r.PathPrefix(PathPrefix).Handler(h)
	return func(ctx context.Context) {
		h.remote.clients.Close(ctx)
		h.downloads.Flush()
		h.remote.requests.Flush()
	}
}

// Handler returns the npm surface as a standalone http.Handler (tests).
func Handler(st *store.Store, opts Options) http.Handler {
	r := mux.NewRouter()
	Mount(r, st, opts)
	return r
}

// --- errors

// apiError is an npm-style error: status and {"error": message}.
type apiError struct {
	status  int
	message string
	header  map[string]string
}

func (e *apiError) Error() string { return e.message }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, message: fmt.Sprintf(format, args...)}
}

// storeError maps store errors to npm responses.
func storeError(err error) error {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case store.HasCode(err, npmstore.CodeRepositoryUnknown):
		return errorf(http.StatusNotFound, "no such registry: %s", trimStore(err))
	case store.HasCode(err, npmstore.CodePackageUnknown):
		return errorf(http.StatusNotFound, "no such package available")
	case store.HasCode(err, npmstore.CodeVersionUnknown), store.HasCode(err, npmstore.CodeFileUnknown), store.HasCode(err, npmstore.CodeTagUnknown):
		return errorf(http.StatusNotFound, "%s", trimStore(err))
	case store.HasCode(err, npmstore.CodeVersionExists):
		return errorf(http.StatusConflict, "this package is already present: cannot publish over the previously published version (%s)", trimStore(err))
	case store.HasCode(err, npmstore.CodeVersionUnpublished):
		return errorf(http.StatusConflict, "%s; version numbers are never reused, publish a new version", trimStore(err))
	case store.HasCode(err, npmstore.CodeRevisionConflict):
		return errorf(http.StatusConflict, "%s", trimStore(err))
	case store.HasCode(err, npmstore.CodeLimit):
		return errorf(http.StatusUnprocessableEntity, "%s", trimStore(err))
	case store.HasCode(err, npmstore.CodeInvalid):
		return errorf(http.StatusBadRequest, "%s", trimStore(err))
	case store.HasCode(err, store.CodeBlobTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, "tarball is too large")
	case store.HasCode(err, store.CodeTooManyUploads):
		return errorf(http.StatusTooManyRequests, "%s", trimStore(err))
	case store.IsUnavailable(err):
		e := errorf(http.StatusServiceUnavailable, "%s", store.UnavailableMessage(err))
		e.header = map[string]string{"Retry-After": strconv.Itoa(int(store.UnavailableRetryAfter / time.Second))}
		return e
	case store.HasCode(err, store.CodeRetryable):
		e := errorf(http.StatusServiceUnavailable, "the registry is busy, retry")
		e.header = map[string]string{"Retry-After": strconv.Itoa(int(store.RetryAfter / time.Second))}
		return e
	}
	return err
}

// trimStore drops the "store: ..." prefixes of a typed store error,
// keeping its detail ("store: npm version unknown: a@1.0.0" -> "npm version
// unknown: a@1.0.0").
func trimStore(err error) string {
	s := err.Error()
	for {
		t, ok := strings.CutPrefix(s, "store: ")
		if !ok {
			return s
		}
		s = t
	}
}

func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case !errors.As(storeError(err), &ae):
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return // the client went away
		}
		h.log.Error("npm request failed", "method", r.Method, "path", redact.URL(r.URL), "err", redact.Text(err.Error()))
		ae = errorf(http.StatusInternalServerError, "internal error")
	case ae.status == http.StatusServiceUnavailable:
		// An operator who sees 503s needs the cause: which service is
		// out, or which lock or deadlock made the write give up.
		h.log.Warn("npm request unavailable", "method", r.Method, "path", redact.URL(r.URL), "err", redact.Text(err.Error()))
	}
	for k, v := range ae.header {
		w.Header().Set(k, v)
	}
	w.Header().Del("Content-Disposition") // an error is not the tarball
	writeJSON(w, ae.status, map[string]string{"error": ae.message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// --- routing

// request is one parsed registry request.
type request struct {
	w http.ResponseWriter
	r *http.Request
	// who is the authenticated caller (see principal).
	who *identity
	// namespace and repository of the registry URL, and the path after it
	// split into unescaped segments.
	namespace, repository string
	rest                  []string
	repo                  *npmstore.Repository // resolved on demand
}

// ServeHTTP dispatches /npm/<namespace>/<repository>/<rest>. The escaped
// path is split before unescaping, so "@scope%2fname" stays one segment
// while "@scope/name" is two.
//
// Every answer is protected by package httpsafe: packuments hold
// user-written text (a README, a description) and stay viewable as JSON,
// but are never sniffed nor run scripts; tarballs are also attachments.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	httpsafe.Protect(w.Header())
	raw := strings.TrimPrefix(r.URL.EscapedPath(), PathPrefix)
	parts := strings.Split(raw, "/")
	segs := make([]string, 0, len(parts))
	for _, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			h.writeError(w, r, errorf(http.StatusBadRequest, "malformed URL path"))
			return
		}
		segs = append(segs, u)
	}
	if len(segs) < 2 || segs[0] == "" || segs[1] == "" {
		h.writeError(w, r, errorf(http.StatusNotFound, "no such registry: the npm registry URL is %s<namespace>/<repository>/", PathPrefix))
		return
	}
	req := &request{w: w, r: r, namespace: segs[0], repository: segs[1], rest: segs[2:]}
	if len(req.rest) > 0 && req.rest[len(req.rest)-1] == "" {
		req.rest = req.rest[:len(req.rest)-1] // trailing slash
	}
	if err := h.route(req); err != nil {
		h.writeError(w, r, err)
	}
}

func methodNotAllowed(r *http.Request) *apiError {
	return errorf(http.StatusMethodNotAllowed, "%s is not supported on %s", r.Method, r.URL.Path)
}

func (h *handler) route(req *request) error {
	// A remote serves its own package paths; its resolution is kept for
	// the authorization that follows. A failed resolution goes the hosted
	// way, which answers it (masked for callers who may not know).
	if repo, err := h.resolve(req); err == nil && repo.Remote != nil {
		if handled, err := h.routeRemote(req); handled {
			return err
		}
	} else if err == nil && repo.Virtual {
		if handled, err := h.routeVirtual(req); handled {
			return err
		}
	}
	rest, m := req.rest, req.r.Method
	if len(rest) == 0 {
		if m != http.MethodGet && m != http.MethodHead {
			return methodNotAllowed(req.r)
		}
		if _, err := h.readRepo(req); err != nil {
			return err
		}
		writeJSON(req.w, http.StatusOK, map[string]string{"db_name": "registry"})
		return nil
	}
	if rest[0] == "-" {
		return h.routeSpecial(req, rest[1:])
	}
	// Package paths: "@scope%2fname" (one segment), "@scope/name" (two) or "name".
	name, tail := rest[0], rest[1:]
	if strings.HasPrefix(name, "@") && !strings.Contains(name, "/") && len(tail) > 0 {
		name, tail = name+"/"+tail[0], tail[1:]
	}
	switch {
	case len(tail) == 0:
		switch m {
		case http.MethodGet, http.MethodHead:
			return h.getPackument(req, name)
		case http.MethodPut:
			return h.putPackage(req, name, "", false)
		}
	case len(tail) == 2 && tail[0] == "-rev":
		switch m {
		case http.MethodPut:
			return h.putPackage(req, name, tail[1], true)
		case http.MethodDelete:
			return h.deletePackage(req, name, tail[1])
		}
	case len(tail) == 2 && tail[0] == "-":
		if m == http.MethodGet || m == http.MethodHead {
			return h.getTarball(req, name, tail[1])
		}
	case len(tail) == 4 && tail[0] == "-" && tail[2] == "-rev":
		if m == http.MethodDelete {
			return h.deleteTarball(req, name, tail[1], tail[3])
		}
	case len(tail) == 1:
		if m == http.MethodGet || m == http.MethodHead {
			return h.getVersion(req, name, tail[0])
		}
	default:
		return errorf(http.StatusNotFound, "no such endpoint: %s", req.r.URL.Path)
	}
	return methodNotAllowed(req.r)
}

func (h *handler) routeSpecial(req *request, rest []string) error {
	m := req.r.Method
	path := strings.Join(rest, "/")
	switch {
	case path == "ping":
		if m != http.MethodGet && m != http.MethodHead {
			return methodNotAllowed(req.r)
		}
		writeJSON(req.w, http.StatusOK, map[string]any{})
		return nil
	case path == "whoami":
		if m != http.MethodGet {
			return methodNotAllowed(req.r)
		}
		return h.whoami(req)
	case path == "v1/search":
		if m != http.MethodGet {
			return methodNotAllowed(req.r)
		}
		return h.search(req)
	case path == "v1/login":
		// npm 11 tries the web login first; any 4xx makes it fall back to
		// the username/password flow (PUT /-/user/org.couchdb.user:<name>).
		return errorf(http.StatusNotFound, "web login is not supported by this registry; npm falls back to username and password (the password is the registry token)")
	case path == "npm/v1/security/advisories/bulk" || path == "npm/v1/security/audits/quick":
		if m != http.MethodPost {
			return methodNotAllowed(req.r)
		}
		writeJSON(req.w, http.StatusOK, map[string]any{})
		return nil
	case path == "npm/v1/user":
		return h.profile(req)
	case path == "npm/v1/tokens":
		switch m {
		case http.MethodGet:
			return h.listTokens(req)
		case http.MethodPost:
			return h.createToken(req)
		}
		return methodNotAllowed(req.r)
	case len(rest) == 5 && path == "npm/v1/tokens/token/"+rest[4]:
		if m != http.MethodDelete {
			return methodNotAllowed(req.r)
		}
		return h.revokeToken(req, rest[4])
	case len(rest) >= 2 && rest[0] == "user" && strings.HasPrefix(rest[1], "org.couchdb.user:"):
		user := strings.TrimPrefix(rest[1], "org.couchdb.user:")
		switch {
		case len(rest) == 2 && m == http.MethodGet:
			return h.getUser(req, user)
		case (len(rest) == 2 || len(rest) == 4 && rest[2] == "-rev") && m == http.MethodPut:
			return h.login(req, user)
		}
		return methodNotAllowed(req.r)
	case len(rest) == 3 && rest[0] == "user" && rest[1] == "token":
		if m != http.MethodDelete {
			return methodNotAllowed(req.r)
		}
		return h.logout(req, rest[2])
	case len(rest) >= 3 && rest[0] == "package":
		return h.routeDistTags(req, rest[1:])
	}
	return errorf(http.StatusNotFound, "no such endpoint: %s", req.r.URL.Path)
}

// routeDistTags handles /-/package/<name>/dist-tags[/<tag>].
func (h *handler) routeDistTags(req *request, rest []string) error {
	name := rest[0]
	rest = rest[1:]
	if strings.HasPrefix(name, "@") && !strings.Contains(name, "/") && len(rest) > 0 && rest[0] != "dist-tags" {
		name, rest = name+"/"+rest[0], rest[1:]
	}
	if len(rest) == 0 || rest[0] != "dist-tags" {
		return errorf(http.StatusNotFound, "no such endpoint: %s", req.r.URL.Path)
	}
	switch {
	case len(rest) == 1 && (req.r.Method == http.MethodGet || req.r.Method == http.MethodHead):
		return h.getDistTags(req, name)
	case len(rest) == 2 && (req.r.Method == http.MethodPut || req.r.Method == http.MethodPost):
		return h.putDistTag(req, name, rest[1])
	case len(rest) == 2 && req.r.Method == http.MethodDelete:
		return h.deleteDistTag(req, name, rest[1])
	case len(rest) <= 2:
		return methodNotAllowed(req.r)
	}
	return errorf(http.StatusNotFound, "no such endpoint: %s", req.r.URL.Path)
}

// --- repository access

func (h *handler) resolve(req *request) (*npmstore.Repository, error) {
	if req.repo != nil {
		return req.repo, nil
	}
	repo, err := h.npm.ResolveRegistry(req.r.Context(), req.namespace, req.repository)
	if err != nil {
		return nil, err
	}
	req.repo = repo
	return repo, nil
}

// registryURL is the absolute registry URL of a repository, without the
// trailing slash: PublicURL (or the request's origin) + /npm/<ns>/<repo>.
func (h *handler) registryURL(r *http.Request, repo *npmstore.Repository) string {
	base := h.opts.PublicURL
	if base == "" && r != nil {
		base = requestOrigin(r)
	}
	return base + PathPrefix + url.PathEscape(repo.NamespaceSlug) + "/" + url.PathEscape(repo.RepositoryName)
}

// requestOrigin is scheme://host of the request, honouring the
// X-Forwarded-Proto and X-Forwarded-Host of a reverse proxy.
func requestOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
		scheme = p
	}
	host := r.Host
	if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
		host, _, _ = strings.Cut(fh, ",")
		host = strings.TrimSpace(host)
	}
	return scheme + "://" + host
}
