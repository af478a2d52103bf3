// Package oci serves the OCI Distribution Specification v1.1 for hosted
// container repositories (repositories.format DOCKER or OCI, kind HOSTED):
//
//	/v2/<namespace-slug>/<repository>/<image...>/{blobs,manifests,tags,referrers}/...
//
// Handlers parse the wire format, call store operations (store/container*.go
// over the blob layer) and write the wire response; no SQL or object storage
// here. The rules that are not obvious from the spec:
//
//   - Access control is package auth's (see auth.go): the admin token,
//     namespace access tokens (HTTP Basic password with any user name, or
//     Bearer) and the bearer tokens of the token endpoint /v2/token. A 401
//     carries the token flow's Bearer challenge (GET /v2/ too, so clients
//     learn to authenticate); 403 DENIED for insufficient credentials and
//     for blocked, disabled or (for changes) suspended namespaces; unknown
//     names answer like private ones to callers who may not know.
//   - Digests are sha256 only (docs/schema.md "Digests, hashes and enums"):
//     any other algorithm, in a URL or in
//     a manifest, is UNSUPPORTED (400) before the database is asked.
//   - Images are created by their first push. Manifests must reference blobs
//     and child manifests of the same image (MANIFEST_BLOB_UNKNOWN,
//     MANIFEST_UNKNOWN), except non-distributable layers; at most 4 MiB,
//     200 references, 25,000 manifests per image.
//   - DELETE of a manifest (by digest) or blob soft-deletes the row (the
//     trash can restore it; its blob attachment stays until the row is
//     purged); tags pointing at a deleted manifest are deleted; a manifest
//     listed by a live index cannot be deleted (409 DENIED). DELETE by tag
//     deletes the tag only.
//   - Referrers: the push records each manifest's subject and artifact
//     type, and the referrers of a digest are an index lookup in the image
//     (container_manifests.subject_digest); their annotations come from
//     their payloads, parsed once and cached by digest. Manifests stored
//     before subjects were recorded are read until the backfill records
//     them.
//   - Lock timeouts and deadlocks are 503 with Retry-After (code
//     TOO_MANY_REQUESTS); no client mistake is a 500.
package oci

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/countbuf"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// Options configure the OCI surface.
type Options struct {
	// Auth authenticates and issues bearer tokens: the process's one
	// Authenticator (its Run flushes last_used_at).
	Auth   *auth.Authenticator
	Logger *slog.Logger
	// PublicURL, when set, makes Location headers absolute
	// (PublicURL + "/v2/..."); empty keeps them relative, which every
	// client resolves against the request URL.
	PublicURL string
	// Legacy, when set, turns on proxy mode in front of a legacy
	// registry:2 (legacy_proxy.go).
	Legacy *LegacyOptions
	// Remote configures the pull-through caches (remote.go).
	Remote RemoteOptions
}

type handler struct {
	st        *store.Store
	container *container.Store
	log       *slog.Logger
	authn     *auth.Authenticator
	// tokenURL is the realm of the challenges: PublicURL + /v2/token, or
	// "" to derive it from each request's Host.
	tokenURL  string
	publicURL string
	referrers *referrerCache
	// payloads caches manifest payloads by digest, filled by pushes and
	// by reads: served only after the database said the manifest is live
	// in the image (so its attachment keeps the bytes), it saves a lookup
	// of the payload's blob row and a storage read.
	payloads *lru[digest, []byte]
	pulls    *countbuf.Buffer[container.Pull]
	legacy   *legacyProxy
	remote   *remotes
}

// payloadCacheBytes bounds the manifest payload cache; payloads over
// payloadCacheMax are not cached.
const (
	payloadCacheBytes = 64 << 20
	payloadCacheMax   = 1 << 20
)

// Mount registers the /v2/ routes on r. The function it returns closes
// the pull-through caches' upstream clients at shutdown, waiting for the
// fills in flight until its context ends, then writes the pulls still
// buffered.
func Mount(r *mux.Router, st *store.Store, opts Options) func(context.Context) {
	h := &handler{st: st, container: container.New(st), log: opts.Logger, publicURL: strings.TrimRight(opts.PublicURL, "/"), referrers: newReferrerCache(referrerCacheEntries),
		payloads: newLRU[digest, []byte](payloadCacheBytes, func(b []byte) int64 { return int64(len(b)) })}
	if h.log == nil {
		h.log = slog.Default()
	}
	// Pulls are statistics: a pull never waits for their write.
	h.pulls = countbuf.New("oci pull counters", h.log, h.container.RecordPulls)
	if opts.Remote.Keyring != nil {
		h.container.SetKeyring(opts.Remote.Keyring)
	}
	h.remote = newRemotes(h, opts.Remote)
	if opts.Auth == nil {
		panic("oci.Mount: Options.Auth is required")
	}
	h.authn = opts.Auth
	if h.publicURL != "" {
		h.tokenURL = h.publicURL + "/v2/token"
	}
	if opts.Legacy != nil {
		p, err := newLegacyProxy(*opts.Legacy, h.log)
		if err != nil {
			panic(err) // the configuration was validated before Mount
		}
		h.legacy = p
		r = r.NewRoute().Subrouter()
		r.Use(h.legacyFront)
	}
	h.routes(r)
	return func(ctx context.Context) {
		h.remote.clients.Close(ctx)
		h.pulls.Flush()
	}
}

