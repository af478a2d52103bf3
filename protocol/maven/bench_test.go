package maven

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/mvnbench"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Benchmarks (make bench): deploy throughput of a 50 MiB jar over raw
// HTTP, maven-metadata.xml GET latency for a package with 1,000 versions,
// and (MAVEN_BENCH_RESOLVE=1) resolution of 50 artifacts by the real mvn
// from an empty local repository.

func benchServer(b *testing.B, stats ...*reqStats) *testServer {
	b.Helper()
	o := serverOpts{rootRouter: true}
	if len(stats) > 0 {
		o.stats = stats[0]
	}
	s := newTestServer(b, o)
	s.repo(b, "acme", "releases", enum.FormatMaven, enum.VisibilityPublic)
	s.repo(b, "acme", "snapshots", enum.FormatMaven, enum.VisibilityPublic)
	return s
}

func benchPut(b *testing.B, client *http.Client, url string, body []byte) {
	req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	req.SetBasicAuth("deployer", testToken)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("PUT %s: %d", url, resp.StatusCode)
	}
}

// BenchmarkDeployLargeJar PUTs a 50 MiB jar (new bytes and a new version
// each time, so nothing deduplicates): the bytes stream through the
// md5/sha1/sha256/sha512 hashers into the file bucket once.
func BenchmarkDeployLargeJar(b *testing.B) {
	s := benchServer(b)
	const size = 50 << 20
	jar := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < size; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < size; j++ {
			jar[i+j] = byte(v >> (8 * j))
		}
	}
	client := &http.Client{}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		copy(jar, fmt.Sprintf("%016d", i))
		v := fmt.Sprintf("1.0.%d", i)
		benchPut(b, client, s.URL+relBase+"/"+v+"/anchor-lib-"+v+".jar", jar)
	}
}

// BenchmarkDownloadLargeJar GETs a stored 50 MiB jar.
func BenchmarkDownloadLargeJar(b *testing.B) {
	s := benchServer(b)
	const size = 50 << 20
	jar := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	url := s.URL + relBase + "/1.0.0/anchor-lib-1.0.0.jar"
	benchPut(b, http.DefaultClient, url, jar)
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != size {
			b.Fatalf("read %d bytes", n)
		}
	}
}

// BenchmarkFileGet GETs, one at a time, a small jar and its .sha1 as mvn
// asks for them during a resolution, from a hosted repository and as a
// hit of a proxy that has cached them, and reports the latency
// percentiles the client sees: the server's whole path for a resolved
// file.
func BenchmarkFileGet(b *testing.B) {
	s := benchServer(b)
	client := &http.Client{}
	base, _, jar := mvnbench.Artifact(0)
	benchPut(b, client, s.URL+"/maven/acme/releases/"+base+".jar", jar)
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, base)), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, base+".jar"), jar, 0o644); err != nil {
		b.Fatal(err)
	}
	up := newUpstreamRepo(b, root)
	s.remote(b, "acme", "mirror", up.srv.URL, enum.VisibilityPublic, mavenRemoteDefaults())
	get := func(b *testing.B, url string) time.Duration {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
		return time.Since(start)
	}
	for _, repo := range []string{"releases", "mirror"} {
		for _, suffix := range []string{".jar", ".jar.sha1"} {
			b.Run(repo+"/"+suffix[1:], func(b *testing.B) {
				url := s.URL + "/maven/acme/" + repo + "/" + base + suffix
				get(b, url) // a proxy fills its cache
				var lat []time.Duration
				for b.Loop() {
					lat = append(lat, get(b, url))
				}
				reportPercentiles(b, lat)
			})
		}
	}
}

// BenchmarkMetadataGet1000Versions GETs the package-level
// maven-metadata.xml of a package with 1,000 versions (a stored,
// server-generated document) and reports the latency percentiles.
func BenchmarkMetadataGet1000Versions(b *testing.B) {
	s := benchServer(b)
	const versions = 1000
	seedVersions(b, s, versions)
	url := s.URL + relBase + "/maven-metadata.xml"
	client := &http.Client{}
	get := func() (int, time.Duration) {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET metadata: %d", resp.StatusCode)
		}
		return strings.Count(string(body), "<version>"), time.Since(start)
	}
	if n, _ := get(); n != versions {
		b.Fatalf("metadata lists %d versions", n)
	}
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		_, d := get()
		lat = append(lat, d)
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// seedVersions deploys versions 1.0.0 … of anchor-lib (a POM each) with a
// few concurrent clients.
func seedVersions(b *testing.B, s *testServer, n int) {
	b.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	client := &http.Client{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				v := fmt.Sprintf("1.%d.%d", i/100, i%100)
				benchPut(b, client, s.URL+relBase+"/"+v+"/anchor-lib-"+v+".pom", pom(v))
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// BenchmarkMavenResolve50 runs a real mvn that resolves 50 artifacts (pom,
// jar and their .sha1 each) from the registry into an empty local
// repository, and a baseline run with no dependencies (JVM and plugin
// start-up); it reports both and their difference. The workload is
// mvnbench's, which make bench-compare runs against the serve binary. Set
// MAVEN_BENCH_RESOLVE=1 to run it.
func BenchmarkMavenResolve50(b *testing.B) {
	if os.Getenv("MAVEN_BENCH_RESOLVE") == "" {
		b.Skip("set MAVEN_BENCH_RESOLVE=1 to run the real-mvn resolution benchmark")
	}
	stats := &reqStats{}
	s := benchServer(b, stats)
	const artifacts = 50
	client := &http.Client{}
	for i := range artifacts {
		base, p, jar := mvnbench.Artifact(i)
		benchPut(b, client, s.URL+"/maven/acme/releases/"+base+".pom", p)
		benchPut(b, client, s.URL+"/maven/acme/releases/"+base+".jar", jar)
	}
	settings, err := os.ReadFile("testdata/settings.xml")
	if err != nil {
		b.Fatal(err)
	}
	e, err := mvnbench.NewEnv(b.TempDir(), settings, testToken)
	if err != nil {
		b.Fatal(err)
	}
	project := func(deps string) string {
		d, err := e.Project(s.URL+"/maven/acme/releases", deps)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	withDeps, without := project(mvnbench.Dependencies(artifacts)), project("")
	run := func(dir string) (time.Duration, string) {
		d, out, err := e.Run(context.Background(), dir, mvnbench.Goal)
		if err != nil {
			b.Fatal(err)
		}
		return d, out
	}
	var (
		base, full []time.Duration
		server     []time.Duration
	)
	b.ResetTimer()
	for b.Loop() {
		d, _ := run(without)
		base = append(base, d)
		stats.reset()
		d, out := run(withDeps)
		full = append(full, d)
		server = append(server, stats.reset()...)
		if got := mvnbench.Resolved(out); got < artifacts {
			b.Fatalf("resolved %d artifacts:\n%s", got, tail(out, 30))
		}
	}
	b.StopTimer()
	b.ReportMetric(median(full).Seconds(), "mvn-s")
	b.ReportMetric(median(base).Seconds(), "baseline-s")
	b.ReportMetric((median(full) - median(base)).Seconds(), "resolve50-s")
	var total time.Duration
	for _, d := range server {
		total += d
	}
	b.ReportMetric(float64(len(server))/float64(len(full)), "requests/op")
	b.ReportMetric(total.Seconds()/float64(len(full)), "server-s/op")
	b.ReportMetric(float64(median(server).Microseconds())/1000, "server-p50-ms")
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
