package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkFileUploadLifecycle is the file-system work of one small
// upload with a SHA-1 (an npm publish), without the database: create the
// upload file with its metadata, write 4 KiB, promote it to a new blob
// key, remove what is left. meta=xattr keeps the metadata on the file;
// meta=sidecar is the path of a file system without user attributes (and
// of every upload before they were used). The directory is $TMPDIR: run
// it on disk and on tmpfs. cpu-us/op is the process's CPU time per
// upload, mostly the kernel's, which varies less than wall time here.
func BenchmarkFileUploadLifecycle(b *testing.B) {
	ctx := context.Background()
	meta := map[string]string{"checksum-sha1": "0a4d55a8d778e5022fab701977c5d840bbc486d0"}
	data := randBytes(4096, 9)
	for _, sidecar := range []bool{false, true} {
		name := "meta=xattr"
		if sidecar {
			name = "meta=sidecar"
		}
		b.Run(name, func(b *testing.B) {
			if sidecar {
				setMetadataOnFile = func(*os.File, map[string]string) error { return errNoXattrs }
				b.Cleanup(func() { setMetadataOnFile = setFileMetadata })
			}
			s, err := Open(ctx, "file://"+b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			ns := uuid.New()
			cpu := processCPU()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				u, err := s.CreateOpenUpload(ctx, ns, uuid.New(), meta)
				if err != nil {
					b.Fatal(err)
				}
				data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16) // a new blob every time
				if _, err := u.Write(ctx, 0, bytes.NewReader(data), sha256.New(), -1); err != nil {
					b.Fatal(err)
				}
				if err := u.Promote(ctx, nil, int64(len(data)), BlobKey(ns, sha256.Sum256(data))); err != nil {
					b.Fatal(err)
				}
				if err := u.Remove(ctx); err != nil {
					b.Fatal(err)
				}
				u.Close()
			}
			b.ReportMetric(float64((processCPU()-cpu)/time.Microsecond)/float64(b.N), "cpu-us/op")
		})
	}
}
