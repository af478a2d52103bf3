package oci

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// Proxy mode (docs/registry2-migration.md "Proxy mode"): Artifact
// Registry stands in front of an existing
// registry:2 and clients keep using the legacy repository paths. For each
// request under /v2/<name>/..., a LegacyRouter decides where the name lives:
//
//   - not a legacy name (the mapping rules do not map it): served here as is;
//   - a legacy repository not migrated yet: forwarded to the legacy registry
//     and the answer streamed back (bodies are never buffered; Range and
//     upload sessions pass through; Location headers naming the legacy
//     registry and its auth challenges are rewritten so clients keep talking
//     to us);
//   - in its read-only window (pass 2 running): reads forwarded, writes 503
//     with Retry-After in the spec's error format;
//   - migrated, or new and created here by the include/exclude lists: served
//     here under its mapped <namespace>/<repository>/<image>, with Location
//     and Link headers written back in terms of the legacy name.
//
// A request under a TARGET name (<namespace>/<repository>/<image>) fed by
// an inventoried repository that is not migrated yet is refused (reads 404
// NAME_UNKNOWN, writes 403 DENIED) with a message and detail naming the
// legacy path to use: until pass 2 commits, the local copy is half
// imported (pass 1 has manifests and blobs but no tag), and a write there
// would fork the repository from the legacy one pass 2 is about to copy.
// Once migrated, the target name is served here as usual.

// LegacyDecision is where a request under a name goes.
type LegacyDecision int

const (
	// LegacyNotMapped: not a legacy name; serve it here unchanged.
	LegacyNotMapped LegacyDecision = iota
	// LegacyForward: the legacy registry serves it.
	LegacyForward
	// LegacyReadOnly: the repository is in its read-only window.
	LegacyReadOnly
	// LegacyLocal: served here under Target.
	LegacyLocal
)

func (d LegacyDecision) String() string {
	switch d {
	case LegacyForward:
		return "forward"
	case LegacyReadOnly:
		return "read_only"
	case LegacyLocal:
		return "local"
	default:
		return "not_mapped"
	}
}

// LegacyRoute is a LegacyRouter's answer for one legacy path.
type LegacyRoute struct {
	Decision LegacyDecision
	// Target is the mapped "<namespace>/<repository>/<image>" (empty when
	// not mapped).
	Target string
}

// LegacyRouter decides where a legacy path lives (legacy/proxy implements
// it over the migration inventory and the mapping rules).
type LegacyRouter interface {
	// Route decides; write is true for an authenticated write, which may
	// create the target repository of a new name placed here.
	Route(ctx context.Context, path string, write bool) (LegacyRoute, error)
	// GuardWrite decides again and calls fn with the answer while the
	// repository cannot enter its read-only window, so a tag change
	// forwarded to the legacy registry is never missed by pass 2.
	GuardWrite(ctx context.Context, path string, fn func(LegacyRoute) error) error
	// HeldTarget reports whether name is the target of an inventoried
	// repository not migrated yet, and that repository's legacy path.
	HeldTarget(ctx context.Context, name string) (legacyPath string, held bool, err error)
}

// LegacyOptions turn proxy mode on (Options.Legacy).
type LegacyOptions struct {
	URL      string // legacy registry base URL
	Username string // HTTP Basic credentials for the legacy registry
	Password string
	Router   LegacyRouter
	// RetryAfter goes with the 503 of a write in the read-only window.
	RetryAfter time.Duration
	// Transport to the legacy registry; nil: http.DefaultTransport.
	Transport http.RoundTripper
	// Observe, when set, is told the outcome of every request under a
	// legacy name (forwarded, local, read_only_rejected, error).
	Observe func(outcome string)
}

type legacyProxy struct {
	opts   LegacyOptions
	base   *url.URL
	rp     *httputil.ReverseProxy
	log    *slog.Logger
	router LegacyRouter
}

func newLegacyProxy(o LegacyOptions, log *slog.Logger) (*legacyProxy, error) {
	u, err := url.Parse(strings.TrimRight(o.URL, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("legacy registry URL %q: must be http(s)://host[:port]", o.URL)
	}
	if o.Router == nil {
		return nil, errors.New("legacy proxy: no router")
	}
	if o.RetryAfter < time.Second {
		o.RetryAfter = time.Second
	}
	p := &legacyProxy{opts: o, base: u, log: log, router: o.Router}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      newLegacyAuth(o.Transport, u, o.Username, o.Password),
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		// Flush as bytes arrive: blob pulls and chunked answers stream.
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return p, nil
}

func (p *legacyProxy) observe(outcome string) {
	if p.opts.Observe != nil {
		p.opts.Observe(outcome)
	}
}

// rewrite points the outgoing request at the legacy registry. The client's
// credentials are ours (the admin token), never the legacy registry's: they
// are dropped, and the transport (legacyAuth) sends the configured ones,
// as Basic or as a token from the legacy registry's token service.
func (p *legacyProxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.base)
	pr.Out.Host = p.base.Host
	pr.Out.Header.Del("Authorization")
	pr.SetXForwarded()
}