// Handler returns the OCI surface as a standalone http.Handler (tests).
func Handler(st *store.Store, opts Options) http.Handler {
	r := mux.NewRouter()
	Mount(r, st, opts)
	return r
}

func (h *handler) routes(r *mux.Router) {
	r.Handle("/v2/", h.wrap(h.base)).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v2", h.wrap(h.base)).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/v2/_catalog", h.wrap(h.catalog)).Methods(http.MethodGet)
	// The token endpoint of the challenges (GET with Basic credentials or
	// none, POST for the OAuth2 password grant).
	r.Handle("/v2/token", httpsafe.Handler(h.authn.TokenHandler(auth.ContainerResolver(h.st)))).Methods(http.MethodGet, http.MethodHead, http.MethodPost)
	named(r, "/blobs/uploads/", "").Handler(h.wrap(h.startUpload)).Methods(http.MethodPost)
	named(r, "/blobs/uploads/", "{upload}").Handler(h.wrap(h.uploadStatus)).Methods(http.MethodGet)
	named(r, "/blobs/uploads/", "{upload}").Handler(h.wrap(h.patchUpload)).Methods(http.MethodPatch)
	named(r, "/blobs/uploads/", "{upload}").Handler(h.wrap(h.putUpload)).Methods(http.MethodPut)
	named(r, "/blobs/uploads/", "{upload}").Handler(h.wrap(h.cancelUpload)).Methods(http.MethodDelete)
	named(r, "/blobs/", "{digest}").Handler(h.wrap(h.getBlob)).Methods(http.MethodGet, http.MethodHead)
	named(r, "/blobs/", "{digest}").Handler(h.wrap(h.deleteBlob)).Methods(http.MethodDelete)
	named(r, "/manifests/", "{reference}").Handler(h.wrap(h.getManifest)).Methods(http.MethodGet, http.MethodHead)
	named(r, "/manifests/", "{reference}").Handler(h.wrap(h.putManifest)).Methods(http.MethodPut)
	named(r, "/manifests/", "{reference}").Handler(h.wrap(h.deleteManifest)).Methods(http.MethodDelete)
	named(r, "/tags/list", "").Handler(h.wrap(h.listTags)).Methods(http.MethodGet)
	named(r, "/referrers/", "{digest}").Handler(h.wrap(h.listReferrers)).Methods(http.MethodGet)
	// Everything else under /v2/ answers in the spec's error format: a
	// known endpoint with another method is UNSUPPORTED (405), any other
	// path NOT FOUND.
	r.PathPrefix("/v2/").Handler(h.wrap(h.fallback))
}

// named adds the route of a repository name's endpoint, /v2/{name}
// followed by endpoint and last. The router tries the routes in turn,
// each by its template's regexp, whose ".+" for the name backtracks: a
// manifest GET ran the regexps of the seven upload and blob routes
// before its own. Every path a template matches holds its endpoint, so
// looking for the endpoint first skips the regexps of routes that cannot
// match.
func named(r *mux.Router, endpoint, last string) *mux.Route {
	return r.NewRoute().MatcherFunc(func(req *http.Request, _ *mux.RouteMatch) bool {
		return strings.Contains(req.URL.Path, endpoint)
	}).Path("/v2/{name:.+}" + endpoint + last)
}

// handlerFunc is an OCI handler: it writes a success response itself and
// returns an error for everything else.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (h *handler) wrap(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		httpsafe.Protect(w.Header())
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				h.log.Error("oci: panic", "method", r.Method, "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
				writeAPIError(w, r, newErr(http.StatusInternalServerError, codeUnknown, "internal error"))
			}
		}()
		r, err := h.authenticate(r)
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			h.writeError(w, r, err)
		}
	})
}

var knownEndpoint = []string{"/blobs/uploads/", "/blobs/", "/manifests/", "/tags/list", "/referrers/"}

func (h *handler) fallback(w http.ResponseWriter, r *http.Request) error {
	p := r.URL.Path
	for _, k := range knownEndpoint {
		if strings.Contains(p, k) {
			return newErr(http.StatusMethodNotAllowed, codeUnsupported, "%s is not supported on %s", r.Method, p)
		}
	}
	if p == "/v2/" || p == "/v2/_catalog" {
		return newErr(http.StatusMethodNotAllowed, codeUnsupported, "%s is not supported on %s", r.Method, p)
	}
	return newErr(http.StatusNotFound, codeNameUnknown, "no such endpoint: %s", p)
}

