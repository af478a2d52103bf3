package objstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// BenchmarkS3Promote measures the commit (Promote) of a 256 MiB upload
// held as 16 chunks of 16 MiB on a real S3 server (versitygw on
// loopback), composed by the server (UploadPartCopy) and streamed through
// this process. The chunks are written once; each iteration composes a
// new blob object from them. Besides the time, it reports the bytes this
// process wrote (files and sockets: the data it sent to the server) and
// the CPU time it spent per commit.
//
//	go test -run '^$' -bench BenchmarkS3Promote -benchtime 3x ./store/objstore/
func BenchmarkS3Promote(b *testing.B) {
	const (
		chunk  = 16 << 20
		chunks = 16
	)
	srv := ocitools.StartS3(b, "objstore-bench")
	srv.SetEnv(b)
	st, err := Open(context.Background(), srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ctx := context.Background()
	ns, id := uuid.New(), uuid.New()
	u, err := st.OpenUpload(ctx, ns, id)
	if err != nil {
		b.Fatal(err)
	}
	u.SetMetadata(map[string]string{"checksum-sha1": strings.Repeat("ab", 20)})
	data := randBytes(chunk*chunks, 9)
	cuts := make([]int, 0, chunks+1)
	for i := 0; i <= chunks; i++ {
		cuts = append(cuts, i*chunk)
	}
	parts := writeParts(b, u, data, cuts)
	size := int64(len(data))
	for _, mode := range []string{"server-side", "streamed"} {
		b.Run(mode, func(b *testing.B) {
			st.SetStreamCompose(mode == "streamed")
			defer st.SetStreamCompose(false)
			b.SetBytes(size)
			var written int64
			var cpu time.Duration
			for i := range b.N {
				written0, cpu0 := processWritten(b), processCPU()
				key := BlobKey(ns, sha256.Sum256(fmt.Appendf(nil, "%s-%d", mode, i)))
				if err := u.Promote(ctx, parts, size, key); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				written += processWritten(b) - written0
				cpu += processCPU() - cpu0
				if got, err := st.Size(ctx, key); err != nil || got != size {
					b.Fatalf("composed object: %d bytes, %v", got, err)
				}
				if err := st.Delete(ctx, key); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			// What the commit costs this process, whatever the server's speed.
			b.ReportMetric(float64(written)/float64(b.N), "written-B/op")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
	if err := st.DeleteUpload(ctx, ns, id); err != nil {
		b.Fatal(err)
	}
}

// processWritten is the number of bytes this process has written through
// write(2) and friends, sockets included (wchar of /proc/self/io).
func processWritten(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Fatalf("bytes written: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no wchar in /proc/self/io")
	return 0
}
