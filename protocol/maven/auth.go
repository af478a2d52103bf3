package maven

import (
	"net/http"
	"strconv"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// Access control is package auth's. Maven (wagon over Apache HttpClient)
// sends credentials on GET only after a 401 that carries a Basic
// challenge, and on PUT pre-emptively, so every 401 carries
// auth.BasicChallenge: settings.xml <server><username>any</username>
// <password>TOKEN</password></server>. Bearer <token> (settings.xml
// httpHeaders) works too.

// access authenticates the request, resolves its repository and
// authorizes the action: 401 with the Basic challenge, 403 with the
// reason, or 404 only for callers allowed to know a repository does not
// exist (auth.MaskNotFound).
//
// A read also looks the requested file up in the same round trip: the
// file is nil when the target is not hosted or holds no such file (the
// caller then looks further: metadata rendered on the fly, the latest
// SNAPSHOT build). It is only returned once the action is authorized.
func (h *handler) access(r *http.Request, q *request, action auth.Action) (*mavenstore.Target, *mavenstore.File, error) {
	p, err := h.authn.Authenticate(r)
	if err != nil {
		return nil, nil, denied(err)
	}
	var (
		t *mavenstore.Target
		f *mavenstore.File
	)
	if action == auth.ActionRead {
		t, f, err = h.maven.ResolveTargetFile(r.Context(), q.namespace, q.repository, q.ref)
	} else {
		t, err = h.maven.ResolveTarget(r.Context(), q.namespace, q.repository)
	}
	if store.HasCode(err, mavenstore.CodeRepositoryUnknown) {
		if masked := auth.MaskNotFound(p, q.namespace, err); masked != err {
			return nil, nil, denied(masked)
		}
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	if err := auth.Authorize(r.Context(), p, action, auth.MavenTarget(t)); err != nil {
		return nil, nil, denied(err)
	}
	return t, f, nil
}

// denied maps an auth error to its response; other errors pass through.
func denied(err error) error {
	switch st := auth.HTTPStatus(err); st {
	case http.StatusUnauthorized:
		return &httpError{status: st, msg: err.Error(), header: map[string]string{"WWW-Authenticate": auth.BasicChallenge}, err: err}
	case http.StatusForbidden, http.StatusNotFound:
		return &httpError{status: st, msg: err.Error(), err: err}
	case http.StatusTooManyRequests:
		return &httpError{status: st, msg: err.Error(), header: map[string]string{"Retry-After": strconv.Itoa(auth.RetryAfterSeconds(err))}, err: err}
	}
	return err
}
