package auth_test

import (
	"context"
	"net/http"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

// A protocol handler (here Maven's PUT/GET) with the one authorization
// layer: authenticate, resolve, mask a missing repository, authorize, and
// map the decision to the protocol's error format.
func Example_protocolHandler() {
	var st *store.Store // the service's store
	mvn := maven.New(st)
	authn := auth.New(st, auth.Options{AdminToken: "configured admin token"})
	go authn.Run(context.Background()) // last_used_at flushes; once per process

	handle := func(w http.ResponseWriter, r *http.Request, namespace, repository string, write bool) error {
		p, err := authn.Authenticate(r)
		if err != nil {
			return err // ErrUnauthenticated (malformed, unknown, expired, revoked) or a store failure
		}
		t, err := mvn.ResolveTarget(r.Context(), namespace, repository)
		if store.HasCode(err, maven.CodeRepositoryUnknown) {
			return auth.MaskNotFound(p, namespace, err) // 401/403 unless p may know it is missing
		}
		if err != nil {
			return err
		}
		action := auth.ActionRead
		if write {
			action = auth.ActionWrite
		}
		if err := auth.Authorize(r.Context(), p, action, auth.MavenTarget(t)); err != nil {
			return err
		}
		// ... serve the request ...
		return nil
	}

	// The protocol's error writer maps decision errors.
	writeError := func(w http.ResponseWriter, err error) {
		status := auth.HTTPStatus(err)
		if status == 0 {
			status = http.StatusInternalServerError // or 503 for store.CodeRetryable
		}
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", auth.BasicChallenge)
		}
		http.Error(w, err.Error(), status)
	}
	_, _ = handle, writeError
}

// GraphQL: the handler puts the principal in the context, resolvers
// authorize against the namespace or repository they act on.
func Example_graphQL() {
	var st *store.Store
	authn := auth.New(st, auth.Options{AdminToken: "configured admin token"})

	middleware := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, err := authn.Authenticate(r)
			if err != nil {
				w.Header().Set("WWW-Authenticate", auth.GraphQLChallenge)
				http.Error(w, err.Error(), auth.HTTPStatus(err)) // in the GraphQL error shape in practice
				return
			}
			next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
		})
	}

	createAccessToken := func(ctx context.Context, slug string, spec auth.TokenSpec) (*store.AccessToken, string, error) {
		ns, err := st.NamespaceBySlug(ctx, slug)
		if err != nil {
			return nil, "", err
		}
		return authn.CreateToken(ctx, auth.FromContext(ctx), auth.NamespaceOf(ns), spec)
	}
	_, _ = middleware, createAccessToken
}
