package httpserver

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/internal/redact"
)

// recorder captures the status and body size a handler wrote.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush keeps streaming responses streaming.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// observe labels metrics and logs with the matched route template, never the
// raw path: paths hold digests and names and would explode cardinality. The
// log line also carries the path and query, redacted: npm sends tokens in
// paths (logout is DELETE /-/user/token/<token>).
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := "unknown"
		if cur := mux.CurrentRoute(r); cur != nil {
			if tpl, err := cur.GetPathTemplate(); err == nil {
				route = tpl
			} else if name := cur.GetName(); name != "" {
				route = name
			}
		}
		s.serveObserved(route, next, w, r)
	})
}

func (s *Server) observeUnmatched(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveObserved(route, next, w, r)
	})
}

func (s *Server) serveObserved(route string, next http.Handler, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w}
	next.ServeHTTP(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	elapsed := time.Since(start)
	level := slog.LevelInfo
	if rec.status >= 500 {
		level = slog.LevelError
	}
	status := strconv.Itoa(rec.status)
	s.requests.WithLabelValues(route, r.Method, status).Inc()
	s.latency.WithLabelValues(route, r.Method, status).Observe(elapsed.Seconds())
	// The redaction runs its regexps on every path, so only for a line
	// that is written.
	if !s.log.Enabled(r.Context(), level) {
		return
	}
	s.log.LogAttrs(r.Context(), level, "http request",
		slog.String("method", r.Method), slog.String("route", route), slog.String("path", redact.URL(r.URL)),
		slog.Int("status", rec.status), slog.Duration("duration", elapsed), slog.Int64("bytes", rec.bytes))
}
