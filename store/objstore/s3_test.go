package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// s3Backend is a store on a real S3 server (versitygw), reached through a
// proxy that counts the bytes this process sends.
type s3Backend struct {
	*Store
	proxy  *ocitools.CountingProxy
	client *s3.Client
	bucket string
}

// newS3Bucket starts an S3 server for the test, creates a bucket on it
// and opens it.
func newS3Bucket(t testing.TB) *Store {
	t.Helper()
	st, _ := openS3Bucket(t, ocitools.StartS3(t, "objstore-test"), "")
	return st
}

// openS3Bucket creates a bucket of its own on srv and opens it, through
// endpoint when not "" (a proxy in front of the server).
func openS3Bucket(t testing.TB, srv *ocitools.S3Server, endpoint string) (*Store, string) {
	t.Helper()
	url, name := srv.NewBucket(t, endpoint)
	st, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, name
}

func newS3Backend(t *testing.T) *s3Backend {
	t.Helper()
	srv := ocitools.StartS3(t, "objstore-test")
	proxy := ocitools.NewCountingProxy(t, strings.TrimPrefix(srv.Endpoint, "http://"))
	st, name := openS3Bucket(t, srv, "http://"+proxy.Addr)
	b := &s3Backend{Store: st, proxy: proxy, bucket: name}
	if !st.Bucket().As(&b.client) {
		t.Fatal("s3 bucket does not expose *s3.Client")
	}
	return b
}

