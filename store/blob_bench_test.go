package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// genReader streams n deterministic pseudo-random bytes without holding
// them: a 1 MiB random block repeated, each MiB stamped with (seed, index)
// so every stream and every MiB differ. Reading it is a memcpy.
type genReader struct {
	block []byte
	seed  uint64
	off   int64
	n     int64
}

var genBlock = func() []byte {
	b := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	return b
}()

func newGenReader(seed uint64, n int64) *genReader {
	return &genReader{block: genBlock, seed: seed, n: n}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	if int64(len(p)) > g.n-g.off {
		p = p[:g.n-g.off]
	}
	total := 0
	for len(p) > 0 {
		pos := int(g.off % int64(len(g.block)))
		n := copy(p, g.block[pos:])
		if pos < 16 { // stamp the first 16 bytes of each MiB
			var stamp [16]byte
			binary.LittleEndian.PutUint64(stamp[:], g.seed)
			binary.LittleEndian.PutUint64(stamp[8:], uint64(g.off>>20))
			copy(p[:min(n, 16-pos)], stamp[pos:])
		}
		p = p[n:]
		g.off += int64(n)
		total += n
	}
	return total, nil
}

// genSum hashes a generated stream (the expected digest).
func genSum(seed uint64, n int64) [32]byte {
	h := sha256.New()
	_, _ = io.CopyBuffer(h, newGenReader(seed, n), make([]byte, 1<<20))
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

const benchBlobSize = 256 << 20

// cpuMeter accumulates the CPU time (user+system, all threads) this
// process spends while it runs. On a shared, loaded machine wall-clock
// MB/s depend on the neighbours; CPU ns per byte do not, so the benchmarks
// report both.
type cpuMeter struct {
	total time.Duration
	start time.Duration
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (m *cpuMeter) Start() { m.start = processCPU() }
func (m *cpuMeter) Stop()  { m.total += processCPU() - m.start }

// report adds cpu-ns/B for n bytes per op.
func (m *cpuMeter) report(b *testing.B, bytesPerOp int64) {
	b.ReportMetric(float64(m.total.Nanoseconds())/float64(bytesPerOp)/float64(b.N), "cpu-ns/B")
}

// BenchmarkSHA256 is the baseline: Go's crypto/sha256 over the same
// generated 256 MiB stream the upload benchmarks send (generation
// included, as it is there).
func BenchmarkSHA256(b *testing.B) {
	b.SetBytes(benchBlobSize)
	buf := make([]byte, 1<<20)
	var cpu cpuMeter
	cpu.Start()
	for i := 0; b.Loop(); i++ {
		h := sha256.New()
		if _, err := io.CopyBuffer(h, newGenReader(uint64(i), benchBlobSize), buf); err != nil {
			b.Fatal(err)
		}
		h.Sum(nil)
	}
	cpu.Stop()
	cpu.report(b, benchBlobSize)
}

// benchUpload measures uploads of distinct 256 MiB blobs on the file
// backend; each blob is deleted (untimed) so the disk does not fill up.
func benchUpload(b *testing.B, upload func(f *blobFixture, seed uint64, sum [32]byte) (*CommitResult, error)) {
	f := newBlobFixture(b, "file", Options{})
	ctx := context.Background()
	b.SetBytes(benchBlobSize)
	var cpu cpuMeter
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seed := uint64(time.Now().UnixNano())
		b.StopTimer()
		sum := genSum(seed, benchBlobSize)
		b.StartTimer()
		cpu.Start()
		res, err := upload(f, seed, sum)
		cpu.Stop()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if !res.Created {
			b.Fatalf("not created: %+v", res)
		}
		if err := f.objects.Delete(ctx, res.Blob.ObjectStorageKey); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	cpu.report(b, benchBlobSize)
}

// BenchmarkUploadMonolithic: one PUT of 256 MiB (session, stream + hash
// into the upload file, commit by rename).
func BenchmarkUploadMonolithic(b *testing.B) {
	benchUpload(b, func(f *blobFixture, seed uint64, sum [32]byte) (*CommitResult, error) {
		return f.store.PutBlob(context.Background(), f.ref(uuid.Nil), newGenReader(seed, benchBlobSize),
			Expected{SHA256: sum, Size: benchBlobSize})
	})
}

// BenchmarkUploadChunked: 256 MiB in 16 MiB chunks (15 PATCH-like appends
// persisting the hash state each time, then the commit with the last one).
func BenchmarkUploadChunked(b *testing.B) {
	const chunk = 16 << 20
	benchUpload(b, func(f *blobFixture, seed uint64, sum [32]byte) (*CommitResult, error) {
		ctx := context.Background()
		u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
		if err != nil {
			return nil, err
		}
		src := newGenReader(seed, benchBlobSize)
		for off := int64(0); off < benchBlobSize-chunk; off += chunk {
			if _, err := f.store.AppendUpload(ctx, u.Ref(), off, io.LimitReader(src, chunk)); err != nil {
				return nil, err
			}
		}
		return f.store.CommitUpload(ctx, u.Ref(), src, Expected{SHA256: sum, Size: benchBlobSize})
	})
}

// BenchmarkDedupPut: PutBlob of 4 KiB that already exist (session insert,
// temp write, one-statement commit, temp delete).
func BenchmarkDedupPut(b *testing.B) {
	f := newBlobFixture(b, "file", Options{})
	data := randomBytes(4096, 1)
	f.put(b, data)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		res, err := f.store.PutBlob(ctx, f.ref(uuid.Nil), bytes.NewReader(data), want(data))
		if err != nil || !res.Deduplicated {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkDedupCommit: only the commit of an already uploaded resumable
// session whose blob exists (the dedup decision and its transaction).
func BenchmarkDedupCommit(b *testing.B) {
	f := newBlobFixture(b, "file", Options{})
	data := randomBytes(4096, 1)
	f.put(b, data)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		u, err := f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.store.AppendUpload(ctx, u.Ref(), 0, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := f.store.CommitUpload(ctx, u.Ref(), nil, want(data))
		if err != nil || !res.Deduplicated {
			b.Fatal(res, err)
		}
	}
}

// warmPool runs fn in a rolled-back transaction on every connection of the
// pool at once. The first attach or detach on a connection plans the
// foreign-key checks of every format table referencing the blob layer (64
// partitions each), which takes a second or more; a long-lived production
// pool pays that once per connection, a benchmark would spread it over its
// first iterations.
func (f *blobFixture) warmPool(b *testing.B, fn func(tx pgx.Tx) error) {
	b.Helper()
	ctx := context.Background()
	var conns []*pgxpool.Conn
	for range f.pool.Config().MaxConns {
		c, err := f.pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		tx, err := c.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := fn(tx); err != nil {
			b.Fatal(err)
		}
		_ = tx.Rollback(ctx)
		c.Release()
	}
}

// warmAttachDetach warms every connection for Attach and Detach of sha.
func (f *blobFixture) warmAttachDetach(b *testing.B, sha [32]byte) {
	ctx := context.Background()
	f.warmPool(b, func(tx pgx.Tx) error {
		atts, err := f.store.Attach(ctx, tx, f.ns, [][32]byte{sha})
		if err != nil {
			return err
		}
		_, err = f.store.Detach(ctx, tx, f.ns, atts)
		return err
	})
}

// BenchmarkAttachTx: one transaction attaching one blob (lock, insert,
// candidate delete, commit).
func BenchmarkAttachTx(b *testing.B) {
	f := newBlobFixture(b, "mem", Options{})
	sha := f.put(b, content(1)).Blob.SHA256
	f.warmAttachDetach(b, sha)
	b.ResetTimer()
	for b.Loop() {
		f.attach(b, sha)
	}
}

// BenchmarkAttachTx10: one transaction attaching ten blobs (an image
// manifest with its config and layers).
func BenchmarkAttachTx10(b *testing.B) {
	f := newBlobFixture(b, "mem", Options{})
	var shas [][32]byte
	for i := range 10 {
		shas = append(shas, f.put(b, content(i)).Blob.SHA256)
	}
	f.warmAttachDetach(b, shas[0])
	b.ResetTimer()
	for b.Loop() {
		f.attach(b, shas...)
	}
}

// BenchmarkDetachTx: one transaction detaching one of many attachments of
// a blob (lock, delete, count, no candidate).
func BenchmarkDetachTx(b *testing.B) {
	f := newBlobFixture(b, "mem", Options{})
	sha := f.put(b, content(1)).Blob.SHA256
	atts := make([]Attachment, 0, b.N+1)
	for range b.N + 1 {
		atts = append(atts, f.attach(b, sha)...)
	}
	f.warmAttachDetach(b, sha)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.detach(b, atts[i])
	}
}

// BenchmarkAttachDetachCycle: attach then detach the only use of a blob,
// in two transactions (the detach records a candidate, the next attach
// clears it and checks the object).
func BenchmarkAttachDetachCycle(b *testing.B) {
	f := newBlobFixture(b, "file", Options{})
	sha := f.put(b, content(1)).Blob.SHA256
	f.warmAttachDetach(b, sha)
	b.ResetTimer()
	for b.Loop() {
		f.detach(b, f.attach(b, sha)...)
	}
}

// procStatus reads a kB field of /proc/self/status (VmRSS, VmHWM).
func procStatus(t testing.TB, field string) int64 {
	t.Helper()
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		testtools.Unavailable(t, "no /proc/self/status")
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	t.Fatalf("%s not in /proc/self/status", field)
	return 0
}

// resetPeakRSS resets VmHWM to the current RSS (Linux: clear_refs 5).
func resetPeakRSS(t testing.TB) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		testtools.Unavailable(t, fmt.Sprintf("cannot reset the peak RSS: %v", err))
	}
}

func heapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkUploadPeakRSS measures how much the process RSS grows while it
// uploads 1 GiB on the file backend, monolithic and in 16 MiB chunks: a
// benchmark, not a test, since it measures and asserts nothing.
//
//	go test -run '^$' -bench UploadPeakRSS -benchtime 1x ./store/
func BenchmarkUploadPeakRSS(b *testing.B) {
	for _, mode := range []string{"monolithic", "chunked-16MiB"} {
		b.Run(mode, func(b *testing.B) {
			f := newBlobFixture(b, "file", Options{})
			for range b.N {
				uploadPeakRSS(b, f, mode == "monolithic")
			}
		})
	}
}

func uploadPeakRSS(b *testing.B, f *blobFixture, monolithic bool) {
	const size = 1 << 30
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	sum := genSum(seed, size)
	runtime.GC()
	resetPeakRSS(b)
	before, heapBefore := procStatus(b, "VmRSS"), heapInUse()
	start := time.Now()
	var res *CommitResult
	var err error
	if monolithic {
		res, err = f.store.PutBlob(ctx, f.ref(uuid.Nil), newGenReader(seed, size), Expected{SHA256: sum, Size: size})
	} else {
		var u *Upload
		if u, err = f.store.StartUpload(ctx, f.ns, f.repo, UploadResumable); err != nil {
			b.Fatal(err)
		}
		src := newGenReader(seed, size)
		for off := int64(0); off < size-16<<20; off += 16 << 20 {
			if _, err = f.store.AppendUpload(ctx, u.Ref(), off, io.LimitReader(src, 16<<20)); err != nil {
				b.Fatal(err)
			}
		}
		res, err = f.store.CommitUpload(ctx, u.Ref(), src, Expected{SHA256: sum, Size: size})
	}
	if err != nil || !res.Created {
		b.Fatal(res, err)
	}
	took := time.Since(start)
	hwm := procStatus(b, "VmHWM")
	b.ReportMetric(float64(hwm-before)/1024, "peak-rss-growth-MiB")
	b.ReportMetric((float64(heapInUse())-float64(heapBefore))/(1<<20), "heap-growth-MiB")
	b.ReportMetric(float64(size)/took.Seconds()/1e6, "MB/s")
	if err := f.objects.Delete(ctx, res.Blob.ObjectStorageKey); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRoundTrip is the unit for the latencies above: one SELECT 1 on
// the same pool (the blob operations cost a few of these: attach and
// detach 4 each, BEGIN+SET LOCAL, lock, write, COMMIT; a dedup commit 4,
// one of which is the dedup decision).
func BenchmarkRoundTrip(b *testing.B) {
	f := newBlobFixture(b, "mem", Options{})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.pool.Exec(ctx, `SELECT 1`); err != nil {
			b.Fatal(err)
		}
	}
}
