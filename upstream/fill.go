package upstream

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"time"
)

// Expect is what a fill's body must be for it to be committed.
type Expect struct {
	// Size is the exact length; < 0 when unknown (then only the
	// upstream's Content-Length, if any, is checked).
	Size int64
	// Digests must all match the body. Without any, the body is
	// committed as the upstream sent it (mutable documents: Maven
	// metadata, npm packuments).
	Digests []Digest
}

// Staged is the caller's write of a fill's body into its storage (an
// upload session, a staged blob), waiting for the verdict.
type Staged interface {
	// Commit makes the staged bytes part of the cache. It is called only
	// after the whole body was read through the stage's reader and its
	// length and every expected digest matched.
	Commit(ctx context.Context, res *FillResult) error
	// Discard removes what was staged. It is called instead of Commit
	// when the body turned out wrong, and after a Commit that failed.
	Discard(ctx context.Context)
}

// StageFunc writes a fill's body into the caller's storage. body yields
// the upstream's bytes as they arrive and returns io.EOF only once they
// are complete and verified; on a mismatch or an upstream failure its
// Read returns that error, and StageFunc should clean up what it wrote
// and return an error. It runs on the fill's context, not a client's.
type StageFunc func(ctx context.Context, body io.Reader) (Staged, error)

// FillRequest describes one fill.
type FillRequest struct {
	// Key identifies the content within this client's remote: concurrent
	// Fill calls with the same key share one upstream request ("blob:"
	// + digest, a path). Callers that ask for the same key must ask for
	// the same content: the first caller's Request, Expect and Stage are
	// the ones used.
	Key string
	// Request is the upstream GET (Method is ignored).
	Request Request
	Expect  Expect
	// Stage receives the body for the cache; nil streams it to the
	// readers without caching anything.
	Stage StageFunc
	// Recheck, when set, is asked by the call that would start a new
	// upstream request, before it does: true means the content is cached
	// after all, and every call sharing the fill gets ErrCached. A caller
	// looks in its cache and then calls Fill; a fill of the same key that
	// committed and ended in between would otherwise be fetched again.
	Recheck func(ctx context.Context) (bool, error)
}

// ErrCached is Fill's answer when FillRequest.Recheck found the content
// cached: read it from the cache.
var ErrCached = errors.New("upstream: cached meanwhile")

// FillResult describes a body that was received completely and matched
// what was expected.
type FillResult struct {
	Size int64
	// Digests are the expected digests, verified.
	Digests []Digest
	// Header is the upstream's response header (Content-Type, ETag,
	// Docker-Content-Digest, Last-Modified).
	Header http.Header
}

// fill is one upstream fetch shared by every FillReader of its key.
type fill struct {
	c   *Client
	key string
	req FillRequest

	ready  chan struct{} // closed when header and spool are set, or err
	err    error         // the failure before ready
	header http.Header
	size   int64
	sp     *spool

	done   chan struct{} // closed when the commit outcome is known
	result *FillResult
	resErr error
	// hashes are the running digests of Expect.Digests, in order.
	hashes []hash.Hash

	// Under c.fillMu.
	refs     int
	finished bool
	// dropped: the entry left c.fills (a failed fill must not be joined
	// by later requests; a finished one leaves when its last reader
	// does).
	dropped bool
}

var errClosed = errors.New("upstream client closed")

// Fill returns a reader of the content the request names, shared with
// every concurrent Fill of the same key: the first call starts the
// upstream request, the others join it. Each reader receives the whole
// body from byte 0, as fast as it arrives and at its own pace (the fill
// spools it; a slow reader never slows the fetch or the other readers).
//
// Fill returns once the upstream's response headers are in (Size and
// Header are then known) or the request failed (an *Error: not found,
// offline, ...). The fill goes on when the readers go: it is bounded by
// Config.MaxFillTime and MaxFillSize, not by ctx, which only bounds this
// caller's wait and reads. Close the reader.
func (c *Client) Fill(ctx context.Context, fr FillRequest) (*FillReader, error) {
	if fr.Key == "" {
		return nil, errors.New("upstream: fill without a key")
	}
	for _, d := range fr.Expect.Digests {
		if err := d.valid(); err != nil {
			return nil, fmt.Errorf("upstream: fill %s: %w", fr.Key, err)
		}
	}
	c.fillMu.Lock()
	if c.closed {
		c.fillMu.Unlock()
		return nil, errClosed
	}
	f, shared := c.fills[fr.Key]
	if shared && f.failed() {
		// Its entry is about to go; a new fetch may well succeed.
		shared = false
	}
	if !shared {
		f = &fill{c: c, key: fr.Key, req: fr, ready: make(chan struct{}), done: make(chan struct{})}
		c.fills[fr.Key] = f
		c.fillWG.Add(1)
	} else {
		c.metrics.joins.Inc()
	}
	f.refs++
	c.fillMu.Unlock()
	if !shared {
		f.start(ctx)
	}

	select {
	case <-f.ready:
	case <-ctx.Done():
		f.release()
		return nil, ctx.Err()
	}
	if f.err != nil {
		f.release()
		return nil, f.err
	}
	return &FillReader{f: f, r: follower{s: f.sp, ctx: ctx}, shared: shared}, nil
}

