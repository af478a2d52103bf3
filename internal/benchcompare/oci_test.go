//go:build benchcompare

package benchcompare

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/artifact-registry/artifact-registry/internal/ocibench"
	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// ociBench holds the OCI workloads' content and rows.
type ociBench struct {
	cfg   config
	work  string
	crane string
	oras  string
	// large is one layer of cfg.largeSize; small are cfg.smallLayers
	// layers of cfg.smallSize. Each push rewrites their first bytes so
	// nothing deduplicates against an earlier push.
	large string
	small []string
	// huge is the cfg.limitBytes layer of the peak-RSS rows, written on
	// first use.
	huge string
	rows map[string]*Row
}

func newOCIBench(t *testing.T, cfg config, work string, rows map[string]*Row) *ociBench {
	t.Helper()
	b := &ociBench{cfg: cfg, work: work, crane: ocitools.Crane(t), oras: ocitools.Oras(t), rows: rows}
	content := filepath.Join(work, "content")
	if err := os.MkdirAll(content, 0o755); err != nil {
		t.Fatal(err)
	}
	b.large = filepath.Join(content, "large.bin")
	writeRandom(t, b.large, cfg.largeSize)
	for i := range cfg.smallLayers {
		p := filepath.Join(content, fmt.Sprintf("small-%02d.bin", i))
		writeRandom(t, p, int64(cfg.smallSize))
		b.small = append(b.small, p)
	}
	return b
}

func writeRandom(t testing.TB, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		t.Fatal(err)
	}
}

