package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// brokenReader is a client whose request body breaks after some bytes.
type brokenReader struct{ n int }

func (r *brokenReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := min(len(p), r.n)
	r.n -= n
	return n, nil
}

// TestUnreachableStoreIsUnavailable: every bucket call to an S3 endpoint
// that refuses connections is ErrUnavailable (a 503 for the surfaces),
// while on a reachable store a missing object stays ErrNotFound and a
// client's broken body stays the client's error.
func TestUnreachableStoreIsUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := ocitools.StartS3(t, "objstore-test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close()
	down, _ := openS3Bucket(t, srv, closed)
	ns, id := uuid.New(), uuid.New()
	key := BlobKey(ns, sha256.Sum256([]byte("x")))

	errCreate := errors.New("create upload failed")
	calls := []struct {
		name string
		call func() error
		err  error
	}{
		{name: "exists", call: func() error { _, err := down.Exists(ctx, key); return err }},
		{name: "size", call: func() error { _, err := down.Size(ctx, key); return err }},
		{name: "open", call: func() error { _, err := down.NewRangeReader(ctx, key, 0, -1); return err }},
		{name: "write part", call: func() error {
			upload, err := down.CreateOpenUpload(ctx, ns, id, nil)
			if err != nil {
				t.Errorf("create upload (its marker is best effort): %v", err)
				return errCreate
			}
			_, err = upload.Write(ctx, 0, bytes.NewReader([]byte("data")), sha256.New(), -1)
			return err
		}},
		{name: "write all", call: func() error { return down.WriteAll(ctx, key, []byte("x")) }},
		{name: "delete", call: func() error { return down.Delete(ctx, key) }},
		{name: "delete upload", call: func() error { return down.DeleteUpload(ctx, ns, id) }},
	}
	// Each call spends the client's retries and their backoff, a few
	// seconds, before it gives up: the calls run at once.
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { calls[i].err = calls[i].call() })
	}
	wg.Wait()
	for _, c := range calls {
		if !errors.Is(c.err, ErrUnavailable) {
			t.Errorf("%s on an unreachable store: %v, want ErrUnavailable", c.name, c.err)
		}
	}

	up, _ := openS3Bucket(t, srv, "")
	if _, err := up.Size(ctx, key); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnavailable) {
		t.Errorf("missing object: %v, want ErrNotFound only", err)
	}
	u, err := up.CreateOpenUpload(ctx, ns, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = u.Write(ctx, 0, &brokenReader{n: 1 << 20}, sha256.New(), -1)
	if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrUnavailable) {
		t.Errorf("client's broken body: %v, want its own error, not ErrUnavailable", err)
	}
}
