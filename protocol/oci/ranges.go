package oci

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/artifact-registry/artifact-registry/protocol/oci/ocirange"
)

// byteRange is one satisfiable byte range of a blob.
type byteRange = ocirange.Range

// parseRange reads a Range request header for a blob of the given size
// (see ocirange.Parse); a range it cannot satisfy is a 416 error.
func parseRange(header string, size int64) (*byteRange, *apiError) {
	br, err := ocirange.Parse(header, size)
	if err != nil {
		return nil, newErr(http.StatusRequestedRangeNotSatisfiable, codeBlobUnknown,
			"range %q cannot be satisfied for a blob of %d bytes", header, size).
			withHeader("Content-Range", fmt.Sprintf("bytes */%d", size))
	}
	return br, nil
}

// chunkOffset reads the Content-Range of an upload chunk (see
// ocirange.ChunkStart); without one, the chunk is appended at the
// upload's current size.
func chunkOffset(r *http.Request, current func() (int64, error)) (int64, error) {
	start, present, err := ocirange.ChunkStart(r.Header.Get("Content-Range"), r.ContentLength)
	switch {
	case errors.Is(err, ocirange.ErrChunkLength):
		return 0, newErr(http.StatusBadRequest, codeSizeInvalid,
			"Content-Range %q does not match Content-Length %d", r.Header.Get("Content-Range"), r.ContentLength)
	case err != nil:
		return 0, newErr(http.StatusRequestedRangeNotSatisfiable, codeBlobUploadInvalid, "invalid Content-Range %q", r.Header.Get("Content-Range"))
	case !present:
		return current()
	}
	return start, nil
}
