package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// blobServer serves one body at /v2/r/blobs/<digest>, counting requests;
// hold, when set, is called between the two halves of the body.
type blobServer struct {
	body   []byte
	path   string
	digest string // of body, computed once (the benchmarks serve it often)
	count  counter
	// noLength sends the body chunked, without Content-Length.
	noLength bool
	hold     func(w http.ResponseWriter)
	// chunk and pause slow the body down: chunk bytes, then pause.
	chunk int
	pause time.Duration
}

func newBlobServer(body []byte) *blobServer {
	d := sha256Digest(body).String()
	return &blobServer{body: body, path: "/v2/r/blobs/" + d, digest: d}
}

func (b *blobServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.count.add(r.Method, r.URL.Path)
	if r.URL.Path != b.path {
		http.NotFound(w, r)
		return
	}
	if !b.noLength {
		w.Header().Set("Content-Length", strconv.Itoa(len(b.body)))
	}
	w.Header().Set("Docker-Content-Digest", b.digest)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	fl := w.(http.Flusher)
	fl.Flush()
	half := len(b.body) / 2
	write := func(p []byte) bool {
		step := b.chunk
		if step <= 0 {
			step = len(p)
		}
		for len(p) > 0 {
			n := min(step, len(p))
			if _, err := w.Write(p[:n]); err != nil {
				return false
			}
			fl.Flush()
			p = p[n:]
			if b.pause > 0 {
				time.Sleep(b.pause)
			}
		}
		return true
	}
	if !write(b.body[:half]) {
		return
	}
	if b.hold != nil {
		b.hold(w)
	}
	write(b.body[half:])
}

func blobRequest(body []byte) (string, Request) {
	d := sha256Digest(body).String()
	return "blob:" + d, Request{Path: "v2/r/blobs/" + d}
}

// refs is the reader count of the fill in flight for key (0 if none).
func (c *Client) refsOf(key string) (refs int, written int64) {
	c.fillMu.Lock()
	defer c.fillMu.Unlock()
	f := c.fills[key]
	if f == nil {
		return 0, 0
	}
	refs = f.refs
	if f.sp != nil {
		f.sp.mu.Lock()
		written = f.sp.written
		f.sp.mu.Unlock()
	}
	return refs, written
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestFillSharedColdFetch: 16 concurrent first requests for one 64 MiB
// blob cause exactly one upstream GET. Eight readers start before the
// body flows; eight more join when half of it has been received and
// still get it from byte 0. Every reader gets identical, complete bytes,
// and the cache commits exactly once.
func TestFillSharedColdFetch(t *testing.T) {
	body := randomBytes(64<<20, 1)
	srv := newBlobServer(body)
	halfway := make(chan struct{})
	srv.hold = func(http.ResponseWriter) { <-halfway }
	up := serve(t, srv)
	var once sync.Once
	open := func() { once.Do(func() { close(halfway) }) }
	t.Cleanup(open) // a failed test must not leave the server's Close waiting
	metrics := NewMetrics()
	c := newTestClient(t, Config{URL: up.URL, Metrics: metrics, Name: "shared"})
	stage := newMemStage()
	key, req := blobRequest(body)
	want := sha256.Sum256(body)

	var wg sync.WaitGroup
	sums := make([][32]byte, 16)
	errs := make([]error, 16)
	shared := make([]bool, 16)
	start := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Fill(context.Background(), FillRequest{Key: key, Request: req,
				Expect: Expect{Size: int64(len(body)), Digests: []Digest{sha256Digest(body)}}, Stage: stage.stage})
			if err != nil {
				errs[i] = err
				return
			}
			defer r.Close()
			shared[i] = r.Shared()
			if r.Size() != int64(len(body)) {
				errs[i] = fmt.Errorf("size %d", r.Size())
				return
			}
			h := sha256.New()
			if _, err := io.Copy(h, r); err != nil {
				errs[i] = err
				return
			}
			copy(sums[i][:], h.Sum(nil))
		}()
	}
	for i := range 8 {
		start(i)
	}
	half := int64(len(body) / 2)
	waitFor(t, "8 readers and half of the body", func() bool {
		refs, written := c.refsOf(key)
		return refs == 8 && written == half
	})
	for i := 8; i < 16; i++ {
		start(i)
	}
	waitFor(t, "16 readers", func() bool { refs, _ := c.refsOf(key); return refs == 16 })
	open()
	wg.Wait()

	nShared := 0
	for i := range 16 {
		if errs[i] != nil {
			t.Fatalf("reader %d: %v", i, errs[i])
		}
		if sums[i] != want {
			t.Fatalf("reader %d got different bytes", i)
		}
		if shared[i] {
			nShared++
		}
	}
	if n := srv.count.get(http.MethodGet, srv.path); n != 1 {
		t.Fatalf("upstream GETs: %d, want 1", n)
	}
	if nShared != 15 {
		t.Fatalf("%d readers joined, want 15", nShared)
	}
	select {
	case <-stage.commitCh:
	case <-time.After(30 * time.Second):
		t.Fatal("no commit")
	}
	committed, discarded := stage.snapshot()
	if len(committed) != 1 || discarded != 0 || !bytes.Equal(committed[0], body) {
		t.Fatalf("committed %d (discarded %d), want the body once", len(committed), discarded)
	}
	if got := testutil.ToFloat64(metrics.joins.WithLabelValues("shared")); got != 15 {
		t.Fatalf("joins metric %v", got)
	}
	if got := testutil.ToFloat64(metrics.fills.WithLabelValues("shared", "committed")); got != 1 {
		t.Fatalf("committed fills metric %v", got)
	}
	if got := testutil.ToFloat64(metrics.fillBytes.WithLabelValues("shared")); got != float64(len(body)) {
		t.Fatalf("fill bytes metric %v", got)
	}
	waitFor(t, "the fill to leave the table", func() bool { refs, _ := c.refsOf(key); return refs == 0 })
}

