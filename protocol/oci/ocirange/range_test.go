package ocirange

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	const size = 2048
	for _, tc := range []struct {
		h             string
		start, len    int64
		full          bool
		unsatisfiable bool
	}{
		{h: "", full: true},
		{h: "bytes=500-1499", start: 500, len: 1000},
		{h: "bytes=500-", start: 500, len: 1548},
		{h: "bytes=-500", start: 1548, len: 500},
		{h: "bytes=-5000", start: 0, len: 2048},
		{h: "bytes=2000-5000", start: 2000, len: 48},
		{h: "bytes=500-0", unsatisfiable: true},
		{h: "bytes=5000-10000", unsatisfiable: true},
		{h: "bytes=2048-", unsatisfiable: true},
		{h: "bytes=-0", unsatisfiable: true},
		{h: "bytes=0-1,5-6", full: true},
		{h: "items=0-1", full: true},
	} {
		br, err := Parse(tc.h, size)
		switch {
		case tc.unsatisfiable:
			if br != nil || !errors.Is(err, ErrUnsatisfiable) {
				t.Errorf("%q: got %v %v, want ErrUnsatisfiable", tc.h, br, err)
			}
		case tc.full:
			if br != nil || err != nil {
				t.Errorf("%q: got %v %v, want full", tc.h, br, err)
			}
		default:
			if err != nil || br == nil || br.Start != tc.start || br.Length != tc.len {
				t.Errorf("%q: got %+v %v, want %d+%d", tc.h, br, err, tc.start, tc.len)
			}
		}
	}
}
