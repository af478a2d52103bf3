package store

import (
	"context"
	"io"
	"testing"
	"time"
)

// BenchmarkS3ChunkedCommit: the commit of a 256 MiB upload held as 16 MiB
// chunks on a real S3 server (versitygw on loopback): 15 chunks appended
// beforehand (untimed), then the timed CommitUpload that appends the last
// chunk, composes the 16 parts into the blob object (server-side, or
// streamed through this process) and commits the database transaction.
//
//	go test -run '^$' -bench BenchmarkS3ChunkedCommit -benchtime 3x ./store/
func BenchmarkS3ChunkedCommit(b *testing.B) {
	const chunk = 16 << 20
	f := newBlobFixture(b, "s3", Options{})
	ctx := context.Background()
	for _, mode := range []string{"server-side", "streamed"} {
		b.Run(mode, func(b *testing.B) {
			f.objects.SetStreamCompose(mode == "streamed")
			defer f.objects.SetStreamCompose(false)
			b.SetBytes(benchBlobSize)
			var cpu cpuMeter
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				seed := uint64(time.Now().UnixNano())
				sum := genSum(seed, benchBlobSize)
				u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
				if err != nil {
					b.Fatal(err)
				}
				src := newGenReader(seed, benchBlobSize)
				for off := int64(0); off < benchBlobSize-chunk; off += chunk {
					if _, err := f.store.AppendUpload(ctx, u.Ref(), off, io.LimitReader(src, chunk)); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				cpu.Start()
				res, err := f.store.CommitUpload(ctx, u.Ref(), src, Expected{SHA256: sum, Size: benchBlobSize})
				cpu.Stop()
				b.StopTimer()
				if err != nil || !res.Created {
					b.Fatalf("commit: %+v %v", res, err)
				}
				if err := f.objects.Delete(ctx, res.Blob.ObjectStorageKey); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			cpu.report(b, benchBlobSize)
		})
	}
}
