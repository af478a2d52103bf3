// Package ocirange reads the byte ranges of blob transfers: the Range of a
// GET and the Content-Range of an upload chunk. It depends on the standard
// library alone, so that fuzzing it compiles nothing of the registry's
// store.
package ocirange

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Range is one satisfiable byte range of a blob.
type Range struct {
	Start, Length int64
}

// ContentRange is the Content-Range header of the range of a blob of the
// given size.
func (br Range) ContentRange(size int64) string {
	return fmt.Sprintf("bytes %d-%d/%d", br.Start, br.Start+br.Length-1, size)
}

// ErrUnsatisfiable is a Range that lies outside the blob (a 416).
var ErrUnsatisfiable = errors.New("ocirange: range cannot be satisfied")

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

// Parse reads a Range request header for a blob of the given size. It
// returns nil (serve the whole blob) for no header, a syntax it does not
// understand, or several ranges; a range it cannot satisfy is
// ErrUnsatisfiable.
func Parse(header string, size int64) (*Range, error) {
	spec, ok := strings.CutPrefix(trimOWS(header), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return nil, nil
	}
	first, last, ok := strings.Cut(trimOWS(spec), "-")
	if !ok {
		return nil, nil
	}
	if first == "" {
		n, ok := parsePosition(last)
		if !ok {
			return nil, nil
		}
		if n == 0 || size == 0 {
			return nil, ErrUnsatisfiable
		}
		n = min(n, size)
		return &Range{Start: size - n, Length: n}, nil
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
			return nil, ErrUnsatisfiable
		}
		end = min(e, size-1)
	}
	if start >= size {
		return nil, ErrUnsatisfiable
	}
	return &Range{Start: start, Length: end - start + 1}, nil
}
