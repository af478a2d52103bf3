package npm

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/artifact-registry/artifact-registry/store"
)

// receivedTarball is a publish's tarball, staged in the blob layer while
// the body streamed in, with what the publish checks against the client's
// metadata.
type receivedTarball struct {
	blob       *store.StagedBlob
	size       int64
	sha512     [sha512.Size]byte
	sha1       [sha1.Size]byte
	shrinkwrap bool // npm-shrinkwrap.json at the package root
	gyp        bool // binding.gyp at the package root
}

// discard drops the staged bytes of a tarball that is not published (a
// no-op once the publish took it, and on nil).
func (t *receivedTarball) discard(ctx context.Context) {
	if t != nil && t.blob != nil {
		t.blob.Close(ctx, false)
	}
}

// errTarballTooLarge: the decoded tarball passed MaxTarballSize.
var errTarballTooLarge = errors.New("npm: tarball too large")

// errUnpackedTooLarge: the tarball expands past MaxUnpackedSize.
var errUnpackedTooLarge = errors.New("npm: tarball expands too far")

// cappedReader fails with err once more than n bytes went through.
type cappedReader struct {
	r    io.Reader
	n    int64
	err  error
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.n < 0 {
		c.over = true
		return 0, c.err
	}
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	if c.n < 0 {
		c.over = true
		return n, c.err
	}
	return n, err
}

// writeRecorder keeps the first error its writer returned.
type writeRecorder struct {
	w   io.Writer
	err error
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// errRecorder keeps the first error other than io.EOF its reader returned,
// so that an error can be traced to its layer after the readers above
// wrapped or replaced it.
type errRecorder struct {
	r   io.Reader
	err error
}

func (e *errRecorder) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// receiveTarball decodes the base64 of a publish's data string into a
// staged upload, in one pass and without holding the tarball: the decoded
// bytes are hashed (SHA-512, SHA-1; the store hashes SHA-256) and
// inspected as a gzip-compressed tar (inspectTarball, in a goroutine fed
// through a pipe) while they are written. A refused tarball leaves
// nothing staged.
func (h *handler) receiveTarball(req *request, repo *store.NpmRepository, data io.Reader) (*receivedTarball, error) {
	src := &errRecorder{r: data}
	dec := &errRecorder{r: base64.NewDecoder(base64.StdEncoding, src)}
	capped := &cappedReader{r: dec, n: h.opts.MaxTarballSize, err: errTarballTooLarge}
	s512, s1 := sha512.New(), sha1.New()
	pr, pw := io.Pipe()
	type inspection struct {
		shrinkwrap, gyp bool
		err             error
	}
	inspected := make(chan inspection, 1)
	go func() {
		var in inspection
		in.shrinkwrap, in.gyp, in.err = inspectTarball(pr, h.opts.MaxUnpackedSize)
		if in.err != nil {
			_ = pr.CloseWithError(in.err) // stops the upload: the tarball is refused
		} else {
			_, _ = io.Copy(io.Discard, pr) // what follows the archive's end
		}
		inspected <- in
	}()
	ctx := req.r.Context()
	toInspect := &writeRecorder{w: pw}
	blob, err := h.st.StageStream(ctx, store.UploadRef{NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID},
		io.TeeReader(capped, io.MultiWriter(s512, s1, toInspect)))
	_ = pw.CloseWithError(err) // nil: the inspection sees the end
	in := <-inspected
	t := &receivedTarball{blob: blob, shrinkwrap: in.shrinkwrap, gyp: in.gyp}
	refused := in.err != nil && (toInspect.err != nil || err == nil && blob.Size() > 0)
	if err := tarballError(src.err, dec.err, capped.over, err, refused, in.err, blob, h.opts.MaxTarballSize); err != nil {
		t.discard(ctx)
		return nil, err
	}
	t.size = blob.Size()
	copy(t.sha512[:], s512.Sum(nil))
	copy(t.sha1[:], s1.Sum(nil))
	blob.SetSHA1(t.sha1)
	return t, nil
}

// tarballError says why a tarball was refused, looking at the layers from
// the body up: the JSON string (a syntax error, the body's own failure),
// base64, the size limit, the store, the archive.
func tarballError(srcErr, decErr error, over bool, stageErr error, refused bool, inspectErr error, blob *store.StagedBlob, limit int64) error {
	var ae *apiError
	var corrupt base64.CorruptInputError
	switch {
	case errors.As(srcErr, &ae):
		return ae
	case errors.Is(srcErr, io.ErrUnexpectedEOF):
		return malformed("the body ends inside the attachment's data")
	case errors.Is(srcErr, errNotBase64):
		return errorf(http.StatusBadRequest, "the attachment's data is not valid base64: %v", srcErr)
	case srcErr != nil:
		return srcErr // the body's read failed: putPackage answers from what limitedBody saw
	case errors.As(decErr, &corrupt), errors.Is(decErr, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "the attachment's data is not valid base64: %v", decErr)
	case over:
		return errorf(http.StatusRequestEntityTooLarge, "the tarball is larger than this registry's limit of %d bytes", limit)
	case errors.Is(stageErr, store.ErrBlobTooLarge):
		return storeError(stageErr)
	case refused:
		if errors.Is(inspectErr, errUnpackedTooLarge) {
			return errorf(http.StatusBadRequest, "%v", inspectErr)
		}
		return errorf(http.StatusBadRequest, "the attachment is not a gzip-compressed tar archive: %v", inspectErr)
	case stageErr != nil:
		return stageErr
	case blob.Size() == 0:
		return errorf(http.StatusBadRequest, "the attachment is empty")
	}
	return nil
}

// inspectTarball reads a .tgz to the end (it must be a gzip-compressed tar
// archive) and reports whether the package ships npm-shrinkwrap.json and
// binding.gyp at its root (the first path component is the package
// directory, "package/" for npm pack). It decompresses at most
// maxUnpacked bytes (headers included): a small tarball can expand a
// thousandfold, and what is not read costs nothing.
func inspectTarball(r io.Reader, maxUnpacked int64) (shrinkwrap, gyp bool, err error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return false, false, err
	}
	unpacked := &cappedReader{r: zr, n: maxUnpacked,
		err: fmt.Errorf("%w: the tarball expands past this registry's limit of %d bytes", errUnpackedTooLarge, maxUnpacked)}
	tr := tar.NewReader(unpacked)
	entries := 0
	for {
		hdr, err := tr.Next()
		if unpacked.over {
			return false, false, unpacked.err
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, false, err
		}
		entries++
		_, rest, _ := strings.Cut(strings.TrimPrefix(hdr.Name, "./"), "/")
		switch rest {
		case "npm-shrinkwrap.json":
			shrinkwrap = true
		case "binding.gyp":
			gyp = true
		}
	}
	if entries == 0 {
		return false, false, fmt.Errorf("the archive is empty")
	}
	return shrinkwrap, gyp, nil
}