// modifyResponse keeps clients on our host: a Location on the legacy
// registry (upload sessions, redirects) becomes a path on ours. Clients
// authenticate to us and we to the legacy registry, so a 401 from it means
// the configured credentials are wrong: the client cannot fix that, and
// gets a 502 naming the cause instead of a challenge it cannot answer.
func (p *legacyProxy) modifyResponse(resp *http.Response) error {
	if resp.StatusCode == http.StatusUnauthorized {
		return errLegacyCredentials
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		resp.Header.Set("Location", p.localLocation(loc))
	}
	// Whatever the legacy registry answers is bytes users pushed, served
	// on our origin: ours replace its own values of these headers.
	name := ""
	if resp.Request != nil {
		name = path.Base(resp.Request.URL.Path)
	}
	httpsafe.Attachment(resp.Header, name)
	p.observe("forwarded")
	return nil
}

var errLegacyCredentials = errors.New("the legacy registry refused the configured credentials")

// localLocation turns a Location on the legacy registry into a relative
// one; any other host (a storage redirect) is left alone.
func (p *legacyProxy) localLocation(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || !u.IsAbs() {
		return loc
	}
	if !strings.EqualFold(u.Host, p.base.Host) {
		return loc
	}
	rel := url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery, Fragment: u.Fragment}
	return rel.String()
}

func (p *legacyProxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		p.observe("canceled")
		return
	}
	p.observe("error")
	if errors.Is(err, errLegacyCredentials) {
		p.log.Error("legacy registry refused our credentials: check the legacy registry username and password", "path", r.URL.Path)
		writeAPIError(w, r, newErr(http.StatusBadGateway, codeUnknown, "%s", errLegacyCredentials.Error()))
		return
	}
	if errors.Is(err, errLegacyToken) {
		p.log.Error("legacy registry token service", "path", r.URL.Path, "err", err)
		writeAPIError(w, r, newErr(http.StatusBadGateway, codeUnknown, "%s", errLegacyToken.Error()))
		return
	}
	p.log.Warn("legacy registry unreachable", "method", r.Method, "path", r.URL.Path, "err", err)
	writeAPIError(w, r, newErr(http.StatusBadGateway, codeUnknown, "the legacy registry did not answer"))
}

// legacyFront is the router middleware of proxy mode: it runs after the
// route matched, so {name} is known, and decides where the request goes.
func (h *handler) legacyFront(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vars := mux.Vars(r)
		name, ok := vars["name"]
		if !ok {
			next.ServeHTTP(w, r) // /v2/, /v2/_catalog, unknown endpoints
			return
		}
		p := h.legacy
		// Authenticated first, and anonymous writes refused, so no
		// anonymous write creates anything in the inventory.
		r, err := h.authenticate(r)
		if err == nil && isWrite(r) && principal(r).IsAnonymous() {
			err = h.denied(r, errLogin, "")
		}
		if err != nil {
			w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
			h.writeError(w, r, err)
			return
		}
		route, err := p.router.Route(r.Context(), name, isWrite(r))
		if err != nil {
			h.legacyError(w, r, err)
			return
		}
		if route.Decision == LegacyNotMapped && h.refuseHeldTarget(w, r, name) {
			return
		}
		if route.Decision == LegacyForward && isTagWrite(r) {
			answered := false
			err := p.router.GuardWrite(r.Context(), name, func(route LegacyRoute) error {
				answered = true
				h.legacyDispatch(w, r, next, name, route)
				return nil
			})
			switch {
			case err != nil && answered:
				// Only the release of the share lock failed; the answer is out.
				h.log.Warn("legacy route: release write guard", "path", r.URL.Path, "err", err)
			case err != nil:
				h.legacyError(w, r, err)
			}
			return
		}
		h.legacyDispatch(w, r, next, name, route)
	})
}

// refuseHeldTarget answers a request under the target name of a
// repository still on the legacy registry, and reports whether it did.
// The caller is authorized on the target first, as a forwarded request
// would be, so the legacy path is only named to those who may use it.
func (h *handler) refuseHeldTarget(w http.ResponseWriter, r *http.Request, name string) bool {
	legacyPath, held, err := h.legacy.router.HeldTarget(r.Context(), name)
	if err != nil {
		h.legacyError(w, r, err)
		return true
	}
	if !held {
		return false
	}
	w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	if err := h.authorizeForward(r, name); err != nil {
		h.writeError(w, r, err)
		return true
	}
	h.legacy.observe("target_refused")
	status, code := http.StatusNotFound, codeNameUnknown
	if isWrite(r) {
		status, code = http.StatusForbidden, codeDenied
	}
	e := newErr(status, code, "repository %q is still being migrated from the legacy registry; until it is migrated, use its legacy name %q", name, legacyPath)
	e.Detail = map[string]string{"legacyPath": legacyPath}
	writeAPIError(w, r, e)
	return true
}