// FillReader is one reader of a fill.
type FillReader struct {
	f      *fill
	r      follower
	shared bool
	closed bool
}

// Read reads the body; io.EOF comes only after the whole body arrived and
// matched its expected length and digests. A mismatch is an *Error of
// KindInvalid, a broken upstream another *Error, the end of the caller's
// context its error.
func (r *FillReader) Read(p []byte) (int, error) { return r.r.Read(p) }

// WriteTo copies the rest of the body to w (io.Copy uses it).
func (r *FillReader) WriteTo(w io.Writer) (int64, error) { return r.r.WriteTo(w) }

// Close releases the reader; the fill goes on.
func (r *FillReader) Close() error {
	if !r.closed {
		r.closed = true
		r.f.release()
	}
	return nil
}

// Size is the body's length: the upstream's Content-Length, else the
// expected size, else -1.
func (r *FillReader) Size() int64 { return r.f.size }

// Header is the upstream's response header (do not modify it).
func (r *FillReader) Header() http.Header { return r.f.header }

// Shared reports whether this reader joined a fill another caller had
// started.
func (r *FillReader) Shared() bool { return r.shared }

// Wait waits until the fill has finished: the result once committed (or,
// without a Stage, streamed in full), else why not.
func (r *FillReader) Wait(ctx context.Context) (*FillResult, error) {
	select {
	case <-r.f.done:
		return r.f.result, r.f.resErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// failed reports whether the fill already failed, before or after its
// headers (c.fillMu held, which guards sp).
func (f *fill) failed() bool {
	select {
	case <-f.ready:
	default:
		return false
	}
	if f.err != nil {
		return true
	}
	if f.sp == nil {
		return false
	}
	f.sp.mu.Lock()
	defer f.sp.mu.Unlock()
	return f.sp.done && f.sp.err != nil
}

func (f *fill) release() {
	c := f.c
	c.fillMu.Lock()
	defer c.fillMu.Unlock()
	f.refs--
	if f.refs == 0 && f.finished {
		f.drop()
	}
}

// drop removes the entry (c.fillMu held) and, with no reader left, the
// spool.
func (f *fill) drop() {
	if !f.dropped {
		f.dropped = true
		if f.c.fills[f.key] == f {
			delete(f.c.fills, f.key)
		}
	}
	if f.refs == 0 && f.sp != nil {
		f.sp.close()
		f.sp = nil
	}
}

// start runs the fill, unless Recheck finds the content cached or cannot
// tell; then the fill fails with ErrCached or that error, without an
// upstream request, and is not joined any more.
func (f *fill) start(ctx context.Context) {
	if f.req.Recheck == nil {
		go f.run()
		return
	}
	cached, err := f.req.Recheck(ctx)
	switch {
	case err != nil:
		err = fmt.Errorf("upstream: fill %s: recheck the cache: %w", f.key, err)
	case cached:
		err = ErrCached
	default:
		go f.run()
		return
	}
	f.err, f.resErr = err, err
	close(f.ready)
	close(f.done)
	c := f.c
	c.fillMu.Lock()
	f.finished = true
	f.drop()
	c.fillMu.Unlock()
	c.fillWG.Done()
}

// fillBuffer is the size of one upstream read.
const fillBuffer = 256 << 10

func (f *fill) run() {
	c := f.c
	defer c.fillWG.Done()
	ctx, cancel := context.WithTimeout(c.fillCtx, c.cfg.MaxFillTime)
	defer cancel()
	c.metrics.inFlight.Inc()
	defer c.metrics.inFlight.Dec()

	outcome, err := f.fetch(ctx)
	c.metrics.fill(outcome)

	c.fillMu.Lock()
	f.finished = true
	if err != nil || f.refs == 0 {
		f.drop()
	}
	c.fillMu.Unlock()
}

// fetch runs the fill and returns its metrics outcome and error.
func (f *fill) fetch(ctx context.Context) (outcome string, err error) {
	c := f.c
	exp := f.req.Expect
	fail := func(outcome string, err error) (string, error) {
		f.err = err
		close(f.ready)
		f.resErr = err
		close(f.done)
		return outcome, err
	}
	req := f.req.Request
	req.Method = http.MethodGet
	resp, err := c.Do(ctx, &req)
	if err != nil {
		return fail("upstream_error", err)
	}
	if resp.StatusCode == http.StatusNotModified {
		// A conditional fill (Request.Header with If-None-Match or
		// If-Modified-Since) whose cached copy is still current: an
		// *Error with Status 304, which the caller takes as confirmation.
		resp.Body.Close()
		return fail("not_modified", &Error{Kind: KindInvalid, Status: resp.StatusCode, msg: "answered 304: not modified"})
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fail("upstream_error", &Error{Kind: KindInvalid, Status: resp.StatusCode,
			msg: fmt.Sprintf("answered %d where content was expected", resp.StatusCode)})
	}
	size := resp.ContentLength
	if exp.Size >= 0 && size >= 0 && size != exp.Size {
		resp.Body.Close()
		return fail("mismatch", &Error{Kind: KindInvalid, msg: fmt.Sprintf("announced %d bytes, %d expected", size, exp.Size)})
	}
	limit := c.cfg.MaxFillSize
	if exp.Size >= 0 {
		size = exp.Size
		limit = min(limit, exp.Size)
	}
	if size > limit {
		resp.Body.Close()
		return fail("too_large", &Error{Kind: KindInvalid, msg: fmt.Sprintf("content exceeds the %d byte limit", limit)})
	}
	sp, err := newSpool(c.cfg.SpoolDir, size, c.cfg.MemorySpool)
	if err != nil {
		resp.Body.Close()
		return fail("stage_failed", fmt.Errorf("upstream: spool: %w", err))
	}
	c.fillMu.Lock() // drop reads sp under it
	f.header, f.size, f.sp = resp.Header, size, sp
	c.fillMu.Unlock()
	close(f.ready)

	// The stage follows the spool like any reader: a slow store does not
	// slow the clients, nor they the store.
	var (
		staged   Staged
		stageErr error
		stager   = &follower{s: sp, ctx: ctx}
	)
	stageDone := make(chan struct{})
	if f.req.Stage != nil {
		go func() {
			defer close(stageDone)
			staged, stageErr = f.req.Stage(ctx, stager)
		}()
	} else {
		close(stageDone)
	}

	total, rerr := f.receive(resp.Body, sp, limit, exp.Size >= 0)
	resp.Body.Close()
	if rerr != nil && ctx.Err() != nil && errors.Is(rerr, ctx.Err()) {
		rerr = newError(KindTimeout, "fill stopped at its time limit or at shutdown", rerr)
	}
	if rerr == nil {
		rerr = f.verify(total, exp)
	}
	sp.finish(rerr)
	<-stageDone

	cleanup := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	}
	discard := func() {
		if staged != nil {
			dctx, cancel := cleanup()
			staged.Discard(dctx)
			cancel()
		}
	}
	defer close(f.done)
	switch {
	case rerr != nil:
		discard()
		f.resErr = rerr
		switch {
		case IsKind(rerr, KindInvalid) && errors.Is(rerr, errTooLarge):
			return "too_large", rerr
		case IsKind(rerr, KindInvalid):
			return "mismatch", rerr
		}
		return "upstream_error", rerr
	case f.req.Stage == nil:
		f.result = &FillResult{Size: total, Digests: exp.Digests, Header: f.header}
		return "streamed", nil
	case stageErr != nil:
		discard()
		f.resErr = fmt.Errorf("upstream: staging the fill: %w", stageErr)
		return "stage_failed", f.resErr
	case !stager.eof:
		discard()
		f.resErr = errors.New("upstream: the stage returned before reading the whole body")
		return "stage_failed", f.resErr
	}
	res := &FillResult{Size: total, Digests: exp.Digests, Header: f.header}
	if err := staged.Commit(ctx, res); err != nil {
		discard()
		f.resErr = fmt.Errorf("upstream: committing the fill: %w", err)
		return "commit_failed", f.resErr
	}
	f.result = res
	return "committed", nil
}

var errTooLarge = errors.New("content exceeds the fill size limit")

// receive copies the upstream body into the spool, hashing it, and stops
// at limit bytes (exact: limit is the expected size).
func (f *fill) receive(body io.Reader, sp *spool, limit int64, exact bool) (int64, error) {
	c := f.c
	f.hashes = f.hashes[:0]
	for _, d := range f.req.Expect.Digests {
		h, _, _ := d.Algorithm.new()
		f.hashes = append(f.hashes, h)
	}
	buf := make([]byte, fillBuffer)
	var total int64
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if total+int64(n) > limit {
				if exact {
					return total, &Error{Kind: KindInvalid, msg: "sent more than the expected length"}
				}
				return total, &Error{Kind: KindInvalid, msg: "content exceeds the fill size limit", cause: errTooLarge}
			}
			for _, h := range f.hashes {
				h.Write(buf[:n])
			}
			if werr := sp.write(buf[:n]); werr != nil {
				return total, fmt.Errorf("upstream: spool: %w", werr)
			}
			total += int64(n)
			c.metrics.fillBytes.Add(float64(n))
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (f *fill) verify(total int64, exp Expect) error {
	if exp.Size >= 0 && total != exp.Size {
		return &Error{Kind: KindInvalid, msg: fmt.Sprintf("sent %d bytes, %d expected", total, exp.Size)}
	}
	for i, d := range exp.Digests {
		sum := f.hashes[i].Sum(nil)
		if !(Digest{Algorithm: d.Algorithm, Sum: sum}).Equal(d) {
			return &Error{Kind: KindInvalid, msg: "content does not match its " + string(d.Algorithm) + " digest"}
		}
	}
	return nil
}
