package graph

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/artifact-registry/artifact-registry/store"
)

type unavailableKey struct{}

// watchUnavailable lets the error presenter, which has no response writer,
// turn the response into a 503 with Retry-After when a resolver found the
// database down: clients and load balancers retry on the status, not on
// extensions.code.
func watchUnavailable(ctx context.Context, w http.ResponseWriter) (context.Context, http.ResponseWriter) {
	flag := new(atomic.Bool)
	return context.WithValue(ctx, unavailableKey{}, flag), &unavailableWriter{ResponseWriter: w, flag: flag}
}

func markUnavailable(ctx context.Context) {
	if flag, ok := ctx.Value(unavailableKey{}).(*atomic.Bool); ok {
		flag.Store(true)
	}
}

func setRetryAfter(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(int(store.UnavailableRetryAfter.Seconds())))
}

type unavailableWriter struct {
	http.ResponseWriter
	flag        *atomic.Bool
	wroteHeader bool
}

func (u *unavailableWriter) WriteHeader(status int) {
	if !u.wroteHeader && u.flag.Load() && status == http.StatusOK {
		setRetryAfter(u.ResponseWriter)
		status = http.StatusServiceUnavailable
	}
	u.wroteHeader = true
	u.ResponseWriter.WriteHeader(status)
}

func (u *unavailableWriter) Write(b []byte) (int, error) {
	if !u.wroteHeader {
		u.WriteHeader(http.StatusOK)
	}
	return u.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (u *unavailableWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }
