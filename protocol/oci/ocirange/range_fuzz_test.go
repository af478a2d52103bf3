package ocirange

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rangeGrammar is the one-range form of RFC 9110's Range header that
// Parse accepts (OWS is space or tab; positions are digits).
var rangeGrammar = regexp.MustCompile(`^[ \t]*bytes=[ \t]*([0-9]+-[0-9]*|-[0-9]+)[ \t]*$`)

// chunkGrammar is the Content-Range of an upload chunk that ChunkStart
// accepts: "<start>-<end>", optionally "bytes " or "bytes=" prefixed and
// "/<total>" suffixed.
var chunkGrammar = regexp.MustCompile(`^[ \t]*(bytes[ =])?[0-9]+-[0-9]+(/([0-9]+|\*))?[ \t]*$`)

// differentialRangeSize is the largest blob size for which FuzzParseRange
// also asks net/http's ServeContent (it copies the range into memory).
const differentialRangeSize = 1 << 16

// FuzzParseRange checks the Range header parser of blob GETs: a range it
// returns lies inside the blob and is exactly what net/http would serve for
// the same single range; the only refusal is ErrUnsatisfiable.
func FuzzParseRange(f *testing.F) {
	for _, s := range []struct {
		h    string
		size int64
	}{
		{"bytes=0-0", 1}, {"bytes=0-", 10}, {"bytes=5-9", 10}, {"bytes=5-100", 10},
		{"bytes=-3", 10}, {"bytes=-100", 10}, {"bytes=-0", 10}, {"bytes=10-", 10},
		{"bytes=9-5", 10}, {"bytes=0-1,3-4", 10}, {"bytes=0-", 0}, {"bytes=-1", 0},
		{"bytes=+1-+2", 10}, {" bytes=1-2 ", 10}, {"bytes= 1-2", 10}, {"items=0-1", 10},
		{"bytes=9223372036854775807-", 10}, {"bytes=0-9223372036854775807", 1 << 62},
		{"bytes=-9223372036854775807", 1 << 62}, {"bytes=0-18446744073709551616", 10},
		{"bytes=--1", 10}, {"bytes=1--1", 10}, {"bytes=", 10}, {"bytes=-", 10},
		{"bytes=\f-1", 16}, {"\vbytes=0-1", 16}, {"bytes=\u00a00-1", 16}, {"bytes=-+1", 16},
	} {
		f.Add(s.h, s.size)
	}
	f.Fuzz(func(t *testing.T, header string, size int64) {
		if size < 0 {
			size = -(size + 1) // blob sizes are never negative
		}
		br, err := Parse(header, size)
		if err != nil {
			if br != nil {
				t.Fatalf("Parse(%q, %d) returned both a range and an error", header, size)
			}
			if !errors.Is(err, ErrUnsatisfiable) {
				t.Fatalf("Parse(%q, %d): %v, want ErrUnsatisfiable", header, size, err)
			}
		}
		if br != nil {
			if !rangeGrammar.MatchString(header) {
				t.Fatalf("Parse(%q, %d) accepted a header outside the Range grammar", header, size)
			}
			checkRangeInBlob(t, header, size, br)
		}
		if size <= differentialRangeSize && br != nil {
			compareWithServeContent(t, header, size, br)
		}
	})
}

func checkRangeInBlob(t *testing.T, header string, size int64, br *Range) {
	t.Helper()
	if br.Start < 0 || br.Length < 1 || br.Start >= size || br.Length > size-br.Start {
		t.Fatalf("Parse(%q, %d) = start %d length %d: outside the blob", header, size, br.Start, br.Length)
	}
	// The Content-Range we send must read back as the same range.
	var first, last, total int64
	if _, err := fmt.Sscanf(br.ContentRange(size), "bytes %d-%d/%d", &first, &last, &total); err != nil {
		t.Fatalf("Content-Range %q: %v", br.ContentRange(size), err)
	}
	if first != br.Start || last != br.Start+br.Length-1 || total != size {
		t.Fatalf("Content-Range %q does not describe start %d length %d of %d", br.ContentRange(size), br.Start, br.Length, size)
	}
}

// compareWithServeContent serves a blob of the given size with net/http and
// checks it answers the header with the very range Parse chose (the
// parser is stricter: what it does not understand is served whole, so only
// the ranges it accepts are compared).
func compareWithServeContent(t *testing.T, header string, size int64, br *Range) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/blob", nil)
	req.Header.Set("Range", strings.TrimSpace(header))
	if req.Header.Get("Range") != strings.TrimSpace(header) {
		return // not representable as a header value
	}
	rec := httptest.NewRecorder()
	http.ServeContent(rec, req, "", time.Time{}, bytes.NewReader(make([]byte, size)))
	if rec.Code != http.StatusPartialContent {
		t.Fatalf("Range %q on %d bytes: Parse chose %s, net/http answers %d", header, size, br.ContentRange(size), rec.Code)
	}
	if got := rec.Header().Get("Content-Range"); got != br.ContentRange(size) {
		t.Fatalf("Range %q on %d bytes: Parse chose %s, net/http %s", header, size, br.ContentRange(size), got)
	}
}

// FuzzChunkOffset checks the Content-Range parser of upload chunks: an
// accepted chunk starts at a non-negative offset and its range agrees
// with Content-Length; a blank header is no range (the chunk appends at
// the upload's end).
func FuzzChunkOffset(f *testing.F) {
	for _, s := range []struct {
		h string
		n int64
	}{
		{"0-9", 10}, {"bytes 0-9/10", 10}, {"bytes=0-9", 10}, {"bytes 0-9/*", 10}, {"10-19", -1},
		{"5-4", 0}, {"5-3", 0}, {"-1-4", 6}, {"0-9", 9}, {"", 3}, {"0-9223372036854775807", -1},
		{"9223372036854775807-9223372036854775806", 0}, {"+1-+2", 2}, {"1 - 2", 2}, {"bytes */10", 0},
		{"\f0-1", 2}, {"0-1\u0085", 2}, {"0-+1", 2}, {"0-9/\n", 10}, {"0-9/1x", 10}, {"0-9/", 10},
	} {
		f.Add(s.h, s.n)
	}
	f.Fuzz(func(t *testing.T, header string, contentLength int64) {
		contentLength = max(contentLength, -1) // a request's unknown length is -1
		start, present, err := ChunkStart(header, contentLength)
		if strings.Trim(header, " \t") == "" {
			if err != nil || present {
				t.Fatalf("no Content-Range: offset %d, %v, %v; want none", start, present, err)
			}
			return
		}
		if !present {
			t.Fatalf("Content-Range %q read as none", header)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidChunk) && !errors.Is(err, ErrChunkLength) {
				t.Fatalf("Content-Range %q: %v is neither an invalid range nor a length mismatch", header, err)
			}
			return
		}
		if start < 0 || !chunkGrammar.MatchString(header) {
			t.Fatalf("Content-Range %q accepted (offset %d)", header, start)
		}
		end := chunkEnd(t, header)
		if end < start-1 {
			t.Fatalf("Content-Range %q accepted with its end before its start", header)
		}
		if contentLength >= 0 && end-start+1 != contentLength {
			t.Fatalf("Content-Range %q accepted for %d bytes", header, contentLength)
		}
	})
}

// chunkEnd reads the last byte position of an accepted Content-Range.
func chunkEnd(t *testing.T, h string) int64 {
	t.Helper()
	h = strings.Trim(h, " \t")
	h = strings.TrimPrefix(strings.TrimPrefix(h, "bytes="), "bytes ")
	h, _, _ = strings.Cut(h, "/")
	_, last, _ := strings.Cut(h, "-")
	end, err := strconv.ParseInt(last, 10, 64)
	if err != nil {
		t.Fatalf("accepted Content-Range %q has no end: %v", h, err)
	}
	return end
}