// TestFillContinuesWithoutClients: a client that disconnects mid-body, or
// before the headers, does not stop the fill: the cache ends complete.
func TestFillContinuesWithoutClients(t *testing.T) {
	body := randomBytes(8<<20, 2)
	t.Run("mid-body", func(t *testing.T) {
		srv := newBlobServer(body)
		srv.chunk, srv.pause = 256<<10, 5*time.Millisecond
		up := serve(t, srv)
		c := newTestClient(t, Config{URL: up.URL})
		stage := newMemStage()
		key, req := blobRequest(body)
		ctx, cancel := context.WithCancel(context.Background())
		r, err := c.Fill(ctx, FillRequest{Key: key, Request: req, Expect: Expect{Size: -1, Digests: []Digest{sha256Digest(body)}}, Stage: stage.stage})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(r, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		cancel() // the client goes away
		if _, err := r.Read(make([]byte, 1)); err == nil {
			// It may still get what is already spooled; a blocked read
			// must see the cancellation.
			for err == nil {
				_, err = r.Read(make([]byte, 64<<10))
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("read after cancel: %v", err)
			}
		}
		r.Close()
		select {
		case <-stage.commitCh:
		case <-time.After(30 * time.Second):
			t.Fatal("the fill did not commit after its client left")
		}
		committed, _ := stage.snapshot()
		if !bytes.Equal(committed[0], body) {
			t.Fatal("committed bytes differ")
		}
		if n := srv.count.get(http.MethodGet, srv.path); n != 1 {
			t.Fatalf("upstream GETs %d", n)
		}
	})
	t.Run("before-headers", func(t *testing.T) {
		srv := newBlobServer(body)
		release := make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			srv.ServeHTTP(w, r)
		})
		up := serve(t, h)
		c := newTestClient(t, Config{URL: up.URL})
		stage := newMemStage()
		key, req := blobRequest(body)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := c.Fill(ctx, FillRequest{Key: key, Request: req, Expect: Expect{Size: int64(len(body)), Digests: []Digest{sha256Digest(body)}}, Stage: stage.stage})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("fill: %v", err)
		}
		close(release)
		select {
		case <-stage.commitCh:
		case <-time.After(30 * time.Second):
			t.Fatal("the fill did not commit after its client left")
		}
		committed, _ := stage.snapshot()
		if !bytes.Equal(committed[0], body) {
			t.Fatal("committed bytes differ")
		}
	})
}

// sloppyStage returns a Staged whatever its reader said: the fill itself
// must refuse to commit a wrong body.
type sloppyStage struct{ memStage }

