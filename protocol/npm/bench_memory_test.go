package npm

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
)

// BenchmarkPublishLarge publishes a 64 MiB tarball that does not compress
// (an 85 MiB body) once per op, and reports what the publish costs in
// memory, client and server sharing the process (the client streams its
// body from one prepared buffer, so what grows is the server's):
//   - peak-heap-MiB: the highest live heap seen during the publish, above
//     the level before it (sampled every millisecond);
//   - rss-growth-MiB: the peak resident set during the publish (VmHWM,
//     reset before each op) above the resident set before it;
//   - alloc-MiB/op: bytes allocated.
//
// A publish that buffers the body and decodes it whole needs about three
// times the tarball; a streaming one a fixed few MiB.
func BenchmarkPublishLarge(b *testing.B) {
	e := newEnv(b, envOptions{})
	reg := e.registry("js")
	p := npmpack.NewPublish(b, "large", "1.0.0", nil)
	p.Tarball = npmpack.Tarball(b, p.PkgJSON, map[string]string{"blob.bin": string(randomText(64 << 20))})
	data := []byte(base64.StdEncoding.EncodeToString(p.Tarball))
	s512, s1 := sha512.Sum512(p.Tarball), sha1.Sum(p.Tarball)
	integrity, shasum := "sha512-"+base64.StdEncoding.EncodeToString(s512[:]), hex.EncodeToString(s1[:])

	var peakHeap, rssGrowth float64
	var allocs uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		version := fmt.Sprintf("1.0.%d", i)
		prefix := fmt.Sprintf(`{"_id":"large","name":"large","dist-tags":{"latest":%q},"versions":{%q:{"name":"large","version":%q,"dist":{"integrity":%q,"shasum":%q}}},"_attachments":{"large-%s.tgz":{"content_type":"application/octet-stream","length":%d,"data":"`,
			version, version, version, integrity, shasum, version, len(p.Tarball))
		suffix := `"}}}`
		body := io.MultiReader(strings.NewReader(prefix), bytes.NewReader(data), strings.NewReader(suffix))

		debug.FreeOSMemory() // a collection, and the freed pages back to the OS: RSS then tracks the heap
		resetPeakRSS()
		rss0, heap0 := rssBytes("VmRSS"), liveHeap()
		var ms0 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		stop, peak := sampleHeap()

		req, _ := http.NewRequest(http.MethodPut, reg+"large", body)
		req.ContentLength = int64(len(prefix) + len(data) + len(suffix))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("publish: %d %s", resp.StatusCode, out)
		}

		stop()
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		allocs += ms1.TotalAlloc - ms0.TotalAlloc
		peakHeap = max(peakHeap, float64(*peak-heap0)/(1<<20))
		if hwm := rssBytes("VmHWM"); hwm > 0 && rss0 > 0 {
			rssGrowth = max(rssGrowth, (float64(hwm)-float64(rss0))/(1<<20))
		}
	}
	b.ReportMetric(float64(len(data))/(1<<20), "body-MiB")
	b.ReportMetric(peakHeap, "peak-heap-MiB")
	b.ReportMetric(rssGrowth, "rss-growth-MiB")
	b.ReportMetric(float64(allocs)/float64(b.N)/(1<<20), "alloc-MiB/op")
}

// liveHeap is the bytes of live and not yet swept heap objects.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap records the highest liveHeap until stop is called.
func sampleHeap() (stop func(), peak *uint64) {
	peak = new(uint64)
	*peak = liveHeap()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				*peak = max(*peak, liveHeap())
			}
		}
	}()
	return func() { close(done); wg.Wait() }, peak
}

// resetPeakRSS resets VmHWM (Linux: writing 5 to clear_refs).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// rssBytes reads a Vm* line of /proc/self/status (0 when unavailable).
func rssBytes(field string) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
