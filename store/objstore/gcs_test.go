package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gocloud.dev/blob"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	_ "github.com/artifact-registry/artifact-registry/store/objstore/gcs" // gs://
)

// TestGCSCompose promotes multi-part uploads on a GCS API server
// (fake-gcs-server, reached through a proxy that counts the bytes this
// process sends and receives): the parts are composed by the server, 32 at
// a time and chained beyond that, the object carries the upload's content
// type and metadata, intermediates are deleted, and a missing or short
// part fails the promote without creating the blob object.
func TestGCSCompose(t *testing.T) {
	ctx := context.Background()
	srv, proxy := ocitools.StartGCS(t)
	st, err := Open(ctx, srv.NewBucket(t, "objstore-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	meta := map[string]string{"checksum-sha1": "0123456789abcdef0123456789abcdef01234567"}

	promote := func(t *testing.T, data []byte, nparts int, mutate func(u *Upload, parts []Part)) (string, int64, error) {
		t.Helper()
		ns, id := uuid.New(), uuid.New()
		u, err := st.OpenUpload(ctx, ns, id)
		if err != nil {
			t.Fatal(err)
		}
		u.SetMetadata(meta)
		cuts := []int{0}
		for i := 1; i < nparts; i++ {
			cuts = append(cuts, i*len(data)/nparts)
		}
		parts := writeParts(t, u, data, append(cuts, len(data)))
		if mutate != nil {
			mutate(u, parts)
		}
		key := BlobKey(ns, sha256.Sum256(data))
		before := proxy.Sent() + proxy.Received()
		err = u.Promote(ctx, parts, int64(len(data)), key)
		moved := proxy.Sent() + proxy.Received() - before
		t.Logf("promote of %d bytes in %d parts: %d bytes through the proxy, err %v", len(data), len(parts), moved, err)
		for _, k := range listKeys(t, st, ns.String()+"/uploads/") {
			if strings.Contains(k, "/compose-") {
				t.Fatalf("intermediate object left: %s", k)
			}
		}
		if derr := st.DeleteUpload(ctx, ns, id); derr != nil {
			t.Fatal(derr)
		}
		if left := listKeys(t, st, ns.String()+"/uploads/"); len(left) != 0 {
			t.Fatalf("upload objects left: %v", left)
		}
		return key, moved, err
	}
	t.Run("server-side", func(t *testing.T) {
		for _, n := range []int{2, 32, 40} { // one compose; the limit; chained
			data := randBytes(2<<20+n, uint64(n))
			key, moved, err := promote(t, data, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.Bucket().ReadAll(ctx, key)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%d parts: read back: %v (equal=%v)", n, err, bytes.Equal(got, data))
			}
			if moved > 256<<10 {
				t.Fatalf("%d parts: %d bytes went through this process: the parts were streamed", n, moved)
			}
			attrs, err := st.Bucket().Attributes(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if attrs.ContentType != contentType || attrs.Metadata["checksum-sha1"] != meta["checksum-sha1"] || attrs.Size != int64(len(data)) {
				t.Fatalf("%d parts: attributes: type %q metadata %v size %d", n, attrs.ContentType, attrs.Metadata, attrs.Size)
			}
		}
	})
	t.Run("part-missing", func(t *testing.T) {
		data := randBytes(1<<20, 7)
		key, _, err := promote(t, data, 40, func(u *Upload, parts []Part) {
			if err := st.Delete(ctx, partKey(u.prefix, parts[35])); err != nil {
				t.Fatal(err)
			}
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("promote with a part deleted: %v, want ErrNotFound", err)
		}
		if ok, err := st.Exists(ctx, key); err != nil || ok {
			t.Fatalf("blob object after a failed compose: exists=%v %v", ok, err)
		}
	})
	t.Run("part-short", func(t *testing.T) {
		data := randBytes(1<<20, 8)
		key, _, err := promote(t, data, 3, func(u *Upload, parts []Part) {
			if err := st.WriteAll(ctx, partKey(u.prefix, parts[1]), data[:10]); err != nil {
				t.Fatal(err)
			}
		})
		if err == nil || !strings.Contains(err.Error(), "expected") {
			t.Fatalf("promote of a short part: %v", err)
		}
		if ok, err := st.Exists(ctx, key); err != nil || ok {
			t.Fatalf("blob object after a failed compose: exists=%v %v", ok, err)
		}
	})
	t.Run("forced-stream", func(t *testing.T) {
		st.SetStreamCompose(true)
		defer st.SetStreamCompose(false)
		data := randBytes(1<<20+3, 9)
		key, moved, err := promote(t, data, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := st.Bucket().ReadAll(ctx, key); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back: %v", err)
		}
		if moved < int64(len(data)) {
			t.Fatalf("streamed compose moved only %d bytes of %d", moved, len(data))
		}
	})
}

// newGCSBucket starts a GCS API server for the test and opens a new
// bucket on it.
func newGCSBucket(t *testing.T) *Store {
	t.Helper()
	srv, _ := ocitools.StartGCS(t)
	st, err := Open(context.Background(), srv.NewBucket(t, "objstore-test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func listKeys(t *testing.T, st *Store, prefix string) []string {
	t.Helper()
	var out []string
	it := st.Bucket().List(&blob.ListOptions{Prefix: prefix})
	for {
		a, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a.Key)
	}
}
