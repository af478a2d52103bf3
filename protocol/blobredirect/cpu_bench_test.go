package blobredirect_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// benchBlobSize is the blob each iteration downloads: -benchtime=16x is
// 1 GiB.
const benchBlobSize = 64 << 20

// BenchmarkDownloadCPU measures the CPU this process (the application
// tier: every surface of the registry, nothing else) spends per GiB of
// OCI blob downloads from S3 storage, streamed here (local) and
// redirected to the object store (redirect). The client is curl in its
// own process, following the redirect, so its reading is not counted;
// nor is the S3 server's, which runs in its own process too.
//
//	go test -run '^$' -bench BenchmarkDownloadCPU -benchtime=16x ./protocol/blobredirect/
func BenchmarkDownloadCPU(b *testing.B) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		b.Skip("curl is needed as the out-of-process client")
	}
	srv := ocitools.StartS3(b, "cpu")
	bucketURL, _ := srv.NewBucket(b, "http://localhost:"+srv.Endpoint[strings.LastIndex(srv.Endpoint, ":")+1:])
	objs, err := objstore.Open(context.Background(), bucketURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = objs.Close() })
	blob := make([]byte, benchBlobSize)
	_, _ = rand.Read(blob)
	d := testserver.SHA(blob)
	for _, mode := range []struct {
		name     string
		redirect bool
	}{{"local", false}, {"redirect", true}} {
		b.Run(mode.name, func(b *testing.B) {
			e := testserver.New(b, testserver.Options{Objects: objs, RedirectDownloads: mode.redirect})
			e.Repo("bench", enum.FormatOCI, enum.VisibilityPublic)
			admin := testserver.Basic(testserver.AdminToken)
			if r := e.Do(http.MethodPost, "/v2/acme/bench/img/blobs/uploads/?digest="+d, admin, blob); r.Status != http.StatusCreated {
				b.Fatalf("push: %d %s", r.Status, r.Body)
			}
			url := e.URL + "/v2/acme/bench/img/blobs/" + d
			b.SetBytes(benchBlobSize)
			b.ResetTimer()
			before, start := cpuTime(b), time.Now()
			for range b.N {
				out, err := exec.Command(curl, "-sS", "-f", "-L", "-o", "/dev/null", "-w", "%{size_download}", url).Output()
				if err != nil || string(out) != "67108864" {
					b.Fatalf("curl: %v, %s bytes", err, out)
				}
			}
			cpu, wall := cpuTime(b)-before, time.Since(start)
			gib := float64(b.N) * benchBlobSize / (1 << 30)
			b.ReportMetric(cpu.Seconds()*1000/gib, "cpu-ms/GiB")
			b.ReportMetric(wall.Seconds()*1000/gib, "wall-ms/GiB")
		})
	}
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
