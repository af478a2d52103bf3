package httpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serve starts s on a loopback port until the test ends.
func serve(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeListener(ctx, ln, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// readResult is what a handler's body read ended with.
type readResult struct {
	n       int
	err     error
	elapsed time.Duration
}

func TestStalledBodyIsCut(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := New(Options{BodyIdleTimeout: idle})
	got := make(chan readResult, 1)
	s.Router().HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		b, err := io.ReadAll(r.Body)
		got <- readResult{len(b), err, time.Since(start)}
		if err != nil {
			http.Error(w, "body read failed", http.StatusRequestTimeout)
		}
	})
	addr := serve(t, s)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers promise 1000 bytes; 10 arrive, then nothing.
	if _, err := fmt.Fprintf(conn, "PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		var ne net.Error
		if r.err == nil || !errors.As(r.err, &ne) || !ne.Timeout() {
			t.Fatalf("stalled body read ended with %v after %d bytes, want a timeout", r.err, r.n)
		}
		if r.elapsed < idle || r.elapsed > idle+2*time.Second {
			t.Fatalf("stalled body cut after %s, want about %s", r.elapsed, idle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a body that stopped sending held its handler for 10s")
	}
	// The connection is closed, not kept for another request.
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("connection after a stalled body: %v", err)
	}
}

func TestSlowSteadyBodyCompletes(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := New(Options{BodyIdleTimeout: idle})
	s.Router().HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestTimeout)
			return
		}
		// Work past the deadline after the body: the request must live on.
		time.Sleep(3 * idle)
		if err := r.Context().Err(); err != nil {
			http.Error(w, "context ended: "+err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, strconv.Itoa(len(b)))
	})
	addr := serve(t, s)
	pr, pw := io.Pipe()
	go func() {
		// 25 chunks 150 ms apart: ~3.75 s in all, 12 deadlines long.
		for range 25 {
			time.Sleep(idle / 2)
			if _, err := pw.Write([]byte(strings.Repeat("x", 100))); err != nil {
				return
			}
		}
		_ = pw.Close()
	}()
	start := time.Now()
	resp, err := http.Post("http://"+addr+"/upload", "application/octet-stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != "2500" {
		t.Fatalf("slow steady upload: %d %q", resp.StatusCode, body)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Fatalf("upload took %s, the test meant it to be slow", took)
	}
}

func TestStalledReaderIsCut(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := New(Options{BodyIdleTimeout: idle})
	wrote := make(chan error, 1)
	s.Router().HandleFunc("/download", func(w http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 64<<10)
		// Far more than loopback socket buffers hold.
		for range 4096 {
			if _, err := w.Write(chunk); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	})
	addr := serve(t, s)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET /download HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil {
		t.Fatal(err)
	}
	// The client reads the status line and then nothing.
	select {
	case err := <-wrote:
		if err == nil {
			t.Fatal("256 MiB written to a client that reads nothing")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a client that stopped reading held its handler for 15s")
	}
}
