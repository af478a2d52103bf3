//go:build benchcompare

package benchcompare

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// objectsPerSecond is the metric on the result lines of gc's
// BenchmarkDrainDueCandidates (its log lines are indented).
var objectsPerSecond = regexp.MustCompile(`(?m)^BenchmarkDrainDueCandidates\S*\s.*\s([0-9.e+]+) objects/s`)

// gcDrain runs gc's own drain benchmark (ours only: the peers have no
// online collector to compare with) runs times, its objects and its
// temporary files under dir, and returns the objects/s of each run.
func gcDrain(t *testing.T, dir string, candidates, runs int) []float64 {
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
	var rates []float64
	for _, m := range objectsPerSecond.FindAllStringSubmatch(string(out), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		rates = append(rates, v)
	}
	if len(rates) != runs {
		t.Fatalf("gc drain benchmark: %d figures for %d runs:\n%s", len(rates), runs, tail(string(out), 4000))
	}
	return rates
}