// multipartUploads lists the bucket's unfinished multipart uploads.
func (b *s3Backend) multipartUploads(t *testing.T) []string {
	t.Helper()
	out, err := b.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(b.bucket)})
	if err != nil {
		t.Fatalf("list multipart uploads: %v", err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

// writeParts writes data as an upload cut at cuts and returns its parts.
func writeParts(t testing.TB, u *Upload, data []byte, cuts []int) []Part {
	t.Helper()
	h := sha256.New()
	var parts []Part
	for i := 0; i+1 < len(cuts); i++ {
		p, err := u.Write(context.Background(), int64(cuts[i]), bytes.NewReader(data[cuts[i]:cuts[i+1]]), h, -1)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("hash differs")
	}
	return parts
}

// TestS3Compose promotes multi-part uploads on a real S3 server: parts
// that fit S3's multipart limits are composed by the server (the process
// sends request headers, not the data), smaller ones are streamed, the
// object carries the upload's content type and metadata either way, and a
// part that vanished before the commit aborts the multipart upload and
// creates nothing.
func TestS3Compose(t *testing.T) {
	ctx := context.Background()
	b := newS3Backend(t)
	meta := map[string]string{"checksum-sha1": "0123456789abcdef0123456789abcdef01234567"}

	promote := func(t *testing.T, data []byte, cuts []int, mutate func(u *Upload, parts []Part)) (key string, sent int64, err error) {
		t.Helper()
		ns, id := uuid.New(), uuid.New()
		u, err := b.OpenUpload(ctx, ns, id)
		if err != nil {
			t.Fatal(err)
		}
		u.SetMetadata(meta)
		parts := writeParts(t, u, data, cuts)
		if mutate != nil {
			mutate(u, parts)
		}
		key = BlobKey(ns, sha256.Sum256(data))
		before := b.proxy.Sent()
		err = u.Promote(ctx, parts, int64(len(data)), key)
		sent = b.proxy.Sent() - before
		t.Logf("promote of %d bytes in %d parts: sent %d bytes, err %v", len(data), len(parts), sent, err)
		if derr := b.DeleteUpload(ctx, ns, id); derr != nil {
			t.Fatal(derr)
		}
		return key, sent, err
	}
	check := func(t *testing.T, key string, data []byte) {
		t.Helper()
		got, err := b.Bucket().ReadAll(ctx, key)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back: %v (equal=%v, %d bytes)", err, bytes.Equal(got, data), len(got))
		}
		attrs, err := b.Bucket().Attributes(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if attrs.ContentType != contentType || attrs.Metadata["checksum-sha1"] != meta["checksum-sha1"] || attrs.Size != int64(len(data)) {
			t.Fatalf("attributes: type %q metadata %v size %d", attrs.ContentType, attrs.Metadata, attrs.Size)
		}
		if ups := b.multipartUploads(t); len(ups) != 0 {
			t.Fatalf("multipart uploads left: %v", ups)
		}
	}

	t.Run("server-side", func(t *testing.T) {
		const mib = 1 << 20
		data := randBytes(3*5*mib+12345, 1)
		key, sent, err := promote(t, data, []int{0, 5 * mib, 10 * mib, 15 * mib, len(data)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, key, data)
		// Four UploadPartCopy requests and three more: headers and a few
		// hundred bytes of XML, nowhere near the 15 MiB of data.
		if sent > 256<<10 {
			t.Fatalf("the commit sent %d bytes: it streamed the data", sent)
		}
	})
	t.Run("prefixed-bucket", func(t *testing.T) {
		// A bucket URL with prefix=: our own requests must add the prefix
		// that gocloud adds to its own.
		ps, err := Open(ctx, "s3://"+b.bucket+"?endpoint=http://"+b.proxy.Addr+"&region=us-east-1&use_path_style=true&prefix=tenant%20a/")
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close()
		ns, id := uuid.New(), uuid.New()
		u, err := ps.OpenUpload(ctx, ns, id)
		if err != nil {
			t.Fatal(err)
		}
		data := randBytes(s3MinPart+10, 6)
		parts := writeParts(t, u, data, []int{0, s3MinPart, len(data)})
		key := BlobKey(ns, sha256.Sum256(data))
		before := b.proxy.Sent()
		if err := u.Promote(ctx, parts, int64(len(data)), key); err != nil {
			t.Fatal(err)
		}
		if sent := b.proxy.Sent() - before; sent > 256<<10 {
			t.Fatalf("the commit sent %d bytes: it streamed the data", sent)
		}
		if err := ps.DeleteUpload(ctx, ns, id); err != nil {
			t.Fatal(err)
		}
		got, err := b.Bucket().ReadAll(ctx, "tenant a/"+key)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back under the prefix: %v (equal=%v)", err, bytes.Equal(got, data))
		}
	})
	t.Run("small-parts-streamed", func(t *testing.T) {
		data := randBytes(3*copyBufSize+777, 2)
		key, sent, err := promote(t, data, []int{0, copyBufSize, 2 * copyBufSize, len(data)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, key, data)
		if sent < int64(len(data)) {
			t.Fatalf("the commit sent %d bytes of %d: parts under 5 MiB cannot be composed by S3", sent, len(data))
		}
	})
	t.Run("forced-stream", func(t *testing.T) {
		b.SetStreamCompose(true)
		defer b.SetStreamCompose(false)
		data := randBytes(2*s3MinPart+5, 3)
		key, sent, err := promote(t, data, []int{0, s3MinPart, 2 * s3MinPart, len(data)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		check(t, key, data)
		if sent < int64(len(data)) {
			t.Fatalf("streamed compose sent only %d bytes of %d", sent, len(data))
		}
	})
	t.Run("server-lists-multipart-uploads", func(t *testing.T) {
		// The "nothing left" checks below rely on the server listing an
		// unfinished multipart upload.
		key := aws.String("probe/" + uuid.NewString())
		mpu, err := b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b.bucket), Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if ups := b.multipartUploads(t); len(ups) != 1 || ups[0] != *key {
			t.Fatalf("unfinished uploads listed: %v, want [%s]", ups, *key)
		}
		if _, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(b.bucket), Key: key, UploadId: mpu.UploadId}); err != nil {
			t.Fatal(err)
		}
		if ups := b.multipartUploads(t); len(ups) != 0 {
			t.Fatalf("aborted upload still listed: %v", ups)
		}
	})
	t.Run("part-missing", func(t *testing.T) {
		data := randBytes(3*s3MinPart+99, 4)
		key, _, err := promote(t, data, []int{0, s3MinPart, 2 * s3MinPart, 3 * s3MinPart, len(data)}, func(u *Upload, parts []Part) {
			if err := b.Delete(ctx, partKey(u.prefix, parts[1])); err != nil {
				t.Fatal(err)
			}
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("promote with a part deleted: %v, want ErrNotFound", err)
		}
		if ok, err := b.Exists(ctx, key); err != nil || ok {
			t.Fatalf("blob object after a failed compose: exists=%v %v", ok, err)
		}
		if ups := b.multipartUploads(t); len(ups) != 0 {
			t.Fatalf("multipart uploads not aborted: %v", ups)
		}
	})
	t.Run("part-short", func(t *testing.T) {
		// A part object shorter than the upload state records (its bytes
		// were lost) must fail the compose, never produce a short blob.
		data := randBytes(2*s3MinPart+10, 5)
		key, _, err := promote(t, data, []int{0, s3MinPart, 2 * s3MinPart, len(data)}, func(u *Upload, parts []Part) {
			if err := b.WriteAll(ctx, partKey(u.prefix, parts[1]), data[:s3MinPart-1]); err != nil {
				t.Fatal(err)
			}
		})
		if err == nil {
			t.Fatal("promote of a short part succeeded")
		}
		if ok, err := b.Exists(ctx, key); err != nil || ok {
			t.Fatalf("blob object after a failed compose: exists=%v %v", ok, err)
		}
		if ups := b.multipartUploads(t); len(ups) != 0 {
			t.Fatalf("multipart uploads not aborted: %v", ups)
		}
	})
}

func TestServerComposable(t *testing.T) {
	p := func(sizes ...int64) []Part {
		var out []Part
		var off int64
		for _, s := range sizes {
			out = append(out, Part{Offset: off, Size: s})
			off += s
		}
		return out
	}
	many := make([]int64, s3MaxParts+1)
	for i := range many {
		many[i] = s3MinPart
	}
	for _, c := range []struct {
		parts []Part
		want  bool
	}{
		{p(s3MinPart, 1), true},
		{p(s3MinPart, s3MinPart, s3MaxPart), true},
		{p(s3MinPart), false}, // one part: a plain copy
		{p(s3MinPart-1, 1), false},
		{p(s3MinPart, s3MaxPart+1), false},
		{p(s3MinPart, 0), false},
		{p(many[:s3MaxParts]...), true},
		{p(many...), false},
	} {
		if got := serverComposable(c.parts); got != c.want {
			t.Errorf("%d parts: composable = %v, want %v", len(c.parts), got, c.want)
		}
	}
}

func TestCopySource(t *testing.T) {
	if got, want := copySource("bkt", "a b/c+d/e"), "bkt/a%20b/c+d/e"; got != want {
		t.Fatalf("copySource = %q, want %q", got, want)
	}
}

// An empty object reads as empty through a zero-length range on every
// backend (S3 refuses any byte range of an empty object), and a missing
// one is ErrNotFound.
func TestEmptyObjectRange(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			if err := st.WriteAll(ctx, "empty", nil); err != nil {
				t.Fatal(err)
			}
			r, err := st.NewRangeReader(ctx, "empty", 0, 0)
			if err != nil {
				t.Fatalf("zero-length range of an empty object: %v", err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil || len(b) != 0 {
				t.Fatalf("read %d bytes, %v", len(b), err)
			}
			if _, err := st.NewRangeReader(ctx, "missing", 0, 0); !errors.Is(err, ErrNotFound) {
				t.Fatalf("zero-length range of a missing object: %v", err)
			}
		})
	}
}
