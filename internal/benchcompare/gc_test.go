//go:build benchcompare

package benchcompare

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// benchMetric returns the value a benchmark result line reports in unit.
func benchMetric(line, unit string) (float64, error) {
	m := regexp.MustCompile(`\s([0-9.e+]+) ` + regexp.QuoteMeta(unit) + `(\s|$)`).FindStringSubmatch(line)
	if m == nil {
		return 0, fmt.Errorf("no %s in %q", unit, line)
	}
	return strconv.ParseFloat(m[1], 64)
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
		var r gcRun
		for unit, v := range map[string]*float64{"objects/s": &r.rate, "push-p50-ms-idle": &r.pushIdleMs, "push-p50-ms-drain": &r.pushDrainMs} {
			var err error
			if *v, err = benchMetric(line, unit); err != nil {
				t.Fatal(err)
			}
		}
		runsSeen = append(runsSeen, r)
	}
	if len(runsSeen) != runs {
		t.Fatalf("gc drain benchmark: %d results for %d runs:\n%s", len(runsSeen), runs, tail(string(out), 4000))
	}
	return runsSeen
}
