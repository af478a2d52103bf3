package soak

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of a run.
type Report struct {
	Duration time.Duration
	Workers  int
	Grace    time.Duration
	Windows  []Window
	Ops      []OpStats
	Errors   []ErrorCount
	// Acked counts the acknowledged writes by kind; Lost lists those that
	// could not be read back at the end.
	Acked map[string]int
	Lost  []LostWrite
	// Examples are the first failures outside the windows and of status
	// 500 anywhere, for the reader to start from.
	Examples []string
}

// OpStats are one operation's figures; latencies are of the successful
// operations.
type OpStats struct {
	Op       string
	Count    int
	OK       int
	PerSec   float64
	P50, P99 time.Duration
	Max      time.Duration
}

// ErrorCount counts one operation's failures with one label, in the
// window of each fault kind and outside every window.
type ErrorCount struct {
	Op, Label string
	ByWindow  map[string]int
	Outside   int
}

const maxExamples = 20

func newReport(cfg Config, elapsed time.Duration, rec *recorder, acked map[string]int, lost []LostWrite) *Report {
	r := &Report{Duration: elapsed, Workers: cfg.Workers, Grace: cfg.Grace, Windows: rec.windows, Acked: acked, Lost: lost}
	sort.Slice(r.Windows, func(i, j int) bool { return r.Windows[i].Start.Before(r.Windows[j].Start) })
	byOp := map[string][]sample{}
	errs := map[[2]string]*ErrorCount{}
	for _, s := range rec.samples {
		byOp[s.op] = append(byOp[s.op], s)
		if s.label == "ok" {
			continue
		}
		k := [2]string{s.op, s.label}
		if errs[k] == nil {
			errs[k] = &ErrorCount{Op: s.op, Label: s.label, ByWindow: map[string]int{}}
		}
		if kind := windowOf(rec.windows, cfg.Grace, s.start, s.end); kind != "" {
			errs[k].ByWindow[kind]++
			if s.label == "500" {
				r.example("in "+kind, s)
			}
		} else {
			errs[k].Outside++
			r.example("outside windows", s)
		}
	}
	for op, ss := range byOp {
		r.Ops = append(r.Ops, opStats(op, ss, elapsed))
	}
	sort.Slice(r.Ops, func(i, j int) bool { return r.Ops[i].Op < r.Ops[j].Op })
	for _, e := range errs {
		r.Errors = append(r.Errors, *e)
	}
	sort.Slice(r.Errors, func(i, j int) bool {
		return r.Errors[i].Op+" "+r.Errors[i].Label < r.Errors[j].Op+" "+r.Errors[j].Label
	})
	return r
}

func (r *Report) example(where string, s sample) {
	prefix := where + " " + s.op + " " + s.label
	same := 0
	for _, e := range r.Examples {
		if strings.Contains(e, prefix) {
			same++
		}
	}
	if len(r.Examples) < maxExamples && same < 3 {
		r.Examples = append(r.Examples, fmt.Sprintf("%s %s: %s", s.start.UTC().Format("15:04:05.000"), prefix, s.detail))
	}
}

func opStats(op string, ss []sample, elapsed time.Duration) OpStats {
	st := OpStats{Op: op, Count: len(ss)}
	var lat []time.Duration
	for _, s := range ss {
		if s.label == "ok" {
			lat = append(lat, s.end.Sub(s.start))
		}
	}
	st.OK = len(lat)
	st.PerSec = float64(st.OK) / elapsed.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		st.P50, st.P99, st.Max = quantile(lat, 0.50), quantile(lat, 0.99), lat[len(lat)-1]
	}
	return st
}

// quantile of sorted durations, nearest rank.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// OutsideErrors counts the failures outside every fault window.
func (r *Report) OutsideErrors() int {
	n := 0
	for _, e := range r.Errors {
		n += e.Outside
	}
	return n
}

// StatusCount counts the failures with this label anywhere.
func (r *Report) StatusCount(label string) int {
	n := 0
	for _, e := range r.Errors {
		if e.Label == label {
			n += e.Outside
			for _, c := range e.ByWindow {
				n += c
			}
		}
	}
	return n
}

// AckedTotal counts every acknowledged write.
func (r *Report) AckedTotal() int {
	n := 0
	for _, c := range r.Acked {
		n += c
	}
	return n
}

// FaultErrors are the faults that could not be injected or healed.
func (r *Report) FaultErrors() []string {
	var out []string
	for _, w := range r.Windows {
		if w.Err != "" {
			out = append(out, w.Kind+": "+w.Err)
		}
	}
	return out
}

// Table is the report for people.
func (r *Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %s, %d workers, grace %s after each fault window\n\n", r.Duration.Round(time.Second), r.Workers, r.Grace)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tstart (UTC)\tlength\terror\t")
	for _, w := range r.Windows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", w.Kind, w.Start.UTC().Format("15:04:05"), w.End.Sub(w.Start).Round(100*time.Millisecond), w.Err)
	}
	_ = tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcount\tok\tok/s\tp50\tp99\tmax\t")
	for _, o := range r.Ops {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%s\t%s\t%s\t\n", o.Op, o.Count, o.OK, o.PerSec, ms(o.P50), ms(o.P99), ms(o.Max))
	}
	_ = tw.Flush()
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	kinds := r.windowKinds()
	fmt.Fprintf(tw, "operation\tstatus\t%s\toutside\t\n", strings.Join(kinds, "\t"))
	for _, e := range r.Errors {
		fmt.Fprintf(tw, "%s\t%s\t", e.Op, e.Label)
		for _, k := range kinds {
			fmt.Fprintf(tw, "%d\t", e.ByWindow[k])
		}
		fmt.Fprintf(tw, "%d\t\n", e.Outside)
	}
	if len(r.Errors) == 0 {
		fmt.Fprintln(tw, "(no errors)\t")
	}
	_ = tw.Flush()
	acked := make([]string, 0, len(r.Acked))
	for k := range r.Acked {
		acked = append(acked, k)
	}
	sort.Strings(acked)
	fmt.Fprintf(&b, "\nacknowledged writes: %d (", r.AckedTotal())
	for i, k := range acked {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.Acked[k])
	}
	fmt.Fprintf(&b, "), lost: %d\n", len(r.Lost))
	for i, l := range r.Lost {
		if i == maxExamples {
			fmt.Fprintf(&b, "  ... %d more\n", len(r.Lost)-i)
			break
		}
		fmt.Fprintf(&b, "  lost %s %s: %s\n", l.Kind, l.Name, l.Reason)
	}
	if len(r.Examples) > 0 {
		b.WriteString("\nfirst failures outside the windows, and 500s in them:\n")
		for _, e := range r.Examples {
			b.WriteString("  " + e + "\n")
		}
	}
	return b.String()
}

// windowKinds are the fault kinds in the order they happened.
func (r *Report) windowKinds() []string {
	var out []string
	for _, w := range r.Windows {
		if !slices.Contains(out, w.Kind) {
			out = append(out, w.Kind)
		}
	}
	return out
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

// JSON is the report for programs.
func (r *Report) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	return b, nil
}