func (h *handler) legacyError(w http.ResponseWriter, r *http.Request, err error) {
	h.log.Error("legacy route", "method", r.Method, "path", r.URL.Path, "err", err)
	h.legacy.observe("error")
	h.writeError(w, r, err)
}

func (h *handler) legacyDispatch(w http.ResponseWriter, r *http.Request, next http.Handler, name string, route LegacyRoute) {
	p := h.legacy
	switch route.Decision {
	case LegacyNotMapped:
		next.ServeHTTP(w, r)
	case LegacyLocal:
		p.observe("local")
		serveAs(w, r, next, name, route.Target)
	case LegacyReadOnly:
		if isWrite(r) {
			p.observe("read_only_rejected")
			e := newErr(http.StatusServiceUnavailable, codeTooManyRequests,
				"repository %q is being migrated and is read-only for a moment; retry after %d seconds", name, int(p.opts.RetryAfter.Seconds()))
			e.RetryAfter = int(p.opts.RetryAfter.Seconds())
			writeAPIError(w, r, e)
			return
		}
		h.forward(w, r, route)
	default:
		h.forward(w, r, route)
	}
}

// forward sends the request (authenticated by legacyFront) to the legacy
// registry once package auth allows it on the mapped target, exactly as if
// it were served here.
func (h *handler) forward(w http.ResponseWriter, r *http.Request, route LegacyRoute) {
	if err := h.authorizeForward(r, route.Target); err != nil {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		h.writeError(w, r, err)
		return
	}
	w.Header().Del("Docker-Distribution-API-Version") // the legacy registry sends its own
	h.legacy.rp.ServeHTTP(w, r)
}

// authorizeForward decides a forwarded request on its mapped target. A
// target not created here yet has no visibility to decide on, so only the
// admin token reaches it; others get what a hidden repository answers.
func (h *handler) authorizeForward(r *http.Request, target string) error {
	n, aerr := parseName(target)
	if aerr != nil {
		return aerr
	}
	action := forwardAction(r)
	if err := h.requireCredentialFor(r, n, action); err != nil {
		return err
	}
	t, err := h.resolve(r.Context(), n)
	switch {
	case err == nil:
		return h.authorize(r, action, t)
	case !store.HasCode(err, container.CodeNameUnknown):
		return err
	case principal(r).IsAdmin():
		return nil
	}
	return h.unknownName(r, n, action, err)
}

// requireCredentialFor refuses anonymous changes before any lookup.
func (h *handler) requireCredentialFor(r *http.Request, n imageName, action auth.Action) error {
	if action == auth.ActionRead {
		return nil
	}
	return h.requireCredential(r, n, action)
}

func forwardAction(r *http.Request) auth.Action {
	switch {
	case r.Method == http.MethodDelete:
		return auth.ActionDelete
	case isWrite(r):
		return auth.ActionWrite
	}
	return auth.ActionRead
}

func isWrite(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}

// isTagWrite: manifest PUT and DELETE change tags, which pass 2 must see.
func isTagWrite(r *http.Request) bool {
	return (r.Method == http.MethodPut || r.Method == http.MethodDelete) && mux.Vars(r)["reference"] != ""
}

// serveAs serves a legacy name locally under target: the route variable
// and path are rewritten on the way in, Location and Link on the way out,
// so the client keeps using the name it knows.
func serveAs(w http.ResponseWriter, r *http.Request, next http.Handler, name, target string) {
	vars := map[string]string{}
	for k, v := range mux.Vars(r) {
		vars[k] = v
	}
	vars["name"] = target
	r2 := mux.SetURLVars(r, vars)
	u := *r.URL
	from, to := "/v2/"+name+"/", "/v2/"+target+"/"
	u.Path = strings.Replace(u.Path, from, to, 1)
	u.RawPath = ""
	r2.URL = &u
	next.ServeHTTP(&renamingWriter{ResponseWriter: w, from: to, to: from}, r2)
}

// renamingWriter rewrites the target name back to the legacy name in the
// headers that carry paths.
type renamingWriter struct {
	http.ResponseWriter
	from, to string
	wrote    bool
}

func (rw *renamingWriter) fix() {
	if rw.wrote {
		return
	}
	rw.wrote = true
	h := rw.Header()
	for _, k := range []string{"Location", "Link"} {
		if v := h.Get(k); v != "" {
			h.Set(k, strings.Replace(v, rw.from, rw.to, 1))
		}
	}
}

func (rw *renamingWriter) WriteHeader(code int) { rw.fix(); rw.ResponseWriter.WriteHeader(code) }

func (rw *renamingWriter) Write(b []byte) (int, error) { rw.fix(); return rw.ResponseWriter.Write(b) }

func (rw *renamingWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

func (rw *renamingWriter) Flush() {
	rw.fix()
	_ = http.NewResponseController(rw.ResponseWriter).Flush()
}
