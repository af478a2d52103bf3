package ocitools

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CountingProxy is a loopback TCP proxy in front of a server that counts
// the bytes clients send and receive through it: how the S3 tests see
// whether a commit streamed the data or had the server copy it.
type CountingProxy struct {
	Addr     string // 127.0.0.1:<port>
	sent     atomic.Int64
	received atomic.Int64
}

// Sent is the number of bytes clients have sent so far.
func (p *CountingProxy) Sent() int64 { return p.sent.Load() }

// Received is the number of bytes clients have received so far.
func (p *CountingProxy) Received() int64 { return p.received.Load() }

// NewCountingProxy forwards every connection to target (host:port) until
// the test ends.
func NewCountingProxy(t testing.TB, target string) *CountingProxy {
	return NewSlowProxy(t, target, 0)
}

// NewSlowProxy is NewCountingProxy holding every read from a client for
// delay before passing it on: a slow network in front of a real server.
// Each request of a keep-alive connection is a new read, so each one is
// delayed.
func NewSlowProxy(t testing.TB, target string, delay time.Duration) *CountingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CountingProxy{Addr: ln.Addr().String()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(s, countingReader{c, &p.sent, delay})
				_ = s.(*net.TCPConn).CloseWrite()
			}()
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, countingReader{s, &p.received, 0})
				_ = c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

// countingReader counts what it reads into n, each read held for delay.
type countingReader struct {
	r     io.Reader
	n     *atomic.Int64
	delay time.Duration
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && c.delay > 0 {
		time.Sleep(c.delay)
	}
	c.n.Add(int64(n))
	return n, err
}
