package gc

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"golang.org/x/sync/errgroup"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// BenchmarkDrainDueCandidates: the drain rate of 100,000 due candidates
// (GC_BENCH_CANDIDATES to change) on the file backend, through a real
// River client with the default cleanup worker count and batch size
// and rate (GC_BENCH_WORKERS, GC_BENCH_BATCH and GC_BENCH_RATE to change;
// a negative rate is unpaced). Setup (not timed) bulk-loads blob rows, their objects and their
// candidates; the timed part is sweep + cleanups until the queue is empty.
// Reports objects/s.
//
// A prober pushes an image into the drained namespace every 10 ms (four
// shared layers, a new config) for 5 s before the drain, throughout it and
// for 5 s after it, and the benchmark reports the median push latency
// while idle (before and after) and during the drain: what the drain
// costs the foreground.
//
//	go test -run '^$' -bench DrainDueCandidates -benchtime 1x ./gc/
func BenchmarkDrainDueCandidates(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GC_BENCH_CANDIDATES")); err == nil && v > 0 {
		n = v
	}
	workers := DefaultCleanupWorkers
	if v, err := strconv.Atoi(os.Getenv("GC_BENCH_WORKERS")); err == nil && v > 0 {
		workers = v
	}
	batch := DefaultCleanupBatch
	if v, err := strconv.Atoi(os.Getenv("GC_BENCH_BATCH")); err == nil && v > 0 {
		batch = v
	}
	pace := 0.0
	if v, err := strconv.ParseFloat(os.Getenv("GC_BENCH_RATE"), 64); err == nil {
		pace = v
	}
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		e := newEnvWith(b, envOptions{maxConns: int32(workers) + 6})
		objs, err := objstore.Open(e.ctx, "file://"+dir)
		if err != nil {
			b.Fatal(err)
		}
		e.st = store.New(e.pool, objs, store.Options{Clock: e.clock, ReviewDelay: testReviewDelay})
		e.g = e.newGC(Config{CleanupWorkers: workers, CleanupBatch: batch, CleanupRate: pace})
		loadDueCandidates(b, e, dir, n)
		e.waitTimeout = 30 * time.Minute
		// Listing in-flight jobs scans river_job, which holds every
		// finished cleanup: polled every 10 ms it took about a tenth of the
		// database's CPU away from the drain it measures.
		e.waitPoll = 250 * time.Millisecond
		c := e.riverClientWith(e.g, &river.Config{}) // fetch settings as serve runs them
		probe := newPushProbe(b, e)
		idleStop := make(chan struct{})
		time.AfterFunc(5*time.Second, func() { close(idleStop) })
		idle := probe.run(b, idleStop)
		stop := make(chan struct{})
		during := make(chan []time.Duration, 1)
		go func() { during <- probe.run(b, stop) }()
		b.StartTimer()

		start := time.Now()
		for {
			if _, err := c.Insert(e.ctx, SweepArgs{}, nil); err != nil {
				b.Fatal(err)
			}
			e.waitJobs(c)
			qs, err := e.st.GCQueueStats(e.ctx, e.clock.Now())
			if err != nil {
				b.Fatal(err)
			}
			if qs.Tracked == 0 {
				break
			}
			if qs.Due == 0 {
				b.Fatalf("queue stuck: %+v", qs)
			}
		}
		took := time.Since(start)
		b.StopTimer()
		close(stop)
		drainP50 := quantileMs(<-during, 0.5)
		// Idle again after the drain: the probe's own pushes grow the
		// tables, so a baseline taken only before a long drain flatters
		// or penalizes it; both idle phases together are the baseline.
		afterStop := make(chan struct{})
		time.AfterFunc(5*time.Second, func() { close(afterStop) })
		after := probe.run(b, afterStop)
		beforeP50, afterP50 := quantileMs(idle, 0.5), quantileMs(after, 0.5)
		idleP50 := quantileMs(append(idle, after...), 0.5)
		b.ReportMetric(idleP50, "push-p50-ms-idle")
		b.ReportMetric(drainP50, "push-p50-ms-drain")
		b.Logf("push p50 %.2f ms idle (%.2f before the drain, %.2f after), %.2f ms during the drain (%+.0f%%)",
			idleP50, beforeP50, afterP50, drainP50, 100*(drainP50/idleP50-1))
		if got := gatherGauge(b, e.g, MetricReclaimedObjects); got != float64(n) {
			b.Fatalf("reclaimed %v objects, want %d", got, n)
		}
		b.ReportMetric(float64(n)/took.Seconds(), "objects/s")
		b.Logf("drained %d due candidates in %v with %d cleanup workers: %.0f objects/s", n, took.Round(time.Millisecond), workers, float64(n)/took.Seconds())
		b.StartTimer()
	}
}

// pushProbe pushes images the way a client would while something else
// loads the database: four 16 KiB layers every push shares (deduplicated
// after the first) and a config of its own.
type pushProbe struct {
	e      *env
	layers [][]byte
	seq    int
}

func newPushProbe(b *testing.B, e *env) *pushProbe {
	p := &pushProbe{e: e}
	for l := range 4 {
		p.layers = append(p.layers, blobData(fmt.Sprintf("probe-layer-%d", l), 16<<10))
	}
	if _, err := e.push(p.layers...); err != nil {
		b.Fatal(err)
	}
	return p
}

