// Package httpserver is the root HTTP router: ops endpoints, request
// metrics and logging, timeouts and graceful shutdown. Protocol and GraphQL
// handlers are mounted on Router() by their own packages.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyFunc reports why the server cannot take traffic, or nil.
type ReadyFunc func(ctx context.Context) error

// Options configure a Server.
type Options struct {
	Logger *slog.Logger
	Ready  ReadyFunc
	// Registry receives the HTTP metrics; nil means a new registry with the
	// Go and process collectors.
	Registry *prometheus.Registry
	// BodyIdleTimeout cuts a connection whose request body sends nothing,
	// or whose client takes no response bytes, for this long; 0 means
	// DefaultBodyIdleTimeout.
	BodyIdleTimeout time.Duration
}

// maxHeaderBytes bounds request headers (net/http's default is 1 MiB): a
// bearer token, a session cookie and the usual headers fit many times over,
// and thousands of connections cannot each hold a megabyte.
const maxHeaderBytes = 64 << 10

// Server owns the root router and the metrics registry.
type Server struct {
	router   *mux.Router
	log      *slog.Logger
	ready    ReadyFunc
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  http.Handler
}

// New builds the root router with /-/health, /-/ready and /metrics. Paths
// are not cleaned: each protocol validates its own (a Maven path with ".."
// must get a 400, not a redirect to another file).
func New(opts Options) *Server {
	s := &Server{router: mux.NewRouter().SkipClean(true), log: opts.Logger, ready: opts.Ready, registry: opts.Registry}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
		s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "artifact_registry_http_requests_total",
		Help: "HTTP requests by route template, method and status code.",
	}, []string{"route", "method", "status"})
	s.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "artifact_registry_http_request_duration_seconds",
		Help:    "HTTP request latency by route template, method and status code.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
	}, []string{"route", "method", "status"})
	s.registry.MustRegister(s.requests, s.latency)

	s.router.Use(s.observe)
	s.router.NotFoundHandler = s.observeUnmatched("unmatched", http.NotFoundHandler())
	s.router.MethodNotAllowedHandler = s.observeUnmatched("method_not_allowed", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}))
	s.router.HandleFunc("/-/health", s.health).Methods(http.MethodGet, http.MethodHead)
	s.router.HandleFunc("/-/ready", s.readyz).Methods(http.MethodGet, http.MethodHead)
	s.router.Handle("/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry})).Methods(http.MethodGet)
	idle := opts.BodyIdleTimeout
	if idle <= 0 {
		idle = DefaultBodyIdleTimeout
	}
	s.handler = progressDeadlines(idle, s.router)
	return s
}

// Router is where protocol and API handlers are mounted.
func (s *Server) Router() *mux.Router { return s.router }

// Registry is where other packages register their collectors.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// Handler is the whole HTTP surface, with the body progress deadlines.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if s.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.ready(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
	}
	_, _ = w.Write([]byte("ready\n"))
}

// Serve listens on addr until ctx ends, then shuts down gracefully,
// waiting up to grace for requests in flight.
func (s *Server) Serve(ctx context.Context, addr string, grace time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return s.ServeListener(ctx, ln, grace)
}

// ServeListener is Serve on an existing listener (tests use port 0).
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		// No ReadTimeout/WriteTimeout: blob uploads and downloads stream for
		// as long as they make progress, which Handler's progress deadlines
		// enforce; IdleTimeout bounds idle keep-alives.
		IdleTimeout: 120 * time.Second,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("http server listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}