func (s *sloppyStage) stage(_ context.Context, body io.Reader) (Staged, error) {
	data, _ := io.ReadAll(body)
	return &memStaged{m: &s.memStage, data: data}, nil
}

// TestFillMismatch: a body that does not match its digest or length is
// never committed and its readers get an error, not io.EOF; the next
// request fetches again instead of joining the failed fill.
func TestFillMismatch(t *testing.T) {
	good := randomBytes(3<<20, 3)
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	cases := []struct {
		name   string
		served []byte
		expect Expect
		// early: Fill itself fails (the headers already tell).
		early    bool
		noLength bool
	}{
		{name: "digest", served: bad, expect: Expect{Size: int64(len(good)), Digests: []Digest{sha256Digest(good)}}},
		{name: "digest-unknown-size", served: bad, expect: Expect{Size: -1, Digests: []Digest{sha256Digest(good)}}, noLength: true},
		{name: "content-length", served: good[:len(good)-1], expect: Expect{Size: int64(len(good)), Digests: []Digest{sha256Digest(good)}}, early: true},
		{name: "too-long-chunked", served: append(bytes.Clone(good), 'x'), expect: Expect{Size: int64(len(good)), Digests: []Digest{sha256Digest(good)}}, noLength: true},
		{name: "too-short-chunked", served: good[:len(good)-10], expect: Expect{Size: int64(len(good))}, noLength: true},
		{name: "sha512", served: bad, expect: Expect{Size: -1, Digests: []Digest{sha512Digest(good)}}},
		{name: "sha1", served: bad, expect: Expect{Size: -1, Digests: []Digest{sha1Digest(good)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := &blobServer{body: tc.served, path: "/v2/r/blobs/x", noLength: tc.noLength, digest: sha256Digest(tc.served).String()}
			up := serve(t, srv)
			c := newTestClient(t, Config{URL: up.URL})
			for _, sloppy := range []bool{false, true} {
				ms := &sloppyStage{memStage: *newMemStage()}
				stage := ms.memStage.stage
				if sloppy {
					stage = ms.stage
				}
				r, err := c.Fill(context.Background(), FillRequest{Key: "blob:x", Request: Request{Path: "v2/r/blobs/x"}, Expect: tc.expect, Stage: stage})
				if tc.early {
					if e := asError(t, err); e.Kind != KindInvalid {
						t.Fatalf("fill: %v", err)
					}
				} else {
					if err != nil {
						t.Fatal(err)
					}
					_, err = io.ReadAll(r)
					if e := asError(t, err); e.Kind != KindInvalid {
						t.Fatalf("read: %v", err)
					}
					if _, werr := r.Wait(context.Background()); !IsKind(werr, KindInvalid) {
						t.Fatalf("wait: %v", werr)
					}
					r.Close()
				}
				committed, discarded := ms.snapshot()
				if len(committed) != 0 {
					t.Fatal("a wrong body was committed")
				}
				if sloppy && !tc.early && discarded != 1 {
					t.Fatalf("discarded %d, want 1", discarded)
				}
			}
			if n := srv.count.get(http.MethodGet, srv.path); n != 2 {
				t.Fatalf("upstream GETs %d, want 2 (a failed fill is not joined later)", n)
			}
		})
	}
}

func sha512Digest(b []byte) Digest {
	h, _, _ := SHA512.new()
	h.Write(b)
	return Digest{Algorithm: SHA512, Sum: h.Sum(nil)}
}

func sha1Digest(b []byte) Digest {
	h, _, _ := SHA1.new()
	h.Write(b)
	return Digest{Algorithm: SHA1, Sum: h.Sum(nil)}
}

// TestFillVerifiesEveryDigest: sha512 and sha1 (npm, Maven) verify and
// commit, and a fill with several digests needs them all.
func TestFillVerifiesEveryDigest(t *testing.T) {
	body := randomBytes(100_000, 4) // small: spooled in memory
	srv := &blobServer{body: body, path: "/pkg.tgz", digest: sha256Digest(body).String()}
	up := serve(t, srv)
	c := newTestClient(t, Config{URL: up.URL})
	stage := newMemStage()
	r, err := c.Fill(context.Background(), FillRequest{Key: "/pkg.tgz", Request: Request{Path: "/pkg.tgz"},
		Expect: Expect{Size: -1, Digests: []Digest{sha512Digest(body), sha1Digest(body)}}, Stage: stage.stage})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAllClose(t, r); !bytes.Equal(got, body) {
		t.Fatal("bytes differ")
	}
	res, err := r.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Size != int64(len(body)) || len(res.Digests) != 2 || res.Header.Get("Docker-Content-Digest") == "" {
		t.Fatalf("result %+v", res)
	}
	committed, _ := stage.snapshot()
	if len(committed) != 1 || !bytes.Equal(committed[0], body) {
		t.Fatal("not committed")
	}
}

// TestFillUpstreamFailures: a 404 fails the fill before any byte (and is
// negative-cached), a connection cut or a stall mid-body fails the
// readers with an *Error and commits nothing.
func TestFillUpstreamFailures(t *testing.T) {
	body := randomBytes(4<<20, 5)
	t.Run("not-found", func(t *testing.T) {
		srv := newBlobServer(body)
		up := serve(t, srv)
		c := newTestClient(t, Config{URL: up.URL})
		for i := range 2 {
			_, err := c.Fill(context.Background(), FillRequest{Key: "k", Request: Request{Path: "v2/r/blobs/missing"}, Expect: Expect{Size: -1}})
			if e := asError(t, err); e.Kind != KindNotFound || e.Cached != (i == 1) {
				t.Fatalf("fill %d: %+v", i, e)
			}
		}
		if n := srv.count.total(); n != 1 {
			t.Fatalf("upstream requests %d, want 1", n)
		}
	})
	t.Run("cut", func(t *testing.T) {
		srv := newBlobServer(body)
		srv.hold = func(w http.ResponseWriter) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			panic(http.ErrAbortHandler)
		}
		up := serve(t, srv)
		c := newTestClient(t, Config{URL: up.URL})
		stage := newMemStage()
		key, req := blobRequest(body)
		r, err := c.Fill(context.Background(), FillRequest{Key: key, Request: req, Expect: Expect{Size: int64(len(body)), Digests: []Digest{sha256Digest(body)}}, Stage: stage.stage})
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(r)
		r.Close()
		if e := asError(t, err); e.Kind != KindUnreachable && e.Kind != KindInvalid {
			t.Fatalf("read: %+v", e)
		}
		if committed, _ := stage.snapshot(); len(committed) != 0 {
			t.Fatal("committed a cut body")
		}
	})
	t.Run("stall", func(t *testing.T) {
		srv := newBlobServer(body)
		unblock := make(chan struct{})
		srv.hold = func(http.ResponseWriter) { <-unblock }
		up := serve(t, srv)
		t.Cleanup(func() { close(unblock) }) // before the server's Close
		c := newTestClient(t, Config{URL: up.URL, StallTimeout: 200 * time.Millisecond})
		stage := newMemStage()
		key, req := blobRequest(body)
		r, err := c.Fill(context.Background(), FillRequest{Key: key, Request: req, Expect: Expect{Size: int64(len(body)), Digests: []Digest{sha256Digest(body)}}, Stage: stage.stage})
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, r)
		r.Close()
		if e := asError(t, err); e.Kind != KindTimeout {
			t.Fatalf("read: %+v", e)
		}
		if n != int64(len(body)/2) {
			t.Fatalf("read %d bytes before the stall, want %d", n, len(body)/2)
		}
		if committed, _ := stage.snapshot(); len(committed) != 0 {
			t.Fatal("committed a stalled body")
		}
		if c.breaker.consecutiveFailures() != 1 {
			t.Fatalf("breaker failures %d, want 1", c.breaker.consecutiveFailures())
		}
	})
	t.Run("too-large", func(t *testing.T) {
		srv := newBlobServer(body)
		srv.noLength = true
		up := serve(t, srv)
		c := newTestClient(t, Config{URL: up.URL, MaxFillSize: 1 << 20})
		stage := newMemStage()
		key, req := blobRequest(body)
		r, err := c.Fill(context.Background(), FillRequest{Key: key, Request: req, Expect: Expect{Size: -1}, Stage: stage.stage})
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(r)
		r.Close()
		if e := asError(t, err); e.Kind != KindInvalid || !errors.Is(err, errTooLarge) {
			t.Fatalf("read: %v", err)
		}
		if committed, _ := stage.snapshot(); len(committed) != 0 {
			t.Fatal("committed an oversized body")
		}
		// With a Content-Length over the limit nothing is read at all.
		srv.noLength = false
		_, err = c.Fill(context.Background(), FillRequest{Key: key + "2", Request: req, Expect: Expect{Size: -1}})
		if !IsKind(err, KindInvalid) {
			t.Fatalf("fill: %v", err)
		}
	})
}

