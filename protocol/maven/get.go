package maven

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/protocol/blobredirect"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// get serves GET and HEAD of a file, a metadata document or a checksum
// sidecar of a hosted target; f is the file access found, nil when none.
func (h *handler) get(w http.ResponseWriter, r *http.Request, t *mavenstore.Target, q *request, f *mavenstore.File) error {
	var err error
	if f == nil {
		err = mavenstore.FileNotFound(q.ref)
	}
	f, content, err := h.complete(r.Context(), t, q.ref, f, err, q.checksum == "")
	if err != nil {
		return err
	}
	return h.serveHosted(w, r, t, q, f, content)
}

// serveHosted answers with what find found: the stored file f, or the
// rendered metadata content, or a checksum of either.
func (h *handler) serveHosted(w http.ResponseWriter, r *http.Request, t *mavenstore.Target, q *request, f *mavenstore.File, content []byte) error {
	ctx := r.Context()
	if q.checksum != "" {
		var sum string
		if f != nil {
			var ok bool
			if sum, ok = f.Checksums.Hex(q.checksum); !ok {
				return newErr(http.StatusNotFound, "no %s checksum stored for %s", q.checksum, q.ref)
			}
		} else {
			sum = checksumOf(q.checksum, content)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", cacheControl(q))
		httpsafe.Attachment(w.Header(), q.name)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader([]byte(sum)))
		return nil
	}
	hdr := w.Header()
	hdr.Set("Content-Type", contentType(q.ref.FileName))
	hdr.Set("Cache-Control", cacheControl(q))
	httpsafe.Attachment(hdr, q.name)
	if f == nil {
		// Metadata rendered on the fly (no stored document yet).
		hdr.Set("ETag", `"`+checksumOf(mavenlayout.SHA1, content)+`"`)
		hdr.Set("X-Checksum-Sha1", checksumOf(mavenlayout.SHA1, content))
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(content))
		return nil
	}
	sha1hex, _ := f.Checksums.Hex(mavenlayout.SHA1)
	hdr.Set("ETag", `"`+sha1hex+`"`)
	hdr.Set("X-Checksum-Sha1", sha1hex)
	if md5hex, ok := f.Checksums.Hex(mavenlayout.MD5); ok {
		hdr.Set("X-Checksum-Md5", md5hex)
	}
	sha256hex, _ := f.Checksums.Hex(mavenlayout.SHA256)
	hdr.Set("X-Checksum-Sha256", sha256hex)
	// A download of a version file (not a range, a revalidation, a
	// checksum or metadata) is counted: buffered counters.
	count := func() { h.count(h.maven.DownloadCount(t, f)) }
	if h.redirect(w, r, q, &f.Blob) {
		if blobredirect.Whole(r) {
			count()
		}
		return nil
	}
	br := &blobReader{ctx: ctx, st: h.st, blob: &f.Blob}
	defer br.Close()
	if r.Method != http.MethodGet {
		http.ServeContent(w, r, "", time.Time{}, br)
		return nil
	}
	// Open before any header is written, so a missing object is an error
	// response and not a truncated body.
	if err := br.open(0); err != nil {
		return err
	}
	sw := &statusWriter{ResponseWriter: w}
	http.ServeContent(sw, r, "", time.Time{}, br)
	if sw.status == http.StatusOK {
		count()
	}
	return nil
}

// redirect sends a GET of a stored file to a signed URL of its object
// (blobredirect), reporting whether it did.
func (h *handler) redirect(w http.ResponseWriter, r *http.Request, q *request, b *store.Blob) bool {
	return blobredirect.Redirect(w, r, h.st, h.log, b, contentType(q.ref.FileName), q.name)
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// find looks a file up: the stored row, or for metadata with no stored
// document the rendered bytes, or for a non-timestamped SNAPSHOT file
// name the latest timestamped build. The file's blob row is read only
// withBlob: a checksum needs the row alone.
func (h *handler) find(ctx context.Context, t *mavenstore.Target, ref mavenstore.FileRef, withBlob bool) (*mavenstore.File, []byte, error) {
	f, err := h.maven.FileRow(ctx, t, ref)
	return h.complete(ctx, t, ref, f, err, withBlob)
}

// complete is find once the stored row of ref was looked up: f, or err.
func (h *handler) complete(ctx context.Context, t *mavenstore.Target, ref mavenstore.FileRef, f *mavenstore.File, err error, withBlob bool) (*mavenstore.File, []byte, error) {
	if err != nil && store.HasCode(err, mavenstore.CodeNotFound) {
		switch {
		case ref.FileName == mavenlayout.MetadataFile:
			content, err := h.maven.RenderMetadata(ctx, t, ref)
			return nil, content, err
		case mavenlayout.IsSnapshotVersion(ref.Version):
			name, rerr := h.maven.ResolveSnapshotFile(ctx, t, ref)
			if rerr != nil {
				return nil, nil, err
			}
			ref.FileName = name
			f, err = h.maven.FileRow(ctx, t, ref)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if withBlob {
		if err := h.maven.FileBlob(ctx, t, f); err != nil {
			return nil, nil, err
		}
	}
	return f, nil, nil
}

// cacheControl: release files never change; metadata and SNAPSHOT files
// do.
func cacheControl(q *request) string {
	if q.isMetadata() || mavenlayout.IsSnapshotVersion(q.ref.Version) {
		return "no-cache"
	}
	return "public, max-age=31536000, immutable"
}

func checksumOf(alg mavenlayout.ChecksumAlgorithm, b []byte) string {
	switch alg {
	case mavenlayout.MD5:
		s := md5.Sum(b)
		return hex.EncodeToString(s[:])
	case mavenlayout.SHA1:
		s := sha1.Sum(b)
		return hex.EncodeToString(s[:])
	case mavenlayout.SHA256:
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	case mavenlayout.SHA512:
		s := sha512.Sum512(b)
		return hex.EncodeToString(s[:])
	}
	return ""
}

// blobReader is an io.ReadSeeker over a blob for http.ServeContent (Range
// requests): Seek only moves the offset; Read (re)opens the object at the
// offset when the open reader is elsewhere.
type blobReader struct {
	ctx   context.Context
	st    *store.Store
	blob  *store.Blob
	off   int64
	rc    io.ReadCloser
	rcOff int64
}

func (b *blobReader) open(off int64) error {
	if b.rc != nil {
		_ = b.rc.Close()
		b.rc = nil
	}
	rc, err := b.st.OpenBlobObject(b.ctx, b.blob, off, -1)
	if err != nil {
		return err
	}
	b.rc, b.rcOff = rc, off
	return nil
}

func (b *blobReader) Read(p []byte) (int, error) {
	if b.off >= b.blob.Size {
		return 0, io.EOF
	}
	if b.rc == nil || b.rcOff != b.off {
		if err := b.open(b.off); err != nil {
			return 0, err
		}
	}
	n, err := b.rc.Read(p)
	b.off += int64(n)
	b.rcOff += int64(n)
	return n, err
}

func (b *blobReader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = b.off + offset
	case io.SeekEnd:
		abs = b.blob.Size + offset
	default:
		return 0, fmt.Errorf("blobReader: bad whence %d", whence)
	}
	if abs < 0 {
		return 0, errors.New("blobReader: negative position")
	}
	b.off = abs
	return abs, nil
}

func (b *blobReader) Close() error {
	if b.rc != nil {
		return b.rc.Close()
	}
	return nil
}
