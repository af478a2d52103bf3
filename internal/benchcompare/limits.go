package benchcompare

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Limits are the machine's ceilings a registry's figures can be read
// against, in MB/s (10^6 bytes): one core hashing SHA-256 (every byte
// pushed or pulled is hashed at least once), the disk the registries
// store on (written and fsync'd, then read back with the page cache
// dropped), and loopback TCP (one connection).
type Limits struct {
	SHA256PerCore float64
	DiskWrite     float64
	DiskRead      float64
	Loopback      float64
}

// MeasureLimits measures each limit moving size bytes; the disk ones use
// a scratch file under dir.
func MeasureLimits(ctx context.Context, dir string, size int64) (Limits, error) {
	var l Limits
	var err error
	buf := make([]byte, 1<<20)
	if _, err := rand.Read(buf); err != nil {
		return l, fmt.Errorf("random buffer: %w", err)
	}
	l.SHA256PerCore = hashRate(buf, size)
	if l.DiskWrite, l.DiskRead, err = diskRates(dir, buf, size); err != nil {
		return l, err
	}
	if l.Loopback, err = loopbackRate(ctx, buf, size); err != nil {
		return l, err
	}
	return l, nil
}

// Settle writes every dirty page of the machine back to disk (sync(2))
// before a timed workload. A registry that does not flush its writes
// (distribution, Verdaccio) leaves them to the kernel's writeback, which
// runs up to half a minute later on the same cores and disk as whatever
// is timed then: the registries take turns, so that is often the other
// registry's workload. After Settle a workload's time holds the
// writeback of no workload before it.
func Settle() { unix.Sync() }

func mbps(n int64, d time.Duration) float64 { return float64(n) / 1e6 / d.Seconds() }

func hashRate(buf []byte, size int64) float64 {
	h := sha256.New()
	start := time.Now()
	for n := int64(0); n < size; n += int64(len(buf)) {
		h.Write(buf)
	}
	h.Sum(nil)
	return mbps(size, time.Since(start))
}

// diskRates writes size bytes to a new file and fsyncs it (the write
// rate includes the fsync, as a registry's durable store pays it), drops
// the file's pages from the page cache and reads it back.
func diskRates(dir string, buf []byte, size int64) (write, read float64, err error) {
	p := filepath.Join(dir, "limits-scratch")
	defer os.Remove(p)
	f, err := os.Create(p)
	if err != nil {
		return 0, 0, fmt.Errorf("disk limit: %w", err)
	}
	defer f.Close()
	start := time.Now()
	for n := int64(0); n < size; n += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			return 0, 0, fmt.Errorf("disk limit: write: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return 0, 0, fmt.Errorf("disk limit: fsync: %w", err)
	}
	write = mbps(size, time.Since(start))
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, 0, fmt.Errorf("disk limit: drop the page cache: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, 0, fmt.Errorf("disk limit: %w", err)
	}
	start = time.Now()
	n, err := io.CopyBuffer(io.Discard, f, make([]byte, 1<<20))
	if err != nil {
		return 0, 0, fmt.Errorf("disk limit: read: %w", err)
	}
	return write, mbps(n, time.Since(start)), nil
}

// loopbackRate sends size bytes over one loopback TCP connection.
func loopbackRate(ctx context.Context, buf []byte, size int64) (float64, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("loopback limit: %w", err)
	}
	defer ln.Close()
	got := make(chan error, 1)
	var received int64
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		received, err = io.CopyBuffer(io.Discard, c, make([]byte, 1<<20))
		got <- err
	}()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("loopback limit: %w", err)
	}
	start := time.Now()
	for n := int64(0); n < size; n += int64(len(buf)) {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, fmt.Errorf("loopback limit: write: %w", err)
		}
	}
	c.Close()
	if err := <-got; err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("loopback limit: read: %w", err)
	}
	return mbps(received, time.Since(start)), nil
}