// TestFillSlowStage: a slow stage (store) does not slow the readers: they
// finish while the stage is still reading, and the commit follows.
func TestFillSlowStage(t *testing.T) {
	body := randomBytes(4<<20, 6)
	srv := newBlobServer(body)
	up := serve(t, srv)
	c := newTestClient(t, Config{URL: up.URL})
	stage := newMemStage()
	stage.delay = 5 * time.Millisecond // 64 reads of 64 KiB: >= 320 ms
	key, req := blobRequest(body)
	r, err := c.Fill(context.Background(), FillRequest{Key: key, Request: req, Expect: Expect{Size: int64(len(body)), Digests: []Digest{sha256Digest(body)}}, Stage: stage.stage})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAllClose(t, r); !bytes.Equal(got, body) {
		t.Fatal("bytes differ")
	}
	if committed, _ := stage.snapshot(); len(committed) != 0 {
		t.Fatal("the reader waited for the stage")
	}
	select {
	case <-stage.commitCh:
	case <-time.After(30 * time.Second):
		t.Fatal("no commit")
	}
}

// TestFillCloseWaits: Close lets a fill in flight finish, and cancels it
// once its context ends.
func TestFillCloseWaits(t *testing.T) {
	body := randomBytes(2<<20, 7)
	srv := newBlobServer(body)
	unblock := make(chan struct{})
	srv.hold = func(http.ResponseWriter) { <-unblock }
	up := serve(t, srv)
	c, err := New(Config{URL: up.URL, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	stage := newMemStage()
	key, req := blobRequest(body)
	r, err := c.Fill(context.Background(), FillRequest{Key: key, Request: req, Expect: Expect{Size: -1, Digests: []Digest{sha256Digest(body)}}, Stage: stage.stage})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := c.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v", err)
	}
	close(unblock)
	if committed, _ := stage.snapshot(); len(committed) != 0 {
		t.Fatal("a canceled fill committed")
	}
	if _, err := c.Fill(context.Background(), FillRequest{Key: key, Request: req}); !errors.Is(err, errClosed) {
		t.Fatalf("fill after close: %v", err)
	}
}

// TestFillRecheck: a caller that looked in its cache, missed, and calls
// Fill after another fill of the key committed and ended, gets ErrCached
// from Recheck without an upstream request; a recheck that misses fetches
// as before, and a recheck that fails is the fill's error.
func TestFillRecheck(t *testing.T) {
	body := randomBytes(4096, 3)
	srv := newBlobServer(body)
	up := serve(t, srv)
	c := newTestClient(t, Config{URL: up.URL, Name: "recheck"})
	key, req := blobRequest(body)
	fill := func(recheck func(context.Context) (bool, error)) error {
		r, err := c.Fill(context.Background(), FillRequest{Key: key, Request: req,
			Expect: Expect{Size: int64(len(body)), Digests: []Digest{sha256Digest(body)}}, Recheck: recheck})
		if err != nil {
			return err
		}
		defer r.Close()
		_, err = io.Copy(io.Discard, r)
		return err
	}
	if err := fill(func(context.Context) (bool, error) { return true, nil }); !errors.Is(err, ErrCached) {
		t.Fatalf("recheck found it cached: %v, want ErrCached", err)
	}
	if n := srv.count.total(); n != 0 {
		t.Fatalf("upstream requests after a cached recheck: %d, want 0", n)
	}
	broken := errors.New("cache unreadable")
	if err := fill(func(context.Context) (bool, error) { return false, broken }); !errors.Is(err, broken) {
		t.Fatalf("recheck failed: %v, want its error", err)
	}
	if err := fill(func(context.Context) (bool, error) { return false, nil }); err != nil {
		t.Fatalf("recheck missed: %v", err)
	}
	if n := srv.count.total(); n != 1 {
		t.Fatalf("upstream requests: %d, want 1", n)
	}
}
