package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newTestClient builds a client for base and closes it at cleanup.
func newTestClient(t testing.TB, cfg Config) *Client {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = t.TempDir()
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails (math/rand/v2 docs)
	return b
}

func sha256Digest(b []byte) Digest {
	s := sha256.Sum256(b)
	return Digest{Algorithm: SHA256, Sum: s[:]}
}

// counter counts requests by method and path.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(method, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[method+" "+path]++
}

func (c *counter) get(method, path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method+" "+path]
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

// memStage stages a fill into memory and records what happened to it:
// the tests' stand-in for a store upload, checking the contract
// (Commit only after EOF, Discard otherwise).
type memStage struct {
	mu        sync.Mutex
	committed [][]byte
	discarded int
	results   []*FillResult
	commitCh  chan struct{}
	// delay slows the stage's reads (a slow store).
	delay time.Duration
}

func newMemStage() *memStage { return &memStage{commitCh: make(chan struct{}, 16)} }

func (m *memStage) stage(ctx context.Context, body io.Reader) (Staged, error) {
	var buf bytes.Buffer
	if m.delay > 0 {
		b := make([]byte, 64<<10)
		for {
			n, err := body.Read(b)
			buf.Write(b[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			time.Sleep(m.delay)
		}
	} else if _, err := io.Copy(&buf, body); err != nil {
		return nil, err
	}
	return &memStaged{m: m, data: buf.Bytes()}, nil
}

type memStaged struct {
	m    *memStage
	data []byte
}

func (s *memStaged) Commit(_ context.Context, res *FillResult) error {
	s.m.mu.Lock()
	s.m.committed = append(s.m.committed, s.data)
	s.m.results = append(s.m.results, res)
	s.m.mu.Unlock()
	s.m.commitCh <- struct{}{}
	return nil
}

func (s *memStaged) Discard(context.Context) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	s.m.discarded++
}

func (m *memStage) snapshot() (committed [][]byte, discarded int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.committed...), m.discarded
}

// blackhole accepts connections and never answers.
func blackhole(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

// flaky serves 503 while down is set, else ok.
type flaky struct {
	down atomic.Bool
	hits atomic.Int64
	ok   http.HandlerFunc
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	if f.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	f.ok(w, r)
}

func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func asError(t testing.TB, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *upstream.Error", err, err)
	}
	return e
}

func readAllClose(t testing.TB, rc io.ReadCloser) []byte {
	t.Helper()
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
