package objstore

import (
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The pipeline on its own, without the database: 256 MiB from memory into
// a file (page cache) while hashing, next to hashing alone and to the
// naive sequential copy through io.MultiWriter.

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

func BenchmarkHashOnly(b *testing.B) {
	b.SetBytes(benchSize)
	buf := make([]byte, copyBufSize)
	for b.Loop() {
		h := sha256.New()
		_, _ = io.CopyBuffer(h, &loopReader{n: benchSize}, buf)
		h.Sum(nil)
	}
}

func benchFile(b *testing.B, copyFn func(f *os.File, r io.Reader) error) {
	dir := b.TempDir()
	b.SetBytes(benchSize)
	for b.Loop() {
		f, err := os.Create(filepath.Join(dir, "x"))
		if err != nil {
			b.Fatal(err)
		}
		if err := copyFn(f, &loopReader{n: benchSize}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		b.StopTimer()
		os.Remove(f.Name())
		b.StartTimer()
	}
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
