package soak

import (
	"testing"
	"time"
)

// The window rule: overlap with the window stretched by grace, the latest
// fault blamed where stretched windows overlap.
func TestWindowOf(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ws := []Window{{Kind: "a", Start: at(10), End: at(20)}, {Kind: "b", Start: at(25), End: at(30)}, {Kind: "never"}}
	for _, tc := range []struct {
		start, end float64
		want       string
	}{
		{0, 9, ""},
		{9, 11, "a"},   // in flight when the fault began
		{29, 31, "b"},  // inside
		{24, 26, "b"},  // a's grace, but b began last
		{34, 40, "b"},  // b's grace
		{35.1, 40, ""}, // after b's grace
		{22, 23, "a"},  // a's grace only
	} {
		if got := windowOf(ws, 5*time.Second, at(tc.start), at(tc.end)); got != tc.want {
			t.Errorf("%v-%v: %q, want %q", tc.start, tc.end, got, tc.want)
		}
	}
}
