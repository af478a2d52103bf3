package ocirange

import (
	"errors"
	"strings"
)

var (
	// ErrInvalidChunk is a Content-Range that is not "<start>-<end>" (a
	// 416).
	ErrInvalidChunk = errors.New("ocirange: invalid Content-Range")
	// ErrChunkLength is a Content-Range that disagrees with the chunk's
	// Content-Length.
	ErrChunkLength = errors.New("ocirange: Content-Range does not match Content-Length")
)

// ChunkStart reads the Content-Range of an upload chunk ("<start>-<end>",
// optionally "bytes " or "bytes=" prefixed and "/<length>" or "/*"
// suffixed) and returns where the chunk starts; present is false when the
// header is blank (the chunk is appended at the end). The range must
// agree with contentLength unless that is negative (unknown).
func ChunkStart(contentRange string, contentLength int64) (start int64, present bool, err error) {
	cr := trimOWS(contentRange)
	if cr == "" {
		return 0, false, nil
	}
	cr = strings.TrimPrefix(strings.TrimPrefix(cr, "bytes="), "bytes ")
	cr, total, hasTotal := strings.Cut(cr, "/")
	_, totalOK := parsePosition(total)
	totalOK = totalOK || total == "*" || !hasTotal
	a, b, cut := strings.Cut(cr, "-")
	start, ok1 := parsePosition(a)
	end, ok2 := parsePosition(b)
	if !cut || !ok1 || !ok2 || !totalOK || end < start-1 {
		return 0, true, ErrInvalidChunk
	}
	if contentLength >= 0 && contentLength != end-start+1 {
		return 0, true, ErrChunkLength
	}
	return start, true, nil
}
