package store

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/objstore"
	_ "github.com/artifact-registry/artifact-registry/store/objstore/gcs" // gs://
)

// s3Fixture is a blobFixture whose objects live on a real S3 server
// (versitygw), reached through a proxy that counts the bytes this process
// sends to it.
type s3Fixture struct {
	*blobFixture
	proxy  *ocitools.CountingProxy
	client *s3.Client
	bucket string
}

// newS3Bucket starts an S3 server for the test, creates a bucket on it
// and opens it.
func newS3Bucket(t testing.TB) *objstore.Store {
	t.Helper()
	objects, _ := openS3Bucket(t, ocitools.StartS3(t, "store-test"), "")
	return objects
}

// openS3Bucket creates a bucket of its own on srv and opens it, through
// endpoint when not "" (a proxy in front of the server). It returns the
// store and the bucket name.
func openS3Bucket(t testing.TB, srv *ocitools.S3Server, endpoint string) (*objstore.Store, string) {
	t.Helper()
	url, name := srv.NewBucket(t, endpoint)
	objects, err := objstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objects.Close() })
	return objects, name
}

// newGCSBucket starts a GCS API server (fake-gcs-server) for the test,
// creates a bucket on it and opens it.
func newGCSBucket(t testing.TB) *objstore.Store {
	t.Helper()
	srv, _ := ocitools.StartGCS(t)
	objects, err := objstore.Open(context.Background(), srv.NewBucket(t, "store-test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { objects.Close() })
	return objects
}

func newS3Fixture(t *testing.T, opts Options) *s3Fixture {
	t.Helper()
	srv := ocitools.StartS3(t, "store-test")
	proxy := ocitools.NewCountingProxy(t, strings.TrimPrefix(srv.Endpoint, "http://"))
	objects, bucket := openS3Bucket(t, srv, "http://"+proxy.Addr)
	f := &blobFixture{pool: testdb.New(t), objects: objects, clock: newFakeClock(), backend: "s3"}
	if opts.Clock == nil {
		opts.Clock = f.clock
	}
	f.store = New(f.pool, f.objects, opts)
	f.ns = f.newNamespace(t)
	f.repo = f.newRepository(t, f.ns)
	sf := &s3Fixture{blobFixture: f, proxy: proxy, bucket: bucket}
	if !objects.Bucket().As(&sf.client) {
		t.Fatal("s3 bucket does not expose *s3.Client")
	}
	return sf
}

func (f *s3Fixture) multipartUploads(t *testing.T) int {
	t.Helper()
	out, err := f.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(f.bucket)})
	if err != nil {
		t.Fatalf("list multipart uploads: %v", err)
	}
	return len(out.Uploads)
}

