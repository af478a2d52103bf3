package gc

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
)

// TestStressPushDeleteRepushWhileGCRuns: many goroutines push images that
// share layers, delete them and push them again, through the store API
// (the OCI protocol does the same calls), while GC runs through a real
// River client with a tiny review delay on a fast-moving test clock. At
// the end every blob still referenced is readable byte-for-byte, and once
// the clock is past delay plus grace every blob no longer referenced is
// gone (row and object).
//
// GC_STRESS_OPS sets the number of operations per goroutine (default 40).
func TestStressPushDeleteRepushWhileGCRuns(t *testing.T) {
	if testing.Short() && os.Getenv("CI") == "" {
		t.Skip("stress test (runs in CI whatever -short)")
	}
	const (
		goroutines = 8
		layers     = 64
		hot        = 8           // layers most images share
		delay      = time.Minute // the review delay, on the test clock
		tick       = 10 * time.Minute
	)
	opsPer := 40
	if v, err := strconv.Atoi(os.Getenv("GC_STRESS_OPS")); err == nil && v > 0 {
		opsPer = v
	}
	e := newEnvWith(t, envOptions{
		cfg:         Config{CleanupWorkers: 4, BackoffBase: time.Minute, BackoffMax: 10 * time.Minute},
		reviewDelay: delay,
		maxConns:    24,
	})
	pool := make([][]byte, layers)
	for i := range pool {
		pool[i] = blobData(fmt.Sprintf("stress-layer-%d", i), 512+i*97)
	}
	c := e.riverClient(e.g)

	// The model: image id -> attachments, and the layer set of deleted
	// images for re-pushes.
	var (
		mu      sync.Mutex
		images  = map[int][]store.Attachment{}
		deleted [][]int
		nextID  int
	)
	var (
		pushes, deletes, repushes, retries atomic.Int64
	)
	pushImage := func(set []int) ([]store.Attachment, error) {
		blobs := make([][]byte, len(set))
		for i, l := range set {
			blobs[i] = pool[l]
		}
		for attempt := 0; ; attempt++ {
			atts, err := e.push(blobs...)
			if err == nil {
				return atts, nil
			}
			// What a client sees as 503 or BLOB_UNKNOWN (its blob was
			// reclaimed between upload and manifest): retry the push.
			if attempt < 50 && (store.HasCode(err, store.CodeRetryable) || store.HasCode(err, store.CodeBlobUnknown) ||
				store.HasCode(err, store.CodeBlobMustReupload) || store.HasCode(err, store.CodeUploadUnknown)) {
				retries.Add(1)
				continue
			}
			return nil, err
		}
	}

	stop := make(chan struct{})
	var gcWG sync.WaitGroup
	gcWG.Add(1)
	go func() { // the GC driver: time moves, sweeps and scans get enqueued
		defer gcWG.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond): // pacing only
			}
			e.clock.Advance(tick)
			if _, err := c.Insert(e.ctx, SweepArgs{}, nil); err != nil {
				t.Errorf("insert sweep: %v", err)
				return
			}
			if i%10 == 0 {
				if _, err := c.Insert(e.ctx, ReconcileScanArgs{}, nil); err != nil {
					t.Errorf("insert reconcile: %v", err)
					return
				}
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for w := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range opsPer {
				mu.Lock()
				op := rng.IntN(10)
				var set []int
				var victim = -1
				switch {
				case op < 3 || len(images) == 0: // push a new image
					n := 1 + rng.IntN(3)
					for range n {
						if rng.IntN(2) == 0 {
							set = append(set, rng.IntN(hot))
						} else {
							set = append(set, hot+rng.IntN(layers-hot))
						}
					}
				case op < 8: // delete an image
					for id := range images {
						victim = id
						break
					}
				default: // re-push a deleted image's layers (or a new one)
					if len(deleted) > 0 {
						set = deleted[rng.IntN(len(deleted))]
					} else {
						set = []int{rng.IntN(hot), hot + rng.IntN(layers-hot)}
					}
				}
				var atts []store.Attachment
				if victim >= 0 {
					atts = images[victim]
					delete(images, victim)
				}
				mu.Unlock()

				if victim >= 0 {
					_, err := e.detach(atts...)
					for attempt := 0; store.HasCode(err, store.CodeRetryable) && attempt < 50; attempt++ {
						retries.Add(1)
						_, err = e.detach(atts...)
					}
					if err != nil {
						errs <- fmt.Errorf("delete: %w", err)
						return
					}
					deletes.Add(1)
					var layerSet []int
					for _, a := range atts {
						for i := range pool {
							if sha256.Sum256(pool[i]) == a.SHA256 {
								layerSet = append(layerSet, i)
							}
						}
					}
					mu.Lock()
					deleted = append(deleted, layerSet)
					mu.Unlock()
					continue
				}
				atts, err := pushImage(set)
				if err != nil {
					errs <- fmt.Errorf("push: %w", err)
					return
				}
				if op >= 8 {
					repushes.Add(1)
				} else {
					pushes.Add(1)
				}
				mu.Lock()
				images[nextID] = atts
				nextID++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	gcWG.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e.waitJobs(c)

	referenced := map[[32]byte]bool{}
	for _, atts := range images {
		for _, a := range atts {
			referenced[a.SHA256] = true
		}
	}
	check := func(stage string) (intact, gone int) {
		t.Helper()
		for _, b := range pool {
			sum := sha256.Sum256(b)
			if referenced[sum] {
				e.assertIntact(b)
				intact++
			} else if _, ok := e.readBlob(b); !ok {
				gone++
			}
		}
		t.Logf("%s: %d referenced layers intact, %d unreferenced gone", stage, intact, gone)
		return intact, gone
	}
	check("after the run")
	duringRun := gatherGauge(t, e.g, MetricReclaimedObjects)

	// Drain: past delay plus grace, repair missed records, past the delay
	// again, sweep until nothing is due.
	e.pastDelayAndGrace()
	if _, err := c.Insert(e.ctx, ReconcileScanArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitJobs(c)
	for range 5 {
		e.clock.Advance(delay + DefaultBackoffMax + time.Minute)
		if _, err := c.Insert(e.ctx, SweepArgs{}, nil); err != nil {
			t.Fatal(err)
		}
		e.waitJobs(c)
	}
	intact, _ := check("after the drain")
	for _, b := range pool {
		if !referenced[sha256.Sum256(b)] {
			e.assertGone(b)
		}
	}
	qs, err := e.st.GCQueueStats(e.ctx, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if qs.Excluded != 0 || qs.Due != 0 {
		t.Fatalf("queue after the drain: %+v", qs)
	}
	ops := pushes.Load() + deletes.Load() + repushes.Load()
	total := gatherGauge(t, e.g, MetricReclaimedObjects)
	checks := gatherGauge(t, e.g, MetricCleanupOutcomes, "outcome", "locked")
	t.Logf("stress: %d operations (%d pushes, %d deletes, %d re-pushes) by %d goroutines, %d client retries (503/BLOB_UNKNOWN); GC reclaimed %v objects during the run and %v in all, %v cleanups gave way to a held row; %d referenced layers intact, %d unreferenced layers gone",
		ops, pushes.Load(), deletes.Load(), repushes.Load(), goroutines, retries.Load(), duringRun, total, max(checks, 0), intact, len(pool)-intact)
	if total <= 0 {
		t.Fatal("GC reclaimed nothing: the stress test proved nothing")
	}
}
