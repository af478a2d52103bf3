// Package benchcompare puts our registry and its peers side by side: the
// same workloads against each, on one machine and one disk, in one run,
// summarized in one Markdown table with the machine's own limits beside
// the figures (make bench-compare; docs/benchmarks.md).
//
// This file is the table: samples, their summaries, and the rendering.
// The workloads themselves run from TestBenchCompare.
package benchcompare

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Columns of the table, in order. Peer is the npm or Maven peer
// (Verdaccio, the static file server); distribution and zot are OCI only.
const (
	Ours         = "ours"
	Distribution = "distribution"
	Zot          = "zot"
	Peer         = "Verdaccio/static"
)

// Columns lists the registry columns in table order.
var Columns = []string{Ours, Distribution, Zot, Peer}

// Stat summarizes the samples of one figure: the median and the spread.
type Stat struct {
	Median, Min, Max float64
	N                int
}

// Summarize returns the median (the mean of the middle two for an even
// count), minimum and maximum of xs; the zero Stat when xs is empty.
func Summarize(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	med := s[mid]
	if len(s)%2 == 0 {
		med = (s[mid-1] + s[mid]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Cell is one registry's figure for one workload: samples, or the reason
// there are none ("unavailable: …", "failed: …").
type Cell struct {
	Samples []float64
	Note    string
}

// Limit is the machine's ceiling for a workload, in the row's unit.
type Limit struct {
	Name  string
	Value float64
}

// Row is one workload.
type Row struct {
	Workload string
	Unit     string
	// HigherIsBetter is true for rates (MB/s, objects/s), false for
	// times.
	HigherIsBetter bool
	// Versus is the column ours is compared with (empty: no ratio), and
	// VersusName what the ratio calls it (the column's name if empty).
	Versus, VersusName string
	Cells              map[string]*Cell
	Limit              *Limit
}

// NewRow returns a row with no figures yet.
func NewRow(workload, unit string, higherIsBetter bool, versus string) *Row {
	return &Row{Workload: workload, Unit: unit, HigherIsBetter: higherIsBetter, Versus: versus, Cells: map[string]*Cell{}}
}

// Add records one sample of column col.
func (r *Row) Add(col string, v float64) {
	c := r.cell(col)
	c.Samples = append(c.Samples, v)
}

// Note records why column col has no figure; the first note wins.
func (r *Row) Note(col, note string) {
	if c := r.cell(col); c.Note == "" {
		c.Note = note
	}
}

func (r *Row) cell(col string) *Cell {
	c, ok := r.Cells[col]
	if !ok {
		c = &Cell{}
		r.Cells[col] = c
	}
	return c
}

// median returns the median of col and whether it has samples.
func (r *Row) median(col string) (float64, bool) {
	c, ok := r.Cells[col]
	if !ok || len(c.Samples) == 0 {
		return 0, false
	}
	return Summarize(c.Samples).Median, true
}

// Speedup is how many times faster ours is than the compared column
// (above 1: ours is faster), whatever the unit's direction.
func (r *Row) Speedup() (float64, bool) {
	if r.Versus == "" {
		return 0, false
	}
	o, ok1 := r.median(Ours)
	p, ok2 := r.median(r.Versus)
	if !ok1 || !ok2 || o <= 0 || p <= 0 {
		return 0, false
	}
	if r.HigherIsBetter {
		return o / p, true
	}
	return p / o, true
}

// FractionOfLimit is ours as a fraction of the machine's limit (rates
// only: a time has no ceiling to be a fraction of).
func (r *Row) FractionOfLimit() (float64, bool) {
	if r.Limit == nil || r.Limit.Value <= 0 || !r.HigherIsBetter {
		return 0, false
	}
	o, ok := r.median(Ours)
	if !ok {
		return 0, false
	}
	return o / r.Limit.Value, true
}

// FormatNumber prints v with three significant digits at most (no
// exponent for the magnitudes the table holds).
func FormatNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// FormatCell prints a cell: "median (min–max)", the median alone for one
// sample, or its note; "—" when the column does not apply.
func FormatCell(c *Cell) string {
	if c == nil {
		return "—"
	}
	if len(c.Samples) == 0 {
		if c.Note == "" {
			return "—"
		}
		return c.Note
	}
	s := Summarize(c.Samples)
	if s.N == 1 {
		return FormatNumber(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", FormatNumber(s.Median), FormatNumber(s.Min), FormatNumber(s.Max))
}

// WriteMarkdown writes rows as one Markdown table.
func WriteMarkdown(w io.Writer, rows []*Row) error {
	var b strings.Builder
	b.WriteString("| workload | unit |")
	for _, c := range Columns {
		b.WriteString(" " + c + " |")
	}
	b.WriteString(" ours vs peer | limit | ours / limit |\n|---|---|")
	b.WriteString(strings.Repeat("---|", len(Columns)+3))
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s |", escape(r.Workload), escape(r.Unit))
		for _, col := range Columns {
			b.WriteString(" " + escape(FormatCell(r.Cells[col])) + " |")
		}
		ratio, limit, frac := "—", "—", "—"
		if x, ok := r.Speedup(); ok {
			ratio = FormatNumber(x) + "× vs " + cmp.Or(r.VersusName, r.Versus)
		}
		if r.Limit != nil {
			limit = FormatNumber(r.Limit.Value) + " (" + r.Limit.Name + ")"
		}
		if x, ok := r.FractionOfLimit(); ok {
			frac = fmt.Sprintf("%.0f%%", 100*x)
		}
		fmt.Fprintf(&b, " %s | %s | %s |\n", escape(ratio), escape(limit), frac)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escape keeps a cell's text from ending the cell or the row.
func escape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
