// Package objstore is the object-storage side of the store: content-addressed
// blob objects and temporary upload data, kept in one bucket opened through
// gocloud.dev/blob from a URL (file://, mem://, s3://, gs://, azblob://).
//
// Key layout (one prefix per namespace, docs/garbage-collection.md rule 5):
//
//	<namespace-id>/blobs/sha256/<ab>/<hex>       content-addressed blob object
//	<namespace-id>/uploads/<upload-id>           temporary upload data (file backend: one file)
//	<namespace-id>/uploads/<upload-id>/<off>-<n> temporary upload parts (other backends)
//
// The full blob key is what blob_storage_blobs.object_storage_key stores.
//
// Bytes are hashed while they stream in, exactly once (CopyHash), and are not
// written twice where the backend allows it: on the file backend an upload is
// one file appended in place and moved to its blob key by rename(2); on other
// backends each chunk is its own object (object stores cannot append) and the
// commit is a server-side copy (one part), a server-side compose of several
// parts (S3: a multipart upload of UploadPartCopy, within S3's multipart
// limits; GCS: compose requests), or a streamed compose (several parts
// otherwise, and on Azure).
//
// On the file backend the bucket is still a gocloud fileblob bucket (reads,
// existence checks and deletes of blobs go through it); only the upload data
// is handled with plain file operations under the same root directory, using
// the same key-to-path mapping as fileblob for the keys this package builds
// (they contain only [0-9a-f/-] so fileblob's escaping is the identity).
// There a blob's user metadata (the SHA-1 a client supplied; x-amz-meta-*
// on S3) is kept as user.* extended attributes of its file, which the
// rename carries with the bytes, and in fileblob's <file>.attrs sidecar
// only on a file system without them; Store.Attributes reads either.
package objstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob" // s3://
	"gocloud.dev/gcerrors"

	"github.com/artifact-registry/artifact-registry/store/objstore/driver"
)

// ErrNotFound reports a missing object (or missing upload data).
var ErrNotFound = errors.New("objstore: object not found")

// ErrBusy reports that another writer holds the upload (file backend lock).
var ErrBusy = errors.New("objstore: upload is being written by another writer")

// Store is a bucket plus the knowledge of how this package lays keys out.
// It is safe for concurrent use.
type Store struct {
	bucket *blob.Bucket
	// fileRoot is the absolute root directory of a file:// bucket, "" for
	// every other backend.
	fileRoot string
	// s3 addresses an s3:// bucket through the AWS SDK client (server-side
	// compose); nil for every other backend.
	s3 *s3Target
	// driver is the scheme's, when one is registered (package driver);
	// url is the bucket URL it was opened with.
	driver driver.Driver
	url    *url.URL
	// streamCompose forces the streamed compose (SetStreamCompose).
	streamCompose atomic.Bool
	// uploadMarks are the namespaces whose uploads marker this process
	// tried to write (markUploads).
	uploadMarks sync.Map
}

// SetStreamCompose forces (true) or allows again (false) the streamed
// compose of multi-part uploads on S3, where they are otherwise composed
// server-side: for an S3-compatible server whose UploadPartCopy misbehaves,
// and for benchmarks comparing the two.
func (s *Store) SetStreamCompose(on bool) { s.streamCompose.Store(on) }

// Open opens the bucket named by rawURL. A file:// URL gets the file fast
// paths (append in place, rename on commit); its directory is created when
// missing.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("objstore: parse bucket URL: %w", err)
	}
	if u.Scheme == fileblob.Scheme {
		root, err := fileRootOf(u)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(root, 0o777); err != nil {
			return nil, fmt.Errorf("objstore: create bucket directory: %w", err)
		}
		// Our own writes never go through fileblob's writer, but keep its
		// temporary files next to their targets so they never cross a mount.
		b, err := fileblob.OpenBucket(root, &fileblob.Options{NoTempDir: true})
		if err != nil {
			return nil, fmt.Errorf("objstore: open %s: %w", redact(u), err)
		}
		return &Store{bucket: b, fileRoot: root}, nil
	}
	b, err := blob.OpenBucket(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("objstore: open %s: %w", redact(u), err)
	}
	st := &Store{bucket: b}
	if u.Scheme == s3blob.Scheme {
		if st.s3, err = s3TargetOf(u); err != nil {
			b.Close()
			return nil, err
		}
		return st, nil
	}
	st.driver, st.url = driver.Lookup(u.Scheme), u
	return st, nil
}

// NewMem returns a store over a fresh in-memory bucket (tests).
func NewMem() *Store { return &Store{bucket: memblob.OpenBucket(nil)} }

// New wraps an already open bucket. Two stores wrapping the same bucket see
// the same objects (useful with mem:// buckets, which are per-Open).
func New(b *blob.Bucket) *Store { return &Store{bucket: b} }

// fileRootOf mirrors fileblob.URLOpener: host "." means a relative path.
func fileRootOf(u *url.URL) (string, error) {
	p := u.Path
	if u.Host == "." || os.PathSeparator != '/' {
		p = strings.TrimPrefix(p, "/")
	}
	if p == "" {
		return "", errors.New("objstore: file URL without a path")
	}
	abs, err := filepath.Abs(filepath.FromSlash(p))
	if err != nil {
		return "", fmt.Errorf("objstore: bucket path: %w", err)
	}
	return abs, nil
}

