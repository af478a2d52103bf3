package oci

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// byteRange is one satisfiable byte range of a blob.
type byteRange struct {
	Start, Length int64
}

func (br byteRange) contentRange(size int64) string {
	return fmt.Sprintf("bytes %d-%d/%d", br.Start, br.Start+br.Length-1, size)
}

// trimOWS trims HTTP optional whitespace (space and tab only: other
// whitespace makes the header invalid, as net/http also reads it).
func trimOWS(s string) string { return strings.Trim(s, " \t") }

// parsePosition reads a byte position: decimal digits only (no sign).
func parsePosition(s string) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// parseRange reads a Range request header for a blob of the given size.
// It returns nil (serve the whole blob) for no header, a syntax it does not
// understand, or several ranges; a range it cannot satisfy is a 416 error.
func parseRange(header string, size int64) (*byteRange, *apiError) {
	spec, ok := strings.CutPrefix(trimOWS(header), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil, nil
	}
	first, last, ok := strings.Cut(trimOWS(spec), "-")
	if !ok {
		return nil, nil
	}
	unsatisfiable := func() *apiError {
		return newErr(http.StatusRequestedRangeNotSatisfiable, codeBlobUnknown,
			"range %q cannot be satisfied for a blob of %d bytes", header, size).
			withHeader("Content-Range", fmt.Sprintf("bytes */%d", size))
	}
	if first == "" {
		n, ok := parsePosition(last)
		if !ok {
			return nil, nil
		}
		if n == 0 || size == 0 {
			return nil, unsatisfiable()
		}
		n = min(n, size)
		return &byteRange{Start: size - n, Length: n}, nil
	}
	start, ok := parsePosition(first)
	if !ok {
		return nil, nil
	}
	end := size - 1
	if last != "" {
		e, ok := parsePosition(last)
		if !ok {
			return nil, nil
		}
		if e < start {
			return nil, unsatisfiable()
		}
		end = min(e, size-1)
	}
	if start >= size {
		return nil, unsatisfiable()
	}
	return &byteRange{Start: start, Length: end - start + 1}, nil
}