// chunkedUpload starts a resumable upload and appends data cut at cuts
// (the last chunk is left for the commit).
func (f *s3Fixture) chunkedUpload(t *testing.T, data []byte, cuts []int) *Upload {
	t.Helper()
	ctx := context.Background()
	u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(cuts); i++ {
		if _, err := f.store.AppendUpload(ctx, u.Ref(), int64(cuts[i]), bytes.NewReader(data[cuts[i]:cuts[i+1]])); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// TestS3ChunkedCommit commits chunked uploads through the store on a real
// S3 server: chunks of 5 MiB are composed by the server (the commit sends
// the small last chunk and request headers, not the blob), smaller chunks
// are streamed, and both give the right bytes, digest, content type and
// SHA-1 metadata, with no temporary object or multipart upload left. A
// chunk object lost before the commit aborts the multipart upload and
// leaves no blob row and no blob object.
func TestS3ChunkedCommit(t *testing.T) {
	f := newS3Fixture(t, Options{})
	ctx := context.Background()
	const mib = 1 << 20

	commit := func(t *testing.T, data []byte, cuts []int) (*CommitResult, int64) {
		t.Helper()
		last := cuts[len(cuts)-2]
		u := f.chunkedUpload(t, data, cuts[:len(cuts)-1])
		w := want(data)
		s1 := sha1.Sum(data)
		w.SHA1 = &s1
		before := f.proxy.Sent()
		res, err := f.store.CommitUpload(ctx, u.Ref(), bytes.NewReader(data[last:]), w)
		sent := f.proxy.Sent() - before
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
		if !res.Created || res.Blob.Size != int64(len(data)) || res.Blob.SHA256 != w.SHA256 {
			t.Fatalf("commit result: %+v", res)
		}
		r, _, err := f.store.OpenBlob(ctx, f.ns, w.SHA256, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back: %v (equal=%v, %d bytes)", err, bytes.Equal(got, data), len(got))
		}
		attrs, err := f.objects.Attributes(ctx, res.Blob.ObjectStorageKey)
		if err != nil {
			t.Fatal(err)
		}
		if attrs.ContentType != "application/octet-stream" || attrs.Metadata[SHA1MetadataKey] != hex.EncodeToString(s1[:]) {
			t.Fatalf("object attributes: type %q metadata %v", attrs.ContentType, attrs.Metadata)
		}
		if keys := f.uploadKeys(t); len(keys) != 0 {
			t.Fatalf("upload data left: %v", keys)
		}
		if n := f.multipartUploads(t); n != 0 {
			t.Fatalf("%d multipart uploads left", n)
		}
		return res, sent
	}

	t.Run("server-side", func(t *testing.T) {
		data := randomBytes(3*5*mib+100<<10, 21)
		_, sent := commit(t, data, []int{0, 5 * mib, 10 * mib, 15 * mib, len(data)})
		// The last chunk (100 KiB) plus requests; the 15 MiB already stored
		// are copied by the server.
		if sent > 1*mib {
			t.Fatalf("the commit sent %d bytes: the chunks were streamed", sent)
		}
	})
	t.Run("small-chunks-streamed", func(t *testing.T) {
		data := randomBytes(3*mib+4321, 22)
		_, sent := commit(t, data, []int{0, mib, 2 * mib, 3 * mib, len(data)})
		if sent < int64(len(data)) {
			t.Fatalf("the commit sent %d bytes of %d: chunks under 5 MiB must be streamed", sent, len(data))
		}
	})
	t.Run("chunk-lost", func(t *testing.T) {
		data := randomBytes(3*5*mib+7, 23)
		u := f.chunkedUpload(t, data, []int{0, 5 * mib, 10 * mib, 15 * mib})
		keys := f.uploadKeys(t)
		if len(keys) != 3 {
			t.Fatalf("upload objects: %v", keys)
		}
		if err := f.objects.Delete(ctx, keys[1]); err != nil { // the chunk at 5 MiB
			t.Fatal(err)
		}
		_, err := f.store.CommitUpload(ctx, u.Ref(), bytes.NewReader(data[15*mib:]), want(data))
		if !HasCode(err, CodeUploadUnknown) {
			t.Fatalf("commit with a lost chunk: %v, want CodeUploadUnknown", err)
		}
		if n := f.multipartUploads(t); n != 0 {
			t.Fatalf("%d multipart uploads left after the failed commit", n)
		}
		sha := want(data).SHA256
		if n := f.count(t, `SELECT count(*) FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`, f.ns, sha[:]); n != 0 {
			t.Fatalf("%d blob rows after the failed commit", n)
		}
		if ok, err := f.objects.Exists(ctx, objstore.BlobKey(f.ns, sha)); err != nil || ok {
			t.Fatalf("blob object after the failed commit: exists=%v %v", ok, err)
		}
		if err := f.store.CancelUpload(ctx, u.Ref()); err != nil {
			t.Fatal(err)
		}
		if keys := f.uploadKeys(t); len(keys) != 0 {
			t.Fatalf("upload data left after cancel: %v", keys)
		}
	})
}
