package npmpublish

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
)

// Facts is what a publish checks of its tarball against the client's
// metadata, computed while the tarball streams in.
type Facts struct {
	Size       int64
	SHA512     [sha512.Size]byte
	SHA1       [sha1.Size]byte
	Shrinkwrap bool // npm-shrinkwrap.json at the package root
	Gyp        bool // binding.gyp at the package root
}

// errTarballTooLarge: the decoded tarball passed the decoder's maxTarball.
var errTarballTooLarge = errors.New("npm: tarball too large")

// errUnpackedTooLarge: the tarball expands past the decoder's maxUnpacked.
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

// Decoder is the reader of a tarball's decoded bytes, from the base64 of
// a publish's data string, that computes the tarball's facts while its
// consumer (the blob upload, or a buffer) reads it: the bytes are hashed
// (SHA-512, SHA-1; the store hashes SHA-256) and inspected as a
// gzip-compressed tar (inspectTarball, in a goroutine fed through a pipe)
// as they go by. The consumer reads it to its end, then Finish says
// whether the tarball is accepted.
type Decoder struct {
	io.Reader
	src, dec  *errRecorder
	capped    *cappedReader
	s512, s1  hash.Hash
	pw        *io.PipeWriter
	toInspect *writeRecorder
	inspected chan inspection
	limit     int64
}

type inspection struct {
	shrinkwrap, gyp bool
	err             error
}

// NewDecoder starts decoding data (base64) into a tarball of at most
// maxTarball bytes that expands to at most maxUnpacked bytes.
func NewDecoder(data io.Reader, maxTarball, maxUnpacked int64) *Decoder {
	d := &Decoder{src: &errRecorder{r: data}, s512: sha512.New(), s1: sha1.New(),
		inspected: make(chan inspection, 1), limit: maxTarball}
	d.dec = &errRecorder{r: base64.NewDecoder(base64.StdEncoding, d.src)}
	d.capped = &cappedReader{r: d.dec, n: maxTarball, err: errTarballTooLarge}
	pr, pw := io.Pipe()
	d.pw = pw
	d.toInspect = &writeRecorder{w: pw}
	d.Reader = io.TeeReader(d.capped, io.MultiWriter(d.s512, d.s1, d.toInspect))
	go func() {
		var in inspection
		in.shrinkwrap, in.gyp, in.err = inspectTarball(pr, maxUnpacked)
		if in.err != nil {
			_ = pr.CloseWithError(in.err) // stops the consumer: the tarball is refused
		} else {
			_, _ = io.Copy(io.Discard, pr) // what follows the archive's end
		}
		d.inspected <- in
	}()
	return d
}

// Finish ends the inspection once the consumer stopped reading, with the
// consumer's error and the number of bytes it kept, and returns the
// tarball's facts or why it is refused. consumerLimit, when not nil, is
// the answer to a consumer's error that is a size limit of its own: it
// comes before a refused archive, the consumer's other errors after.
func (d *Decoder) Finish(consumerErr error, size int64, consumerLimit error) (Facts, error) {
	_ = d.pw.CloseWithError(consumerErr) // nil: the inspection sees the end
	in := <-d.inspected
	refused := in.err != nil && (d.toInspect.err != nil || consumerErr == nil && size > 0)
	if err := tarballError(d.src.err, d.dec.err, d.capped.over, consumerErr, consumerLimit, refused, in.err, size, d.limit); err != nil {
		return Facts{}, err
	}
	f := Facts{Size: size, Shrinkwrap: in.shrinkwrap, Gyp: in.gyp}
	copy(f.SHA512[:], d.s512.Sum(nil))
	copy(f.SHA1[:], d.s1.Sum(nil))
	return f, nil
}

// tarballError says why a tarball was refused, looking at the layers from
// the body up: the JSON string (a syntax error, the body's own failure),
// base64, the size limit, the consumer, the archive.
func tarballError(srcErr, decErr error, over bool, consumerErr, consumerLimit error, refused bool, inspectErr error, size int64, limit int64) error {
	var pe *Error
	var corrupt base64.CorruptInputError
	switch {
	case errors.As(srcErr, &pe):
		return pe
	case errors.Is(srcErr, io.ErrUnexpectedEOF):
		return malformed("the body ends inside the attachment's data")
	case errors.Is(srcErr, errNotBase64):
		return refuse("the attachment's data is not valid base64: %v", srcErr)
	case srcErr != nil:
		return srcErr // the body's read failed: the caller answers from what it saw of the body
	case errors.As(decErr, &corrupt), errors.Is(decErr, io.ErrUnexpectedEOF):
		return refuse("the attachment's data is not valid base64: %v", decErr)
	case over:
		return tooLarge("the tarball is larger than this registry's limit of %d bytes", limit)
	case consumerLimit != nil:
		return consumerLimit
	case refused:
		if errors.Is(inspectErr, errUnpackedTooLarge) {
			return refuse("%v", inspectErr)
		}
		return refuse("the attachment is not a gzip-compressed tar archive: %v", inspectErr)
	case consumerErr != nil:
		return consumerErr
	case size == 0:
		return refuse("the attachment is empty")
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
