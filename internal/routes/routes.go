// Package routes mounts every surface on the root router in the one order
// serve uses, so the security tests walk exactly the router that production
// serves.
package routes

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph"
	"github.com/artifact-registry/artifact-registry/protocol/maven"
	"github.com/artifact-registry/artifact-registry/protocol/npm"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/web"
)

// Options are each surface's own options.
type Options struct {
	OCI   oci.Options
	Npm   npm.Options
	Maven maven.Options
	Graph graph.Options
}

// Mount registers the protocols, the API and the UI on r (the ops routes
// come with httpserver.New). The UI goes last: its catch-all prefix must
// lose to every other route. The function it returns closes the
// protocols' upstream clients once the server has stopped taking
// requests: a pull-through fill a client started finishes (or ends with
// ctx) rather than being cut off by the exit; then the download and cache
// counts still buffered are written.
func Mount(r *mux.Router, st *store.Store, o Options) (closeUpstreams func(context.Context)) {
	closers := []func(context.Context){oci.Mount(r, st, o.OCI), npm.Mount(r, st, o.Npm), maven.Mount(r, st, o.Maven)}
	graph.Mount(r, st, o.Graph)
	// GraphiQL, served from the binary like the UI: it loads nothing from
	// elsewhere, so it works where the server has no way out.
	r.Handle("/graphql/playground", web.Playground()).Methods(http.MethodGet, http.MethodHead)
	// The UI's sign-in (GET, POST, DELETE; 405 for other methods) opens
	// the session cookie that /graphql accepts.
	r.Handle(auth.SessionPath, o.Graph.Auth.SessionHandler())
	r.PathPrefix("/").Handler(web.Handler())
	return func(ctx context.Context) {
		for _, c := range closers {
			c(ctx)
		}
	}
}