func redact(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	return c.String()
}

// Close closes the bucket.
func (s *Store) Close() error { return s.bucket.Close() }

// Bucket exposes the underlying bucket (tests, tools).
func (s *Store) Bucket() *blob.Bucket { return s.bucket }

// IsFile reports whether the store has the file-backend fast paths.
func (s *Store) IsFile() bool { return s.fileRoot != "" }

// BlobKey is the content-addressed key of a blob in a namespace.
func BlobKey(namespaceID uuid.UUID, sha256 [32]byte) string {
	h := hex.EncodeToString(sha256[:])
	return namespaceID.String() + "/blobs/sha256/" + h[:2] + "/" + h
}

// UploadKey is the temporary key (file backend) or key prefix (other
// backends, followed by "/") of an upload.
func UploadKey(namespaceID, uploadID uuid.UUID) string {
	return namespaceID.String() + "/uploads/" + uploadID.String()
}

// path maps a key built by this package to its file on the file backend.
func (s *Store) path(key string) string {
	return filepath.Join(s.fileRoot, filepath.FromSlash(key))
}

// Exists reports whether an object exists.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	ok, err := s.bucket.Exists(ctx, key)
	if err != nil {
		return false, fmt.Errorf("objstore: stat %s: %w", key, bucketErr(err))
	}
	return ok, nil
}

// Size returns the size of an object, ErrNotFound when it is missing.
func (s *Store) Size(ctx context.Context, key string) (int64, error) {
	a, err := s.bucket.Attributes(ctx, key)
	if err != nil {
		return 0, wrapErr("stat", key, err)
	}
	return a.Size, nil
}

// Attributes returns an object's attributes with the user metadata it was
// promoted with (Upload.SetMetadata), which the file backend keeps in the
// file's extended attributes where it can; ErrNotFound when it is missing.
func (s *Store) Attributes(ctx context.Context, key string) (*blob.Attributes, error) {
	a, err := s.bucket.Attributes(ctx, key)
	if err != nil {
		return nil, wrapErr("stat", key, err)
	}
	if !s.IsFile() {
		return a, nil
	}
	meta, err := fileMetadata(s.path(key))
	if err != nil {
		return nil, err
	}
	if meta != nil {
		// Without a sidecar fileblob guesses a type from the bytes.
		a.Metadata, a.ContentType = meta, contentType
	}
	return a, nil
}

// NewRangeReader opens length bytes of an object from offset (length < 0:
// to the end).
func (s *Store) NewRangeReader(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if length == 0 {
		// For a zero-length read the S3 driver asks for one byte, which S3
		// refuses (416) on an empty object, such as the empty blob; only
		// whether the object exists matters here.
		if _, err := s.bucket.Attributes(ctx, key); err != nil {
			return nil, wrapErr("open", key, err)
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	r, err := s.bucket.NewRangeReader(ctx, key, offset, length, nil)
	if err != nil {
		return nil, wrapErr("open", key, err)
	}
	return pooledReader{r}, nil
}

// pooledReader copies an object out with a pooled buffer. io.Copy hands
// the copy to the bucket reader's WriteTo, which allocates and zeroes a
// fresh 1 MiB buffer each time unless the writer is an io.ReaderFrom (a
// response writer behind middleware is not): for a small npm tarball that
// was a seventh of the server's CPU per download.
type pooledReader struct{ *blob.Reader }

// readBufSize is the download copy's buffer. Smaller than copyBufSize
// because each chunk is copied twice by the kernel (file to buffer, buffer
// to socket): at 256 KiB the chunk is still in the core's cache for the
// second copy, at 1 MiB it is not (BenchmarkLargeImage/pull on a 2 MiB-L2
// machine: 800-873 MB/s with 1 MiB, 860-914 with 256 KiB).
const readBufSize = 256 << 10

var readBufPool = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

// WriteTo implements io.WriterTo.
func (r pooledReader) WriteTo(w io.Writer) (int64, error) {
	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	// Only Read is visible to CopyBuffer, so it cannot recurse into the
	// bucket reader's WriteTo.
	return io.CopyBuffer(w, struct{ io.Reader }{r.Reader}, *bp)
}

// Delete deletes an object; a missing object counts as deleted.
func (s *Store) Delete(ctx context.Context, key string) error {
	err := s.bucket.Delete(ctx, key)
	if err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("objstore: delete %s: %w", key, bucketErr(err))
	}
	return nil
}

// WriteAll writes an object in one go (tests and small objects).
func (s *Store) WriteAll(ctx context.Context, key string, p []byte) error {
	if err := s.bucket.WriteAll(ctx, key, p, &blob.WriterOptions{ContentType: contentType}); err != nil {
		return fmt.Errorf("objstore: write %s: %w", key, bucketErr(err))
	}
	return nil
}

const contentType = "application/octet-stream"

func wrapErr(op, key string, err error) error {
	if gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("objstore: %s %s: %w", op, key, ErrNotFound)
	}
	return fmt.Errorf("objstore: %s %s: %w", op, key, bucketErr(err))
}
