package graph

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/99designs/gqlgen/graphql/playground"
	"github.com/gorilla/mux"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/graph/model"

	"github.com/artifact-registry/artifact-registry/store"
)

// Limits on one operation.
const (
	// DefaultMaxDepth bounds field nesting (introspection excluded). The
	// deepest useful query, namespace → repositories → edges → node →
	// images → edges → node → manifests → edges → node → references →
	// tags, is 12 deep.
	DefaultMaxDepth = 14
	// DefaultMaxComplexity bounds the estimated work: every field costs 1
	// and a connection multiplies its children by its page size (first,
	// default 20). Listing 100 repositories with 10 images each and 10 tags
	// and 10 manifests per image (up to 20,000 objects) costs about
	// 177,000; 100 namespaces × 100 repositories × 100 images is millions.
	DefaultMaxComplexity = 250_000
)

// Options configure the GraphQL handler.
type Options struct {
	// Auth authenticates callers: the process's one Authenticator (its Run
	// flushes token last-used times).
	Auth   *auth.Authenticator
	Logger *slog.Logger
	// MaxDepth and MaxComplexity override the defaults when positive.
	MaxDepth      int
	MaxComplexity int
	// LoaderWait is how long a dataloader collects keys before it runs
	// its batch; 0 means 5ms.
	LoaderWait time.Duration
	// NpmWriteHook runs inside the transaction of every npm write made
	// through the API (trash, restore, dist-tags), as the npm protocol's
	// writes run it: serve passes npm.WriteHook so the background
	// packument rebuild is queued. Nil: the next read rebuilds.
	NpmWriteHook store.NpmWriteHook
}

// Mount serves the API on r: POST and GET /graphql, and the playground at
// GET /graphql/playground.
func Mount(r *mux.Router, st *store.Store, opts Options) {
	h := NewHandler(st, opts)
	r.Handle("/graphql", h).Methods(http.MethodPost, http.MethodGet)
	r.Handle("/graphql/playground", playground.Handler("Artifact Registry", "/graphql")).Methods(http.MethodGet)
}

// NewHandler is the /graphql endpoint: authentication, per-request
// dataloaders and the gqlgen server with limits and error mapping.
func NewHandler(st *store.Store, opts Options) http.Handler {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxComplexity <= 0 {
		opts.MaxComplexity = DefaultMaxComplexity
	}
	if opts.LoaderWait <= 0 {
		opts.LoaderWait = 5 * time.Millisecond
	}
	if opts.Auth == nil {
		panic("graph: Options.Auth is required")
	}
	cfg := Config{Resolvers: &Resolver{store: st, auth: opts.Auth, log: log, npmHook: opts.NpmWriteHook}}
	setComplexity(&cfg.Complexity)
	srv := handler.New(NewExecutableSchema(cfg))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.Use(extension.Introspection{})
	srv.Use(depthLimit{max: opts.MaxDepth})
	srv.Use(extension.FixedComplexityLimit(opts.MaxComplexity))
	srv.SetErrorPresenter(errorPresenter(log))
	srv.SetRecoverFunc(recoverFunc(log))

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := opts.Auth.Authenticate(r)
		if err != nil {
			// A presented credential that is not valid is refused outright
			// rather than downgraded to anonymous.
			if code, msg, _, ok := authError(err); ok {
				writeError(w, auth.HTTPStatus(err), code, msg)
				return
			}
			log.ErrorContext(r.Context(), "graphql: authenticate", "err", err)
			setRetryAfter(w)
			writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "authentication is unavailable; retry")
			return
		}
		ctx, w := watchUnavailable(r.Context(), w)
		ctx = auth.WithPrincipal(ctx, p)
		ctx = withLoaders(ctx, st, opts.LoaderWait)
		srv.ServeHTTP(w, r.WithContext(ctx))
	})
}

// writeError answers a request refused before GraphQL execution, in the
// GraphQL response shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="artifact-registry"`)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"errors": []map[string]any{{"message": msg, "extensions": map[string]any{"code": code}}},
	})
}

// setComplexity makes connections cost their page size times their
// children, so a nested query's cost approximates the rows it can load.
func setComplexity(c *ComplexityRoot) {
	conn := func(child int, first *int) int {
		n := defaultPageSize
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*child
	}
	c.Query.Namespaces = func(child int, first *int, _ *string) int { return conn(child, first) }
	c.Namespace.Repositories = func(child int, first *int, _ *string, last *int, _ *string, _ *model.RepositoryOrder, _ *model.RepositoryFilter) int {
		if last != nil {
			return conn(child, last)
		}
		return conn(child, first)
	}
	c.Query.ExcludedGcCandidates = func(child int, _ string, first *int, _ *string) int { return conn(child, first) }
	c.Query.AccessTokens = func(child int, _ string, first *int, _ *string, _ *bool) int { return conn(child, first) }
	c.Namespace.Collections = func(child int, first *int, _ *string) int { return conn(child, first) }
	c.Namespace.Trash = func(child int, first *int, _ *string, last *int, _ *string, _ *model.TrashKind) int {
		if last != nil {
			return conn(child, last)
		}
		return conn(child, first)
	}
	c.Namespace.PublishHistory = func(child int, _, _ *time.Time, first *int, _ *string) int { return conn(child, first) }
	c.Namespace.ChecksumSearch = func(child int, _ string, _ *bool, first *int) int {
		n := defaultChecksumMatches
		if first != nil && *first > 0 {
			n = *first
		}
		return 1 + n*child
	}
	c.Repository.Images = func(child int, first *int, _ *string) int { return conn(child, first) }
	c.ContainerImage.Tags = func(child int, first *int, _ *string) int { return conn(child, first) }
	c.ContainerImage.Manifests = func(child int, first *int, _ *string) int { return conn(child, first) }
}

// depthLimit rejects operations nested deeper than max fields.
// Introspection (__schema, __type) is not counted: the playground's
// introspection query is deep by construction and bounded by the schema.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	if depth := selectionDepth(op.SelectionSet, oc.Doc.Fragments, 0, map[string]bool{}); depth > d.max {
		err := gqlerror.Errorf("operation is nested %d levels deep, which exceeds the limit of %d", depth, d.max)
		err.Extensions = map[string]any{"code": "DEPTH_LIMIT_EXCEEDED"}
		return err
	}
	return nil
}

func selectionDepth(set ast.SelectionSet, frags ast.FragmentDefinitionList, depth int, visiting map[string]bool) int {
	max := depth
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name == "__schema" || s.Name == "__type" {
				continue
			}
			d = selectionDepth(s.SelectionSet, frags, depth+1, visiting)
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, frags, depth, visiting)
		case *ast.FragmentSpread:
			if visiting[s.Name] { // cycles are rejected by validation; be safe
				continue
			}
			f := frags.ForName(s.Name)
			if f == nil {
				continue
			}
			visiting[s.Name] = true
			d = selectionDepth(f.SelectionSet, frags, depth, visiting)
			delete(visiting, s.Name)
		}
		if d > max {
			max = d
		}
	}
	return max
}