// base is GET /v2/: 200 for any valid credential, a 401 challenge for
// anonymous callers, so clients learn they should authenticate. Anonymous
// clients still pull public repositories: they fetch an anonymous bearer
// token (or go on without credentials).
func (h *handler) base(w http.ResponseWriter, r *http.Request) error {
	if principal(r).IsAnonymous() {
		return h.denied(r, errLogin, "")
	}
	return writeJSON(w, r, http.StatusOK, "application/json", struct{}{})
}

// target resolves the {name} of the route and authorizes the action.
func (h *handler) target(r *http.Request, action auth.Action) (*container.Target, error) {
	return h.targetBy(r, action, func(ctx context.Context, nsID uuid.UUID, n imageName) (*container.Target, error) {
		return h.container.ResolveTargetIn(ctx, nsID, n.Namespace, n.Repository, n.Image)
	})
}

// targetManifest is target that also looks ref, a tag or a digest, up in
// a hosted target's image in the same round trip: the manifest is nil
// when ref names none there.
func (h *handler) targetManifest(r *http.Request, action auth.Action, ref reference) (*container.Target, *container.ManifestRow, error) {
	var m *container.ManifestRow
	t, err := h.targetBy(r, action, func(ctx context.Context, nsID uuid.UUID, n imageName) (t *container.Target, err error) {
		if ref.IsTag {
			t, m, err = h.container.ResolveTargetTagIn(ctx, nsID, n.Namespace, n.Repository, n.Image, ref.Tag)
		} else {
			t, m, err = h.container.ResolveTargetDigestIn(ctx, nsID, n.Namespace, n.Repository, n.Image, ref.Digest)
		}
		return t, err
	})
	if err != nil {
		return nil, nil, err
	}
	return t, m, nil
}

// targetBlob is target for reading a blob: in the same round trip it
// reads the blob row when the hosted target's image links the digest
// (nil when it does not).
func (h *handler) targetBlob(r *http.Request, sha [32]byte) (*container.Target, *store.Blob, error) {
	var b *store.Blob
	t, err := h.targetBy(r, auth.ActionRead, func(ctx context.Context, nsID uuid.UUID, n imageName) (t *container.Target, err error) {
		t, b, err = h.container.ResolveTargetBlobIn(ctx, nsID, n.Namespace, n.Repository, n.Image, sha)
		return t, err
	})
	if err != nil {
		return nil, nil, err
	}
	return t, b, nil
}

// targetBy resolves the request's name with resolve and authorizes action
// on it; what resolve read besides is the caller's to use once this
// returns without an error.
func (h *handler) targetBy(r *http.Request, action auth.Action, resolve func(ctx context.Context, nsID uuid.UUID, n imageName) (*container.Target, error)) (*container.Target, error) {
	n, aerr := parseName(mux.Vars(r)["name"])
	if aerr != nil {
		return nil, aerr
	}
	nsID, err := h.container.NamespaceID(r.Context(), n.Namespace)
	var t *container.Target
	if err == nil {
		t, err = resolve(r.Context(), nsID, n)
	}
	if store.HasCode(err, container.CodeNameUnknown) {
		return nil, h.unknownName(r, n, action, err)
	}
	if err != nil {
		return nil, err
	}
	if err := h.authorize(r, action, t); err != nil {
		return nil, err
	}
	if t.Virtual && action != auth.ActionRead {
		return h.virtualWriteTarget(r.Context(), t, action)
	}
	if t.Remote != nil && action != auth.ActionRead {
		// Refused once authorized: who may not write the remote is told
		// so as for any repository.
		return nil, remoteRefused(t)
	}
	return t, nil
}

// resolve resolves a name in one round trip.
func (h *handler) resolve(ctx context.Context, n imageName) (*container.Target, error) {
	nsID, err := h.container.NamespaceID(ctx, n.Namespace)
	if err != nil {
		return nil, err
	}
	return h.container.ResolveTargetIn(ctx, nsID, n.Namespace, n.Repository, n.Image)
}

// location makes a Location header value for a /v2/ path.
func (h *handler) location(path string) string {
	return h.publicURL + path
}

func (h *handler) v2Path(t *container.Target, rest string) string {
	return "/v2/" + t.Name() + rest
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, contentType string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}

// writeError maps err to the spec's error response. Client mistakes never
// become 500: store errors are typed and mapped here; anything unexpected is
// logged and answered 500 UNKNOWN.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = h.fromStoreError(r, err)
	}
	writeAPIError(w, r, ae)
}

// pageSize reads the n query parameter: absent → def, 0 → 0, bounded by max.
func pageSize(q url.Values, def, max int) (int, *apiError) {
	s := q.Get("n")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, newErr(http.StatusBadRequest, codeUnsupported, "invalid page size n=%q", s)
	}
	return min(n, max), nil
}

// nextLink builds the RFC 5988 Link header of a paginated listing.
func nextLink(path string, n int, last string, extra url.Values) string {
	q := url.Values{}
	for k, v := range extra {
		q[k] = v
	}
	q.Set("n", strconv.Itoa(n))
	q.Set("last", last)
	return "<" + path + "?" + q.Encode() + `>; rel="next"`
}
