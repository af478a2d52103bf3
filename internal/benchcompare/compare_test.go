//go:build benchcompare

package benchcompare

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/testtools"
)

// config is one comparison's sizes, from the environment (make
// bench-compare passes BENCH_QUICK, BENCH_RUNS, BENCH_DIR,
// BENCH_RESULTS).
type config struct {
	quick        bool
	runs         int
	largeSize    int64
	smallLayers  int
	smallSize    int
	pullers      int
	tags         int
	tagGets      int
	npmVersions  int
	npmDeps      int
	mvnArtifacts int
	gcCandidates int
	limitBytes   int64
}

func loadConfig(t *testing.T) config {
	c := config{runs: 3, largeSize: 256 << 20, smallLayers: 50, smallSize: 64 << 10, pullers: 16, tags: 10000,
		tagGets: 2000, npmVersions: 100, npmDeps: 50, mvnArtifacts: 50, gcCandidates: 100_000, limitBytes: 1 << 30}
	if os.Getenv("BENCH_QUICK") != "" {
		c = config{quick: true, runs: 1, largeSize: 16 << 20, smallLayers: 50, smallSize: 4 << 10, pullers: 16, tags: 300,
			tagGets: 300, npmVersions: 20, npmDeps: 10, mvnArtifacts: 10, gcCandidates: 5000, limitBytes: 128 << 20}
	}
	if v := os.Getenv("BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("BENCH_RUNS=%q: want a positive count", v)
		}
		c.runs = n
	}
	return c
}

