package objstore

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The pipeline on its own, without the database: 256 MiB from memory into
// a file (page cache) while hashing, next to hashing alone, writing alone
// and the naive sequential copy through io.MultiWriter. Each reports wall
// MB/s and cpu-ns/B (CPU time of the process per byte, which does not
// depend on what else runs on the machine).

const benchSize = 256 << 20

var benchSrc = randBytes(16<<20, 3)

// loopReader serves benchSrc repeatedly, n bytes in all.
type loopReader struct{ off, n int }

func (l *loopReader) Read(p []byte) (int, error) {
	if l.off >= l.n {
		return 0, io.EOF
	}
	p = p[:min(len(p), l.n-l.off)]
	total := 0
	for len(p) > 0 {
		k := copy(p, benchSrc[l.off%len(benchSrc):])
		p, l.off, total = p[k:], l.off+k, total+k
	}
	return total, nil
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkHashOnly(b *testing.B) {
	b.SetBytes(benchSize)
	buf := make([]byte, copyBufSize)
	cpu := processCPU()
	for b.Loop() {
		h := sha256.New()
		_, _ = io.CopyBuffer(h, &loopReader{n: benchSize}, buf)
		h.Sum(nil)
	}
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/benchSize/float64(b.N), "cpu-ns/B")
}

func benchFile(b *testing.B, copyFn func(f *os.File, r io.Reader) error) {
	dir := b.TempDir()
	b.SetBytes(benchSize)
	var cpu time.Duration
	for b.Loop() {
		f, err := os.Create(filepath.Join(dir, "x"))
		if err != nil {
			b.Fatal(err)
		}
		start := processCPU()
		if err := copyFn(f, &loopReader{n: benchSize}); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - start
		f.Close()
		b.StopTimer()
		os.Remove(f.Name())
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/benchSize/float64(b.N), "cpu-ns/B")
}

func BenchmarkWriteOnlyFile(b *testing.B) {
	buf := make([]byte, copyBufSize)
	benchFile(b, func(f *os.File, r io.Reader) error {
		_, err := io.CopyBuffer(struct{ io.Writer }{f}, r, buf)
		return err
	})
}

func BenchmarkCopyHashFile(b *testing.B) {
	benchFile(b, func(f *os.File, r io.Reader) error {
		_, err := CopyHash(f, r, sha256.New(), -1)
		return err
	})
}

func BenchmarkSequentialHashWriteFile(b *testing.B) {
	buf := make([]byte, copyBufSize)
	benchFile(b, func(f *os.File, r io.Reader) error {
		_, err := io.CopyBuffer(io.MultiWriter(sha256.New(), f), r, buf)
		return err
	})
}
