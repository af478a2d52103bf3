package store

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// hangingListener is a TCP server that accepts connections, reads what
// they send and never answers: storage that stopped responding (a dead
// load balancer, a stuck gateway).
type hangingListener struct {
	ln    net.Listener
	conns atomic.Int64
	mu    sync.Mutex
	open  []net.Conn
}

func newHangingListener(t *testing.T) *hangingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingListener{ln: ln}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.conns.Add(1)
			h.mu.Lock()
			h.open = append(h.open, c)
			h.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(io.Discard, c) // until the client or Cleanup closes it
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		h.mu.Lock()
		for _, c := range h.open {
			c.Close()
		}
		h.mu.Unlock()
		wg.Wait()
	})
	return h
}

// hangingS3Store opens the real gocloud s3:// driver against h, with dummy
// credentials and no shared AWS config, so every storage call the store
// makes blocks until its context ends.
func hangingS3Store(t *testing.T, h *hangingListener) *objstore.Store {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	url := "s3://bkt?endpoint=http://" + h.ln.Addr().String() + "&region=us-east-1&use_path_style=true"
	objects, err := objstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objects.Close() })
	return objects
}

// TestAttachObjectCheckBoundHangingStorage: blobs with live GC candidates
// make Attach check their objects under the blob-row locks. With storage
// that accepts connections and never answers, an Attach of more digests
// than run in parallel fails with CodeRetryable once the one shared
// ObjectCheckTimeout has passed, leaves its transaction able to roll back,
// and changes nothing.
func TestAttachObjectCheckBoundHangingStorage(t *testing.T) {
	f := newBlobFixture(t, "mem", Options{})
	ctx := context.Background()
	const n = 20 // more than the 8 checks that run at once
	digests := make([][32]byte, n)
	for i := range digests {
		digests[i] = f.put(t, content(100+i)).Blob.SHA256
	}
	f.detach(t, f.attach(t, digests...)...)
	before := f.candidates(t)
	if len(before) != n {
		t.Fatalf("%d candidates, want %d", len(before), n)
	}

	h := newHangingListener(t)
	hs := New(f.pool, hangingS3Store(t, h), Options{Clock: f.clock, ObjectCheckTimeout: 300 * time.Millisecond})
	tx, err := hs.begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = hs.Attach(ctx, tx, f.ns, digests)
	if !HasCode(err, CodeRetryable) {
		t.Fatalf("attach against hanging storage: %v, want CodeRetryable", err)
	}
	if HasCode(err, CodeBlobMustReupload) {
		t.Fatalf("a check that did not finish reported a missing object: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("rollback after the failed attach: %v", err)
	}
	// Checks queued behind the first 8 start after the shared deadline and
	// fail without reaching storage.
	if c := h.conns.Load(); c < 1 || c > 8 {
		t.Fatalf("hanging storage saw %d connections, want 1..8", c)
	}
	after := f.candidates(t)
	for _, d := range digests {
		if f.attachmentCount(t, d) != 0 {
			t.Fatalf("attachment of %s left behind", FormatSHA256(d))
		}
		if !after[d].Equal(before[d]) {
			t.Fatalf("candidate of %s changed: %v -> %v", FormatSHA256(d), before[d], after[d])
		}
	}
	// Storage back: the same attach through a working store goes through.
	f.attach(t, digests...)
	if len(f.candidates(t)) != 0 {
		t.Fatal("candidates not cleared by the retried attach")
	}
}

// TestCommitObjectCheckBoundHangingStorage: the dedup commit of a blob
// with a live candidate checks its object under the blob-row lock. Against
// storage that never answers it fails with CodeRetryable after
// ObjectCheckTimeout, keeps the session (the client's retry works) and
// changes nothing. The blob is empty, so the commit writes no part and the
// check is the only storage call it makes.
func TestCommitObjectCheckBoundHangingStorage(t *testing.T) {
	f := newBlobFixture(t, "mem", Options{})
	ctx := context.Background()
	var empty []byte
	sha := f.put(t, empty).Blob.SHA256
	f.detach(t, f.attach(t, sha)...)
	before := f.candidates(t)

	h := newHangingListener(t)
	hs := New(f.pool, hangingS3Store(t, h), Options{Clock: f.clock, ObjectCheckTimeout: 300 * time.Millisecond})
	u, err := hs.StartUpload(ctx, f.ns, f.repo, UploadMonolithic)
	if err != nil {
		t.Fatal(err)
	}
	res, err := hs.CommitUpload(ctx, u.Ref(), nil, want(empty))
	if !HasCode(err, CodeRetryable) {
		t.Fatalf("dedup commit against hanging storage: %+v %v, want CodeRetryable", res, err)
	}
	if h.conns.Load() < 1 {
		t.Fatal("the commit never reached storage")
	}
	if got := f.count(t, `SELECT count(*) FROM upload_sessions WHERE namespace_id = $1 AND upload_id = $2`, f.ns, u.Ref().UploadID); got != 1 {
		t.Fatalf("%d sessions after the failed commit, want the session kept", got)
	}
	if got := f.count(t, `SELECT count(*) FROM blob_storage_blobs WHERE namespace_id = $1`, f.ns); got != 1 {
		t.Fatalf("%d blob rows, want 1", got)
	}
	if after := f.candidates(t); len(after) != 1 || !after[sha].Equal(before[sha]) {
		t.Fatalf("candidate changed: %v -> %v", before, after)
	}
	// The retry of the same session on a working store deduplicates.
	res, err = f.store.CommitUpload(ctx, u.Ref(), bytes.NewReader(empty), want(empty))
	if err != nil || !res.Deduplicated || !res.ObjectChecked || res.Reuploaded {
		t.Fatalf("retried commit: %+v %v", res, err)
	}
	err = f.store.WithTx(ctx, func(tx pgx.Tx) error {
		_, err := f.store.Attach(ctx, tx, f.ns, [][32]byte{sha})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAttachObjectCheckBoundSlowStorage: the checks of one Attach share one
// ObjectCheckTimeout. Every object exists, on a real S3 server behind a
// link that holds each request for 400 ms, and the bound is 1 s: 24
// checks, 8 at a time, cannot all finish by the deadline (each eight start
// when a check of the previous eight has answered, so the last eight answer
// at >= 1.2 s), so the Attach fails with CodeRetryable and changes nothing,
// although every single check fits a bound of its own.
func TestAttachObjectCheckBoundSlowStorage(t *testing.T) {
	f := newS3Fixture(t, Options{})
	ctx := context.Background()
	const n = 24
	digests := make([][32]byte, n)
	for i := range digests {
		digests[i] = f.put(t, content(200+i)).Blob.SHA256
	}
	f.detach(t, f.attach(t, digests...)...)
	before := f.candidates(t)

	slow := ocitools.NewSlowProxy(t, f.proxy.Addr, 400*time.Millisecond)
	objects, err := objstore.Open(ctx, "s3://"+f.bucket+"?endpoint=http://"+slow.Addr+"&region=us-east-1&use_path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objects.Close() })
	ss := New(f.pool, objects, Options{Clock: f.clock, ObjectCheckTimeout: time.Second})
	// One check alone fits its bound: the storage is slow, not broken.
	if ok, err := ss.objectExists(ctx, objstore.BlobKey(f.ns, digests[0])); err != nil || !ok {
		t.Fatalf("single check through the slow link: %v %v", ok, err)
	}
	err = ss.WithTx(ctx, func(tx pgx.Tx) error {
		_, err := ss.Attach(ctx, tx, f.ns, digests)
		return err
	})
	if !HasCode(err, CodeRetryable) {
		t.Fatalf("attach of %d digests through the slow link: %v, want CodeRetryable", n, err)
	}
	after := f.candidates(t)
	for _, d := range digests {
		if f.attachmentCount(t, d) != 0 || !after[d].Equal(before[d]) {
			t.Fatalf("failed attach changed the state of %s", FormatSHA256(d))
		}
	}
}