// stamp makes the files' content unique to tag.
func stamp(t testing.TB, tag string, files ...string) {
	t.Helper()
	sum := sha256.Sum256([]byte(tag))
	for _, p := range files {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteAt(sum[:16], 0)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (b *ociBench) row(name string) *Row { return b.rows[name] }

// registryConfig writes the docker-style credentials file crane and oras
// read for target.
func registryConfig(t testing.TB, dir string, target ociTarget) string {
	t.Helper()
	cfg := map[string]any{"auths": map[string]any{}}
	if target.user != "" {
		cfg["auths"] = map[string]any{target.host: map[string]string{
			"auth": base64.StdEncoding.EncodeToString([]byte(target.user + ":" + target.pass))}}
	}
	raw, _ := json.Marshal(cfg)
	d := filepath.Join(dir, "docker-"+target.col)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "config.json"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// runTool runs a client binary and returns its wall time (from a settled
// disk: Settle).
func runTool(t testing.TB, dir string, env []string, bin string, args ...string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	Settle()
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, tail(out.String(), 4000))
	}
	return d
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// runOnce pushes and pulls the large and the small image with oras and
// with crane, then pulls the large image with 16 clients at once.
func (b *ociBench) runOnce(t *testing.T, run int, target ociTarget) {
	env, orasArgs := orasSetup(t, b.work, target)
	largeMB := float64(b.cfg.largeSize) / 1e6
	smallFiles := slices.Clone(b.small)
	smallTotal := float64(int64(b.cfg.smallSize)*int64(len(smallFiles))) / 1e6
	repo := func(kind string) string {
		return fmt.Sprintf("%s/bench/oci/%s-%d:v1", target.host, kind, run)
	}

	// oras: the files are the layers.
	for _, c := range []struct {
		kind  string
		files []string
		mb    float64
	}{{"large", []string{b.large}, largeMB}, {"small", smallFiles, smallTotal}} {
		stamp(t, fmt.Sprintf("oras-%s-%s-%d", target.col, c.kind, run), c.files...)
		names := make([]string, len(c.files))
		for i, f := range c.files {
			names[i] = filepath.Base(f) + ":" + ocibench.MediaLayer
		}
		ref := repo("oras-" + c.kind)
		d := runTool(t, filepath.Dir(c.files[0]), env, b.oras, append(append([]string{"push"}, orasArgs...), append([]string{ref}, names...)...)...)
		b.row("oras push "+c.kind).Add(target.col, c.mb/d.Seconds())
		out := t.TempDir()
		d = runTool(t, out, env, b.oras, append([]string{"pull"}, append(orasArgs, ref, "-o", out)...)...)
		checkFiles(t, out, c.files)
		_ = os.RemoveAll(out)
		b.row("oras pull "+c.kind).Add(target.col, c.mb/d.Seconds())
	}

	// crane: an OCI image layout of the layers.
	for _, c := range []struct {
		kind  string
		files []string
		mb    float64
	}{{"large", []string{b.large}, largeMB}, {"small", smallFiles, smallTotal}} {
		stamp(t, fmt.Sprintf("crane-%s-%s-%d", target.col, c.kind, run), c.files...)
		layout := writeLayout(t, t.TempDir(), c.files)
		ref := repo("crane-" + c.kind)
		d := runTool(t, layout, env, b.crane, "push", "--insecure", layout, ref)
		b.row("crane push "+c.kind).Add(target.col, c.mb/d.Seconds())
		out := filepath.Join(t.TempDir(), "pulled")
		d = runTool(t, filepath.Dir(out), env, b.crane, "pull", "--insecure", "--format", "oci", ref, out)
		checkLayout(t, out, c.files)
		_ = os.RemoveAll(filepath.Dir(out))
		_ = os.RemoveAll(layout)
		b.row("crane pull "+c.kind).Add(target.col, c.mb/d.Seconds())
	}

	stamp(t, fmt.Sprintf("monolithic-%s-%d", target.col, run), b.large)
	d := monolithicPut(t, target, "bench/oci/monolithic", b.large)
	b.row("monolithic push large").Add(target.col, largeMB/d.Seconds())

	// One client alone, then many at once: the second row over the first
	// is how the pulls scale with the machine's cores.
	pulled := "bench/oci/crane-large-" + fmt.Sprint(run)
	d = concurrentPulls(t, target, pulled, "v1", 1, b.cfg.largeSize)
	b.row("single pull large").Add(target.col, largeMB/d.Seconds())
	d = concurrentPulls(t, target, pulled, "v1", b.cfg.pullers, b.cfg.largeSize)
	b.row("concurrent pulls large").Add(target.col, float64(b.cfg.pullers)*largeMB/d.Seconds())
}

// monolithicPut uploads the file at path as one blob of name the way
// curl would: a POST for a session, then a single PUT ?digest= with the
// bytes. The file is read and its digest computed before the clock
// starts, so the time is the registry's: receiving, hashing and storing
// the bytes.
func monolithicPut(t testing.TB, target ociTarget, name, path string) time.Duration {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dg := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
	Settle()
	start := time.Now()
	if _, err := target.client().PushBlobDigest(context.Background(), name, data, dg); err != nil {
		t.Fatalf("monolithic upload to %s: %v", target.col, err)
	}
	return time.Since(start)
}

// peakRSS pushes and pulls one layer of cfg.limitBytes with oras and
// records the registry process's peak resident memory during each.
// Ours' figure is the serve process alone: its embedded PostgreSQL runs
// in processes of its own.
func (b *ociBench) peakRSS(t *testing.T, target ociTarget) {
	pid, err := ListenerPID(target.host)
	if err != nil {
		t.Fatal(err)
	}
	if b.huge == "" {
		b.huge = filepath.Join(b.work, "content", "huge.bin")
		writeRandom(t, b.huge, b.cfg.limitBytes)
	}
	stamp(t, "rss-"+target.col, b.huge)
	env, orasArgs := orasSetup(t, b.work, target)
	ref := target.host + "/bench/oci/rss:v1"
	measure := func(row, dir, verb string, rest ...string) {
		if err := ResetPeakRSS(pid); err != nil {
			t.Fatal(err)
		}
		runTool(t, dir, env, b.oras, append(append([]string{verb}, orasArgs...), rest...)...)
		peak, err := PeakRSS(pid)
		if err != nil {
			t.Fatal(err)
		}
		b.row(row).Add(target.col, float64(peak)/(1<<20))
	}
	measure("peak rss push", filepath.Dir(b.huge), "push", ref, filepath.Base(b.huge)+":"+ocibench.MediaLayer)
	out := t.TempDir()
	measure("peak rss pull", out, "pull", ref, "-o", out)
	checkFiles(t, out, []string{b.huge})
	_ = os.RemoveAll(out)
}

// orasSetup returns the environment and the flags an oras command
// against target runs with: plain HTTP and target's credentials.
func orasSetup(t testing.TB, work string, target ociTarget) (env, flags []string) {
	t.Helper()
	dockerCfg := registryConfig(t, work, target)
	return []string{"DOCKER_CONFIG=" + dockerCfg, "HOME=" + dockerCfg},
		[]string{"--plain-http", "--registry-config", filepath.Join(dockerCfg, "config.json")}
}

// checkFiles checks oras pulled every file with its size.
func checkFiles(t testing.TB, dir string, files []string) {
	t.Helper()
	for _, f := range files {
		want, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.Stat(filepath.Join(dir, filepath.Base(f)))
		if err != nil || got.Size() != want.Size() {
			t.Fatalf("pulled %s: %v (size %v, want %d)", filepath.Base(f), err, got, want.Size())
		}
	}
}

// checkLayout checks crane's pulled layout holds every layer (crane
// verifies each blob's digest as it reads it).
func checkLayout(t testing.TB, dir string, files []string) {
	t.Helper()
	for _, f := range files {
		dg := fileDigest(t, f)
		if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", dg)); err != nil {
			t.Fatalf("pulled layout lacks %s: %v", filepath.Base(f), err)
		}
	}
}

func fileDigest(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// writeLayout writes an OCI image layout under dir whose one image has
// files as its layers (hard links, not copies) and returns dir.
func writeLayout(t testing.TB, dir string, files []string) string {
	t.Helper()
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(b []byte) ocibench.Descriptor {
		dg := fmt.Sprintf("%x", sha256.Sum256(b))
		if err := os.WriteFile(filepath.Join(blobs, dg), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return ocibench.Descriptor{Digest: "sha256:" + dg, Size: int64(len(b))}
	}
	var layers []ocibench.Descriptor
	var diffIDs []string
	for _, f := range files {
		dg := fileDigest(t, f)
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Link(f, filepath.Join(blobs, dg)); err != nil {
			t.Fatal(err)
		}
		layers = append(layers, ocibench.Descriptor{MediaType: ocibench.MediaLayer, Digest: "sha256:" + dg, Size: fi.Size()})
		diffIDs = append(diffIDs, "sha256:"+dg)
	}
	cfg, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs}})
	cd := put(cfg)
	cd.MediaType = ocibench.MediaConfig
	man, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": ocibench.MediaManifest, "config": cd, "layers": layers})
	md := put(man)
	md.MediaType = ocibench.MediaManifest
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []ocibench.Descriptor{md}})
	if err := os.WriteFile(filepath.Join(dir, "index.json"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// concurrentPulls pulls name:ref (manifest, config, layers) with n
// clients at once and returns the wall time; each client checks it got
// every layer's bytes (the tools' pulls verify the digests).
func concurrentPulls(t testing.TB, target ociTarget, name, ref string, n int, minBytes int64) time.Duration {
	t.Helper()
	c := target.client()
	ctx := context.Background()
	Settle()
	start := time.Now()
	var g errgroup.Group
	for range n {
		g.Go(func() error {
			resp, err := c.Do(ctx, http.MethodGet, "/v2/"+name+"/manifests/"+ref, nil, http.StatusOK, "Accept", ocibench.MediaManifest)
			if err != nil {
				return err
			}
			var m struct {
				Config ocibench.Descriptor
				Layers []ocibench.Descriptor
			}
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if err != nil {
				return err
			}
			var total int64
			for _, d := range append([]ocibench.Descriptor{m.Config}, m.Layers...) {
				resp, err := c.Do(ctx, http.MethodGet, "/v2/"+name+"/blobs/"+d.Digest, nil, http.StatusOK)
				if err != nil {
					return err
				}
				got, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || got != d.Size {
					return fmt.Errorf("blob %s: %d bytes of %d: %v", d.Digest, got, d.Size, err)
				}
				total += got
			}
			if total < minBytes {
				return fmt.Errorf("pulled %d bytes, want at least %d", total, minBytes)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("concurrent pulls from %s: %v", target.col, err)
	}
	return time.Since(start)
}

// tagGets GETs manifests by tag one at a time and returns the
// latencies' p50 and p99 in µs.
func tagGets(t testing.TB, target ociTarget, name string, tags, gets int) (p50, p99 float64) {
	t.Helper()
	c := target.client()
	lat := make([]time.Duration, 0, gets)
	Settle()
	for i := range gets {
		d, err := ocibench.GetByTag(context.Background(), c, name, i, tags)
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, d)
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return us(ocibench.Percentile(lat, 0.50)), us(ocibench.Percentile(lat, 0.99))
}

// tags seeds a new image of target with cfg.tags tags in every run,
// timing the pushes, and measures GETs by tag in it. A seeding per run,
// like every other figure: a single one, half a minute on this kind of
// machine, moved by 30 % from one comparison to the next.
func (b *ociBench) tags(t *testing.T, run int, target ociTarget) {
	name := fmt.Sprintf("bench/oci/tags-%d", run)
	Settle()
	start := time.Now()
	if err := ocibench.SeedTags(context.Background(), target.client(), name, b.cfg.tags); err != nil {
		t.Fatalf("%s: %v", target.col, err)
	}
	took := time.Since(start)
	t.Logf("%s: %d tagged manifests pushed in %s", target.col, b.cfg.tags, took.Round(time.Millisecond))
	b.row("manifest push tags").Add(target.col, float64(b.cfg.tags)/took.Seconds())
	p50, p99 := tagGets(t, target, name, b.cfg.tags, b.cfg.tagGets)
	b.row(fmt.Sprintf("manifest GET by tag, %d tags, p50", b.cfg.tags)).Add(target.col, p50)
	b.row(fmt.Sprintf("manifest GET by tag, %d tags, p99", b.cfg.tags)).Add(target.col, p99)
}