// TestBenchCompare is make bench-compare: ours, distribution, zot,
// Verdaccio and a static file server started on this machine with their
// storage on one disk, the same workloads against each, interleaved run
// by run, and one table. It is built only with the benchcompare tag
// (make bench-compare): it takes minutes in quick mode and far longer at
// full size, outside make test's budget, so make test does not compile it
// rather than skipping it.
func TestBenchCompare(t *testing.T) {
	cfg := loadConfig(t)
	results := os.Getenv("BENCH_RESULTS")
	if results == "" {
		results = filepath.Join(repoRoot(t), "bench-results")
	}
	base := os.Getenv("BENCH_DIR")
	if base == "" {
		base = results
	}
	for _, d := range []string{results, base} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	work, err := os.MkdirTemp(base, "work-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	// Every temporary directory (Verdaccio's storage, the clients'
	// caches and copies) lands on the registries' disk.
	tmp := filepath.Join(work, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)

	started := time.Now()
	rows, order := defineRows(cfg)
	limits, err := MeasureLimits(context.Background(), work, cfg.limitBytes)
	if err != nil {
		t.Fatal(err)
	}
	attachLimits(rows, limits)
	t.Logf("limits: %+v", limits)

	o := startOurs(t, filepath.Join(work, "ours"))
	ociTargets := []ociTarget{o.oci(), startDistribution(t, filepath.Join(work, "distribution"))}
	var notes []string
	zot, reason := startZot(t, filepath.Join(work, "zot"))
	if reason != "" {
		for _, r := range rows {
			if r.Versus == Distribution {
				r.Note(Zot, "unavailable (see the notes)")
			}
		}
		notes = append(notes, "zot unavailable: "+reason)
		t.Logf("zot unavailable: %s", reason)
	} else {
		ociTargets = append(ociTargets, zot)
	}

	// Each family runs in its own subtest: a failure fails the
	// comparison but still leaves the others' figures in the table.
	section := func(name string, cols, prefixes []string, fn func(t *testing.T)) {
		if !t.Run(name, fn) {
			noteFailed(rows, prefixes, cols, "failed: see the "+name+" log")
		}
	}
	ociCols := []string{Ours, Distribution, Zot}
	section("oci", ociCols, []string{"oras", "crane", "monolithic", "single", "concurrent", "manifest", "peak rss"}, func(t *testing.T) {
		oci := newOCIBench(t, cfg, work, rows)
		for run := range cfg.runs {
			for _, target := range ociTargets {
				t.Logf("run %d/%d: OCI against %s", run+1, cfg.runs, target.col)
				oci.runOnce(t, run, target)
				oci.tags(t, run, target)
				if run == 0 {
					oci.peakRSS(t, target)
				}
			}
		}
	})

	// Verdaccio is installed in a subtest of its own: a missing Node.js
	// or npm registry leaves its column empty, with the reason.
	_, noVerdaccio := optional(t, "verdaccio", func(t *testing.T) string { return ocitools.Verdaccio(t) })
	if noVerdaccio != "" {
		noteAll(rows, "npm", Peer, noVerdaccio)
	}
	section("npm", []string{Ours, Peer}, []string{"npm"}, func(t *testing.T) {
		npmTargets := []npmTarget{o.npm()}
		if noVerdaccio == "" {
			npmTargets = append(npmTargets, startVerdaccio(t))
		}
		npm := newNPMBench(cfg, rows)
		for run := range cfg.runs {
			for _, target := range npmTargets {
				t.Logf("run %d/%d: npm against %s", run+1, cfg.runs, target.col)
				npm.runOnce(t, run, target)
			}
			t.Logf("run %d/%d: npm against a static server of ours' answers", run+1, cfg.runs)
			npm.floorRun(t, npmTargets[0])
		}
		npm.setFloors()
	})

	if _, why := optional(t, "mvn", func(t *testing.T) bool { testtools.RequireMaven(t); return true }); why != "" {
		noteAll(rows, "mvn", Ours, why)
		noteAll(rows, "mvn", Peer, why)
	} else {
		section("maven", []string{Ours, Peer}, []string{"mvn"}, func(t *testing.T) {
			mvn := newMavenBench(t, cfg, filepath.Join(work, "maven"), rows)
			mvnTargets := []mavenTarget{o.maven(), startStaticMaven(t, filepath.Join(work, "static-maven"))}
			for run := range cfg.runs {
				mvn.baseline(t)
				for _, target := range mvnTargets {
					t.Logf("run %d/%d: mvn against %s", run+1, cfg.runs, target.col)
					mvn.runOnce(t, target)
				}
			}
		})
	}

	section("gc", []string{Ours}, []string{"gc"}, func(t *testing.T) {
		t.Logf("GC drain of %d candidates, %d runs", cfg.gcCandidates, cfg.runs)
		for _, r := range gcDrain(t, work, cfg.gcCandidates, cfg.runs) {
			rows["gc drain"].Add(Ours, r.rate)
			rows["gc latency idle"].Add(Ours, r.pushIdleMs)
			rows["gc latency during drain"].Add(Ours, r.pushDrainMs)
		}
	})

	var table bytes.Buffer
	writeReport(&table, cfg, limits, rows, order, notes, time.Since(started))
	fmt.Print("\n" + table.String())
	out := filepath.Join(results, "bench-compare.md")
	if err := os.WriteFile(out, table.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("table written to %s", out)
}

// optional checks or installs a peer's tool in a subtest, so that a missing tool
// (testtools.Unavailable: a skip outside CI, a failure in CI) leaves its
// column empty with the reason rather than ending the comparison.
func optional[T any](t *testing.T, name string, start func(t *testing.T) T) (T, string) {
	var v T
	ran, ok := false, false
	passed := t.Run("start-"+name, func(t *testing.T) {
		ran = true
		v = start(t)
		ok = true
	})
	switch {
	case passed && !ran:
		return v, "not run: -run left out start-" + name
	case !ok:
		return v, "unavailable: " + name + " could not be installed or started (see the log above)"
	}
	return v, ""
}

// noteFailed notes why on the cols without figures of every row whose
// key starts with one of prefixes.
func noteFailed(rows map[string]*Row, prefixes, cols []string, why string) {
	for k, r := range rows {
		for _, p := range prefixes {
			if !strings.HasPrefix(k, p) {
				continue
			}
			for _, c := range cols {
				if cell := r.Cells[c]; cell == nil || len(cell.Samples) == 0 {
					r.Note(c, why)
				}
			}
		}
	}
}

// noteAll notes why on col of every row whose key starts with prefix.
func noteAll(rows map[string]*Row, prefix, col, why string) {
	for k, r := range rows {
		if strings.HasPrefix(k, prefix) {
			r.Note(col, why)
		}
	}
}

func sizeName(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// defineRows returns the table's rows by key, and the keys in table
// order.
func defineRows(cfg config) (map[string]*Row, []string) {
	rows := map[string]*Row{}
	var order []string
	add := func(key string, r *Row) {
		rows[key] = r
		order = append(order, key)
	}
	large := "1 layer of " + sizeName(cfg.largeSize)
	small := fmt.Sprintf("%d layers of %s", cfg.smallLayers, sizeName(int64(cfg.smallSize)))
	for _, tool := range []string{"oras", "crane"} {
		for _, op := range []string{"push", "pull"} {
			add(tool+" "+op+" large", NewRow(fmt.Sprintf("%s %s, %s", tool, op, large), "MB/s", true, Distribution))
			add(tool+" "+op+" small", NewRow(fmt.Sprintf("%s %s, %s", tool, op, small), "MB/s", true, Distribution))
		}
	}
	add("monolithic push large", NewRow(fmt.Sprintf("monolithic upload of %s (POST, then one PUT ?digest= with the bytes)", large),
		"MB/s", true, Distribution))
	add("single pull large", NewRow(fmt.Sprintf("1 pull of the %s image, one client", sizeName(cfg.largeSize)), "MB/s", true, Distribution))
	add("concurrent pulls large",
		NewRow(fmt.Sprintf("%d concurrent pulls of the %s image", cfg.pullers, sizeName(cfg.largeSize)), "MB/s", true, Distribution))
	add("manifest push tags", NewRow(fmt.Sprintf("push of %d tagged manifests, each with its config blob, 8 clients, into a new image", cfg.tags),
		"manifests/s", true, Distribution))
	for _, p := range []string{"p50", "p99"} {
		add(fmt.Sprintf("manifest GET by tag, %d tags, %s", cfg.tags, p),
			NewRow(fmt.Sprintf("manifest GET by tag among %d tags, %s", cfg.tags, p), "µs", false, Distribution))
	}
	for _, op := range []string{"push", "pull"} {
		add("peak rss "+op, NewRow(fmt.Sprintf("peak RSS of the registry process, oras %s of 1 layer of %s (one run)", op, sizeName(cfg.limitBytes)),
			"MiB", false, Distribution))
	}
	verdaccio := func(r *Row) *Row { r.VersusName = "Verdaccio"; return r }
	add("npm publish", verdaccio(NewRow(fmt.Sprintf("npm publish, median per version (%d versions)", cfg.npmVersions), "ms", false, Peer)))
	add("npm publish server", NewRow("npm publish, mean server time per version (ours' request-duration metric)", "ms", false, ""))
	for _, c := range []string{"install", "ci"} {
		for _, w := range []string{"cold", "warm"} {
			add("npm "+c+" "+w, verdaccio(NewRow(fmt.Sprintf("npm %s, %d dependencies, %s client cache", c, cfg.npmDeps, w), "s", false, Peer)))
		}
	}
	add("npm install offline", NewRow(fmt.Sprintf("npm install --offline, %d dependencies, from the filled client cache (the CLI alone, no registry)",
		cfg.npmDeps), "s", false, ""))
	resolve := NewRow(fmt.Sprintf("mvn resolve of %d artifacts, empty local repository", cfg.mvnArtifacts), "s", false, Peer)
	resolve.VersusName = "static"
	add("mvn resolve", resolve)
	add("mvn baseline", NewRow("mvn with no dependencies (JVM and plugins, no registry)", "s", false, ""))
	add("gc drain", NewRow(fmt.Sprintf("GC drain of %d candidates (ours only)", cfg.gcCandidates), "objects/s", true, ""))
	add("gc latency idle", NewRow("image push p50 with no drain running (ours only)", "ms", false, ""))
	add("gc latency during drain", NewRow("image push p50 while the drain runs (ours only)", "ms", false, ""))
	return rows, order
}

// attachLimits sets each rate row's ceiling: a push hashes every byte on
// the client and the server and writes it durably; a pull reads it and
// moves it over loopback.
func attachLimits(rows map[string]*Row, l Limits) {
	pushLimit := &Limit{Name: "sha256/core", Value: l.SHA256PerCore}
	if l.DiskWrite < pushLimit.Value {
		pushLimit = &Limit{Name: "fsync'd disk write", Value: l.DiskWrite}
	}
	pullLimit := &Limit{Name: "loopback TCP", Value: l.Loopback}
	if l.SHA256PerCore < pullLimit.Value {
		pullLimit = &Limit{Name: "sha256/core", Value: l.SHA256PerCore}
	}
	for k, r := range rows {
		if r.Unit != "MB/s" {
			continue // counts and times have no byte rate to compare with
		}
		switch {
		case strings.Contains(k, "concurrent pulls"), strings.Contains(k, "single pull"):
			// The clients count bytes without hashing them.
			r.Limit = &Limit{Name: "loopback TCP", Value: l.Loopback}
		case strings.Contains(k, " push "):
			r.Limit = pushLimit
		case strings.Contains(k, " pull "):
			r.Limit = pullLimit
		}
	}
}

func writeReport(w *bytes.Buffer, cfg config, l Limits, rows map[string]*Row, order, notes []string, took time.Duration) {
	mode := "full"
	if cfg.quick {
		mode = "quick (small sizes: plumbing check, not figures to quote)"
	}
	load, _ := os.ReadFile("/proc/loadavg")
	rev, _ := exec.Command("git", "-C", "../..", "describe", "--always", "--dirty").Output()
	fmt.Fprintf(w, "# bench-compare\n\n")
	fmt.Fprintf(w, "- when: %s; took %s; mode: %s; runs per figure: %d (median, spread min–max)\n",
		time.Now().UTC().Format(time.RFC3339), took.Round(time.Second), mode, cfg.runs)
	fmt.Fprintf(w, "- ours: %s; distribution %s; zot %s; Verdaccio %s; crane %s; oras %s\n",
		strings.TrimSpace(string(rev)), ocitools.RegistryVersion, ZotVersion, ocitools.VerdaccioVersion, ocitools.CraneVersion, ocitools.OrasVersion)
	fmt.Fprintf(w, "- machine: %d CPUs (%s/%s); load average at the end: %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, strings.TrimSpace(string(load)))
	fmt.Fprintf(w, "- limits (MB/s): sha256 one core %s; disk write+fsync %s; disk read (cache dropped) %s; loopback TCP %s\n",
		FormatNumber(l.SHA256PerCore), FormatNumber(l.DiskWrite), FormatNumber(l.DiskRead), FormatNumber(l.Loopback))
	for _, n := range notes {
		fmt.Fprintf(w, "- note: %s\n", n)
	}
	fmt.Fprintln(w)
	ordered := make([]*Row, 0, len(order))
	for _, k := range order {
		ordered = append(ordered, rows[k])
	}
	_ = WriteMarkdown(w, ordered)
	fmt.Fprintf(w, "\n\"ours vs peer\" is how many times faster ours is (above 1: ours is faster). The Maven peer is a static file server (the floor), not a repository manager. See docs/benchmarks.md.\n")
}
