package soak

import (
	"sync"
	"time"
)

// sample is one operation's outcome: label "ok" or its failure's label.
type sample struct {
	op         string
	start, end time.Time
	label      string
	detail     string
}

// Window is the time a fault was in effect.
type Window struct {
	Kind       string
	Start, End time.Time
	// Err is the fault's own failure to inject or heal ("" if none).
	Err string
}

// recorder collects samples and fault windows from every goroutine.
type recorder struct {
	mu      sync.Mutex
	samples []sample
	windows []Window
}

func (r *recorder) record(s sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, s)
}

func (r *recorder) window(w Window) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windows = append(r.windows, w)
}

// windowOf is the kind of the fault window, stretched by grace after its
// end, that an operation running from start to end overlaps; "" if none.
// Where stretched windows overlap, the fault that began last is blamed.
func windowOf(windows []Window, grace time.Duration, start, end time.Time) string {
	kind, began := "", time.Time{}
	for _, w := range windows {
		if !w.Start.IsZero() && !start.After(w.End.Add(grace)) && !end.Before(w.Start) && w.Start.After(began) {
			kind, began = w.Kind, w.Start
		}
	}
	return kind
}
