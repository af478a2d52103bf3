package graph

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/mux"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/legacy"
	"github.com/artifact-registry/artifact-registry/store/lifecycle"
	"github.com/artifact-registry/artifact-registry/store/maven"

	"github.com/artifact-registry/artifact-registry/store"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Limits on one operation.
const (
	// DefaultMaxDepth bounds field nesting (introspection excluded). The
	// deepest useful query, namespace → repositories → edges → node →
	// images → edges → node → manifests → edges → node → references →
	// tags, is 12 deep.
	DefaultMaxDepth = 14
	// DefaultMaxComplexity bounds the estimated work: every field costs 1,
	// a connection multiplies its children by its page size (first,
	// default 20) and a list that is not paginated by its bound
	// (complexity.go). Listing 100 repositories with 2 images each, 5 tags
	// and 5 manifests per image and every manifest's tags, references and
	// referrers at their bound of 50 costs about 227,000; 100 namespaces ×
	// 100 repositories × 100 images is millions.
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
	// MaxRequestBytes, MaxTokens, MaxFields and OperationTimeout override
	// DefaultMaxRequestBytes, DefaultMaxTokens, DefaultMaxFields and
	// DefaultOperationTimeout when positive.
	MaxRequestBytes  int64
	MaxTokens        int
	MaxFields        int
	OperationTimeout time.Duration
	// LoaderWait is how long a dataloader collects keys before it runs
	// its batch; 0 means 5ms.
	LoaderWait time.Duration
	// NpmWriteHook runs inside the transaction of every npm write made
	// through the API (trash, restore, dist-tags), as the npm protocol's
	// writes run it: serve passes npm.WriteHook so the background
	// packument rebuild is queued. Nil: the next read rebuilds.
	NpmWriteHook npmstore.WriteHook
	// Keyring seals the upstream credentials of remote repositories; nil:
	// settings with credentials are refused.
	Keyring container.Keyring
}

// Mount serves the API on r: POST and GET /graphql. (The playground page,
// a part of the web UI, is mounted with it by internal/routes.)
func Mount(r *mux.Router, st *store.Store, opts Options) {
	h := NewHandler(st, opts)
	r.Handle("/graphql", h).Methods(http.MethodPost, http.MethodGet)
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
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	if opts.MaxFields <= 0 {
		opts.MaxFields = DefaultMaxFields
	}
	if opts.OperationTimeout <= 0 {
		opts.OperationTimeout = DefaultOperationTimeout
	}
	if opts.LoaderWait <= 0 {
		opts.LoaderWait = 5 * time.Millisecond
	}
	if opts.Auth == nil {
		panic("graph: Options.Auth is required")
	}
	res := &Resolver{store: st, catalog: catalog.New(st), container: container.New(st), legacy: legacy.New(st),
		maven: maven.New(st), npm: npmstore.New(st), auth: opts.Auth, log: log, npmHook: opts.NpmWriteHook,
		lifecycle: lifecycle.New(st, lifecycle.Options{NpmHook: opts.NpmWriteHook})}
	if opts.Keyring != nil {
		res.container.SetKeyring(opts.Keyring)
		res.keyring = opts.Keyring
		res.maven.SetKeyring(opts.Keyring)
	}
	cfg := Config{Resolvers: res}
	setComplexity(&cfg.Complexity)
	srv := handler.New(NewExecutableSchema(cfg))
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	cache := lru.New[*ast.QueryDocument](1000)
	srv.SetQueryCache(cache)
	srv.SetParserTokenLimit(opts.MaxTokens)
	srv.Use(documentLimit{maxTokens: opts.MaxTokens, maxFields: opts.MaxFields, cache: cache})
	srv.Use(extension.Introspection{})
	srv.Use(depthLimit{max: opts.MaxDepth})
	srv.Use(extension.FixedComplexityLimit(opts.MaxComplexity))
	srv.AroundRootFields(operationDeadline(opts.OperationTimeout))
	srv.SetErrorPresenter(errorPresenter(log))
	srv.SetRecoverFunc(recoverFunc(log))

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !readBody(w, r, opts.MaxRequestBytes) {
			return
		}
		// The UI's session cookie (with its CSRF token) or a script's
		// Authorization header.
		p, err := opts.Auth.AuthenticateBrowser(w, r)
		if err != nil {
			// A presented credential that is not valid is refused outright
			// rather than downgraded to anonymous.
			if code, msg, _, ok := authError(err); ok {
				if s := auth.RetryAfterSeconds(err); s > 0 {
					w.Header().Set("Retry-After", strconv.Itoa(s))
				}
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
		ctx = withLoaders(ctx, res, opts.LoaderWait)
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
