package oci

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// Access control is package auth's: wrap authenticates every request once
// (a presented but unusable credential is a 401 wherever it goes), target
// resolves the name and asks auth.Authorize. Refusals take the OCI form:
//
//   - 401 UNAUTHORIZED with the token flow's challenge,
//     WWW-Authenticate: Bearer realm="<base>/v2/token",service="artifact-registry",scope="repository:<name>:<actions>"
//     which docker, podman, crane, oras, regctl and skopeo answer by
//     fetching a bearer token at /v2/token (auth.TokenHandler) with their
//     stored credentials. HTTP Basic with the token as the password is
//     accepted directly on every route too (curl, scripts, the suite);
//   - 403 DENIED for a valid credential that does not allow the action, or
//     a blocked, disabled or suspended (for changes) namespace;
//   - 404 NAME_UNKNOWN only for callers allowed to know that the name does
//     not exist (auth.MaskNotFound): others get the 401 or 403 a private
//     repository of that name would give.

// scopeActions are the token-spec actions a challenge asks for.
func scopeActions(a auth.Action) []auth.Action {
	switch a {
	case auth.ActionRead:
		return []auth.Action{auth.ActionRead}
	case auth.ActionDelete:
		return []auth.Action{auth.ActionDelete}
	}
	// Pushing also reads (HEAD of blobs and manifests).
	return []auth.Action{auth.ActionRead, auth.ActionWrite}
}

// errLogin is the 401 of anonymous callers where any action needs a
// credential.
var errLogin = &auth.Error{Kind: auth.ErrUnauthenticated, Message: "authentication required: log in with an access token"}

// principal is the caller wrap authenticated.
func principal(r *http.Request) *auth.Principal { return auth.FromContext(r.Context()) }

// authenticate runs once per request (in wrap) and stores the principal
// in the request context.
func (h *handler) authenticate(r *http.Request) (*http.Request, error) {
	p, err := h.authn.Authenticate(r)
	if err != nil {
		return r, h.denied(r, err, "")
	}
	return r.WithContext(auth.WithPrincipal(r.Context(), p)), nil
}

// denied turns an auth error into the OCI response; scope is the
// challenge's scope ("" for /v2/ and the catalog). Errors that are not
// decisions (the store failed) pass through to fromStoreError.
func (h *handler) denied(r *http.Request, err error, scope string) error {
	switch auth.HTTPStatus(err) {
	case http.StatusUnauthorized:
		c := h.authn.OCIChallenge(r, true, h.tokenURL, scope)
		if auth.InsufficientScope(err) {
			c += `,error="insufficient_scope"`
		}
		return newErr(http.StatusUnauthorized, codeUnauthorized, "%s", err.Error()).withHeader("WWW-Authenticate", c)
	case http.StatusForbidden:
		return newErr(http.StatusForbidden, codeDenied, "%s", err.Error())
	case http.StatusNotFound:
		return newErr(http.StatusNotFound, codeNameUnknown, "%s", err.Error())
	case http.StatusTooManyRequests:
		e := newErr(http.StatusTooManyRequests, codeRateLimited, "%s", err.Error())
		e.RetryAfter = auth.RetryAfterSeconds(err)
		return e
	}
	return err
}

// authorize checks the caller against a resolved target.
func (h *handler) authorize(r *http.Request, action auth.Action, t *container.Target) error {
	if err := auth.Authorize(r.Context(), principal(r), action, auth.ContainerTarget(t)); err != nil {
		return h.denied(r, err, auth.OCIScope(t.Name(), scopeActions(action)...))
	}
	return nil
}

// requireCredential refuses anonymous callers before any work: writes
// never pass without a credential, so the body need not be read.
func (h *handler) requireCredential(r *http.Request, n imageName, action auth.Action) error {
	if !principal(r).IsAnonymous() {
		return nil
	}
	return h.denied(r, errLogin, auth.OCIScope(n.String(), scopeActions(action)...))
}

// unknownName answers a name that does not resolve: NAME_UNKNOWN for
// those allowed to know, else what a hidden private repository answers.
func (h *handler) unknownName(r *http.Request, n imageName, action auth.Action, notFound error) error {
	masked := auth.MaskNotFound(principal(r), n.Namespace, notFound)
	if store.HasCode(masked, container.CodeNameUnknown) {
		return newErr(http.StatusNotFound, codeNameUnknown, "%v", notFound).withDetail(map[string]string{"name": n.String()})
	}
	return h.denied(r, masked, auth.OCIScope(n.String(), scopeActions(action)...))
}

// catalogFilter is what the caller may list: its own namespace's rules
// and everyone else's, both from auth.ReadableRepositories.
func catalogFilter(p *auth.Principal) container.CatalogFilter {
	conv := func(f auth.RepositoryFilter) container.ReadFilter {
		return container.ReadFilter{All: f.All, Visibilities: f.Visibilities, IDs: f.IDs}
	}
	own := p.NamespaceID() // uuid.Nil unless a token: never a namespace id
	return container.CatalogFilter{
		NamespaceID: own,
		Own:         conv(auth.ReadableRepositories(p, auth.Namespace{ID: own})),
		Others:      conv(auth.ReadableRepositories(p, auth.Namespace{ID: uuid.Nil})),
	}
}
