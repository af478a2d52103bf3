package benchcompare

import (
	"context"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{}},
		{[]float64{5}, Stat{Median: 5, Min: 5, Max: 5, N: 1}},
		{[]float64{3, 1, 2}, Stat{Median: 2, Min: 1, Max: 3, N: 3}},
		{[]float64{4, 1, 3, 2}, Stat{Median: 2.5, Min: 1, Max: 4, N: 4}},
	} {
		if got := Summarize(c.in); got != c.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
	in := []float64{3, 1, 2}
	Summarize(in)
	if in[0] != 3 {
		t.Error("Summarize sorted its argument in place")
	}
}

func TestSpeedupDirection(t *testing.T) {
	rate := NewRow("push", "MB/s", true, Distribution)
	rate.Add(Ours, 200)
	rate.Add(Distribution, 100)
	if x, ok := rate.Speedup(); !ok || x != 2 {
		t.Errorf("rate speedup = %v %v, want 2", x, ok)
	}
	lat := NewRow("get", "ms", false, Peer)
	lat.Add(Ours, 4)
	lat.Add(Peer, 2)
	if x, ok := lat.Speedup(); !ok || x != 0.5 {
		t.Errorf("latency speedup = %v %v, want 0.5 (ours twice as slow)", x, ok)
	}
	missing := NewRow("get", "ms", false, Peer)
	missing.Add(Ours, 4)
	missing.Note(Peer, "unavailable: x")
	if _, ok := missing.Speedup(); ok {
		t.Error("a speedup against a column without figures")
	}
}

func TestFractionOfLimit(t *testing.T) {
	r := NewRow("pull", "MB/s", true, Distribution)
	r.Add(Ours, 10)
	r.Add(Ours, 30)
	r.Add(Ours, 20)
	r.Limit = &Limit{Name: "loopback TCP", Value: 80}
	if x, ok := r.FractionOfLimit(); !ok || x != 0.25 {
		t.Errorf("fraction = %v %v, want 0.25 (median 20 of 80)", x, ok)
	}
	lat := NewRow("get", "ms", false, Peer)
	lat.Add(Ours, 1)
	lat.Limit = &Limit{Name: "x", Value: 1}
	if _, ok := lat.FractionOfLimit(); ok {
		t.Error("a time row reported a fraction of a rate limit")
	}
}

func TestWriteMarkdown(t *testing.T) {
	push := NewRow("oras push", "MB/s", true, Distribution)
	for _, v := range []float64{120, 100, 110} {
		push.Add(Ours, v)
	}
	push.Add(Distribution, 220)
	push.Note(Zot, "unavailable: proxy says 403 | forbidden")
	push.Limit = &Limit{Name: "sha256/core", Value: 440}
	gc := NewRow("GC drain", "objects/s", true, "")
	gc.Add(Ours, 12345.6)
	var b strings.Builder
	if err := WriteMarkdown(&b, []*Row{push, gc}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines:\n%s", len(lines), b.String())
	}
	cells := func(line string) int { return strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") - 1 }
	for _, l := range lines {
		if cells(l) != cells(lines[0]) {
			t.Errorf("line %q has %d cells, header %d", l, cells(l), cells(lines[0]))
		}
	}
	want := "| oras push | MB/s | 110 (100–120) | 220 | unavailable: proxy says 403 \\| forbidden | — | 0.5× vs distribution | 440 (sha256/core) | 25% |"
	if lines[2] != want {
		t.Errorf("row\n got %s\nwant %s", lines[2], want)
	}
	if want := "| GC drain | objects/s | 12346 | — | — | — | — | — | — |"; lines[3] != want {
		t.Errorf("row\n got %s\nwant %s", lines[3], want)
	}
}

func TestMeasureLimits(t *testing.T) {
	l, err := MeasureLimits(context.Background(), t.TempDir(), 8<<20)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{"sha256": l.SHA256PerCore, "disk write": l.DiskWrite, "disk read": l.DiskRead, "loopback": l.Loopback} {
		if v <= 0 {
			t.Errorf("%s limit = %v", name, v)
		}
	}
}
