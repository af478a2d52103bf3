package httpserver

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// DefaultBodyIdleTimeout is how long a request body may send nothing, or a
// response wait for its client to take bytes, before the connection is cut.
const DefaultBodyIdleTimeout = 30 * time.Second

// progressDeadlines gives every request a read deadline that moves forward
// before each body Read and a write deadline that moves forward before each
// response Write. A whole-request ReadTimeout would cut long uploads that
// keep sending; this cuts only a peer that stops moving bytes, so a slow
// body cannot hold a connection and a handler for ever.
func progressDeadlines(idle time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// net/http resets the write deadline only when WriteTimeout is set:
		// clear the previous request's on this keep-alive connection, so a
		// handler that thinks for a while before its first byte is not cut.
		_ = rc.SetWriteDeadline(time.Time{})
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &progressReader{ReadCloser: r.Body, rc: rc, idle: idle}
		}
		pw := &progressWriter{ResponseWriter: w, rc: rc, idle: idle}
		next.ServeHTTP(pw, r)
		// Covers the flush net/http does after the handler returns.
		_ = rc.SetWriteDeadline(time.Now().Add(idle))
	})
}

// progressReader extends the connection's read deadline before each Read.
type progressReader struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	done bool
}

func (p *progressReader) Read(b []byte) (int, error) {
	if p.done {
		return p.ReadCloser.Read(b)
	}
	_ = p.rc.SetReadDeadline(time.Now().Add(p.idle))
	n, err := p.ReadCloser.Read(b)
	if err != nil {
		p.done = true
		if errors.Is(err, io.EOF) {
			// Once the body is read, net/http's background read watches for
			// the client going away while the handler works; a deadline left
			// here would cancel the request context of a slow handler.
			_ = p.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// progressWriter extends the connection's write deadline before each Write.
type progressWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (p *progressWriter) Write(b []byte) (int, error) {
	_ = p.rc.SetWriteDeadline(time.Now().Add(p.idle))
	return p.ResponseWriter.Write(b)
}

// Flush keeps streaming responses streaming.
func (p *progressWriter) Flush() {
	_ = p.rc.SetWriteDeadline(time.Now().Add(p.idle))
	_ = p.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (p *progressWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
