//go:build benchcompare

package benchcompare

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// drainResult is a result line of gc's BenchmarkDrainDueCandidates (its
// log lines are indented).
var drainResult = regexp.MustCompile(`(?m)^BenchmarkDrainDueCandidates\S*\s.*$`)

// gcRun is one run of the drain benchmark: the drain rate, and the median
// latency of the benchmark's push probe before and during the drain.
type gcRun struct {
	rate, pushIdleMs, pushDrainMs float64
}

// benchMetrics returns the values of a benchmark result line by unit
// ("name iterations value unit value unit ...").
func benchMetrics(line string) map[string]float64 {
	f := strings.Fields(line)
	out := map[string]float64{}
	for k := 2; k+1 < len(f); k += 2 {
		if v, err := strconv.ParseFloat(f[k], 64); err == nil {
			out[f[k+1]] = v
		}
	}
	return out
}

// gcDrain runs gc's own drain benchmark (ours only: the peers have no
// online collector to compare with) runs times, its objects and its
// temporary files under dir, and returns each run's figures.
func gcDrain(t *testing.T, dir string, candidates, runs int) []gcRun {
	t.Helper()
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkDrainDueCandidates$",
		"-benchtime", "1x", "-count", strconv.Itoa(runs), "-timeout", "0", "./gc/")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "GC_BENCH_CANDIDATES="+strconv.Itoa(candidates), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gc drain benchmark: %v\n%s", err, tail(string(out), 4000))
	}
	var runsSeen []gcRun
	for _, line := range drainResult.FindAllString(string(out), -1) {
		m := benchMetrics(line)
		r := gcRun{rate: m["objects/s"], pushIdleMs: m["push-p50-ms-idle"], pushDrainMs: m["push-p50-ms-drain"]}
		if r.rate == 0 || r.pushIdleMs == 0 || r.pushDrainMs == 0 {
			t.Fatalf("gc drain benchmark: a figure is missing from %q", line)
		}
		runsSeen = append(runsSeen, r)
	}
	if len(runsSeen) != runs {
		t.Fatalf("gc drain benchmark: %d results for %d runs:\n%s", len(runsSeen), runs, tail(string(out), 4000))
	}
	return runsSeen
}