// run pushes every 10 ms until stop is closed and returns each push's
// latency.
func (p *pushProbe) run(b *testing.B, stop <-chan struct{}) []time.Duration {
	var lat []time.Duration
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return lat
		case <-tick.C:
		}
		p.seq++
		t0 := time.Now()
		if _, err := p.e.push(append(slices.Clone(p.layers), blobData(fmt.Sprintf("probe-config-%d", p.seq), 1024))...); err != nil {
			b.Error(err)
			return lat
		}
		lat = append(lat, time.Since(t0))
	}
}

// quantileMs returns the f-quantile of lat in milliseconds (sorting lat).
func quantileMs(lat []time.Duration, f float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return float64(lat[min(len(lat)-1, int(f*float64(len(lat))))].Microseconds()) / 1000
}

// loadDueCandidates bulk-creates n blob rows older than the grace window,
// one small object each on the file backend, and a due candidate each
// (benchmark fixture: plain SQL and file writes, for speed).
func loadDueCandidates(b *testing.B, e *env, dir string, n int) {
	b.Helper()
	t0 := time.Now()
	now := e.clock.Now()
	_, err := e.pool.Exec(e.ctx, `
		INSERT INTO blob_storage_blobs (namespace_id, sha256, object_storage_key, size, created_at)
		SELECT $1::uuid, d, $1::uuid::text || '/blobs/sha256/' || substr(encode(d, 'hex'), 1, 2) || '/' || encode(d, 'hex'), 64, $3
		FROM (SELECT sha256(int8send(i)) AS d FROM generate_series(1, $2::bigint) i) s`,
		e.ns, n, now.Add(-2*store.GCGracePeriod))
	if err != nil {
		b.Fatal(err)
	}
	_, err = e.pool.Exec(e.ctx, `
		INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after)
		SELECT $1, sha256(int8send(i)), $3::timestamptz - make_interval(secs => i) FROM generate_series(1, $2::bigint) i`,
		e.ns, n, now)
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 64)
	var g errgroup.Group
	g.SetLimit(8)
	for i := 1; i <= n; i++ {
		g.Go(func() error {
			var be [8]byte
			for k := range 8 {
				be[k] = byte(uint64(i) >> (56 - 8*k))
			}
			sum := sha256.Sum256(be[:])
			p := filepath.Join(dir, filepath.FromSlash(objstore.BlobKey(e.ns, sum)))
			if err := os.WriteFile(p, payload, 0o644); err != nil {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				return os.WriteFile(p, payload, 0o644)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `ANALYZE gc_blob_review_queue; ANALYZE blob_storage_blobs`); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d blob rows, objects and due candidates in %v", n, time.Since(t0).Round(time.Millisecond))
}

// BenchmarkConcurrentPushes: 16 concurrent pushes of 4-layer images plus a
// unique config blob; "shared" pushes the same 4 layers every time (every
// push dedups and attaches the same blob rows, serialized by the blob-row
// lock), "disjoint" gives each pusher its own layers. The difference is
// the latency the blob-row lock adds. Reports pushes/s and p50/p99/max
// latency in ms.
func BenchmarkConcurrentPushes(b *testing.B) {
	for _, shared := range []bool{true, false} {
		name := "disjoint"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnvWith(b, envOptions{maxConns: 24})
			const pushers, layersPer = 16, 4
			layerSets := make([][][]byte, pushers)
			for p := range pushers {
				for l := range layersPer {
					owner := p
					if shared {
						owner = 0
					}
					layerSets[p] = append(layerSets[p], blobData(fmt.Sprintf("bench-layer-%d-%d", owner, l), 16<<10))
				}
				e.mustPush(layerSets[p]...) // the layers exist: pushes dedup
			}
			var (
				mu   sync.Mutex
				lat  []time.Duration
				next atomic.Int64
				seq  atomic.Int64
			)
			b.SetParallelism((pushers + 1) / 2) // x GOMAXPROCS goroutines
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				p := int(next.Add(1)-1) % pushers
				var mine []time.Duration
				for pb.Next() {
					cfg := blobData(fmt.Sprintf("bench-config-%d", seq.Add(1)), 1024)
					t0 := time.Now()
					blobs := append(slices.Clone(layerSets[p]), cfg)
					digests := make([][32]byte, len(blobs))
					for i, bl := range blobs {
						if _, err := e.upload(bl); err != nil {
							b.Error(err)
							return
						}
						digests[i] = sha256.Sum256(bl)
					}
					err := e.st.WithTx(e.ctx, func(tx pgx.Tx) error {
						_, err := e.st.Attach(e.ctx, tx, e.ns, digests)
						return err
					})
					if err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			took := time.Since(start)
			b.StopTimer()
			if len(lat) == 0 {
				return
			}
			b.ReportMetric(float64(len(lat))/took.Seconds(), "pushes/s")
			b.ReportMetric(quantileMs(lat, 0.50), "p50-ms")
			b.ReportMetric(quantileMs(lat, 0.99), "p99-ms")
			b.ReportMetric(quantileMs(lat, 1), "max-ms")
		})
	}
}
