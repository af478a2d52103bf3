package gc

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/store/container"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// KindCacheEvict is gc:cache-evict: evict the images of container
// pull-through caches that were not pulled within their namespace's
// KEEP_DOWNLOADED_WITHIN days (the rule of the namespace's enabled
// default lifecycle policy; a namespace without one keeps its caches).
// Eviction hard-deletes the cached rows and detaches their blobs in the
// same transaction, so unused blobs become candidates of the ordinary
// zero-attachment path; it never touches storage
// (docs/remote-repositories.md, "Eviction").
const KindCacheEvict = "gc:cache-evict"

// Defaults of the cache eviction.
const (
	DefaultCacheEvictInterval = time.Hour
	DefaultCacheEvictTimeout  = time.Hour
	// DefaultCacheEvictBatch images are evicted per transaction, at most
	// cacheEvictMaxBatches batches per namespace and run, so one namespace
	// cannot hold a run.
	DefaultCacheEvictBatch = 50
	cacheEvictMaxBatches   = 20
	cacheEvictPage         = 200
)

// CacheEvictArgs is gc:cache-evict.
type CacheEvictArgs struct{}

// Kind implements river.JobArgs.
func (CacheEvictArgs) Kind() string { return KindCacheEvict }

// InsertOpts: one eviction run in flight at a time.
func (CacheEvictArgs) InsertOpts() river.InsertOpts {
	return maintenanceOpts(3)
}

type cacheEvictWorker struct {
	river.WorkerDefaults[CacheEvictArgs]
	g *GC
}

func (w *cacheEvictWorker) Timeout(*river.Job[CacheEvictArgs]) time.Duration {
	return DefaultCacheEvictTimeout
}

func (w *cacheEvictWorker) Work(ctx context.Context, _ *river.Job[CacheEvictArgs]) error {
	_, err := w.g.CacheEvict(ctx)
	return err
}

// CacheEvictResult is what one gc:cache-evict run did.
type CacheEvictResult struct {
	Namespaces int // namespaces with a rule and a cache, visited
	Images     int // cached images evicted
	// NpmVersions are cached npm versions evicted (their tarballs
	// detached; the packuments stay).
	NpmVersions int
	Candidates  int // blobs left unused, recorded as GC candidates
	Stopped     bool
}

// CacheEvict runs one gc:cache-evict over every namespace with a
// KEEP_DOWNLOADED_WITHIN rule and a container or npm remote. The kill switch is
// read before each namespace and fails closed (an eviction makes blobs
// reclaimable). An image pulled since it was listed is kept: the batch
// checks last_downloaded_at again under the image lock (a pull's time is
// buffered, so it counts once folded; the rule is in days, the fold in
// seconds).
func (g *GC) CacheEvict(ctx context.Context) (*CacheEvictResult, error) {
	res := &CacheEvictResult{}
	cs := container.New(g.st)
	now := g.now()
	after := uuid.Nil
	for {
		page, err := cs.CacheEvictNamespaces(ctx, after, cacheEvictPage)
		if err != nil {
			return res, fmt.Errorf("gc: cache evict: %w", err)
		}
		for _, ns := range page {
			after = ns.ID
			if err := g.reclaimGate(ctx); err != nil {
				res.Stopped = true
				g.log.Warn("gc: cache eviction stopped by the kill switch", "err", err)
				return res, nil
			}
			if ns.Days <= 0 {
				continue
			}
			cutoff := now.Add(-time.Duration(ns.Days) * 24 * time.Hour)
			n, rel, err := cs.EvictStaleRemoteImages(ctx, ns.ID, cutoff, g.cfg.CacheEvictBatch, cacheEvictMaxBatches)
			res.Namespaces++
			res.Images += n
			res.Candidates += rel.Candidates
			g.metrics.cacheEvicted.Add(float64(n))
			if n > 0 {
				g.log.Info("gc.cache_evict", "namespace", ns.ID, "images", n, "attachments_detached", rel.Attachments,
					"candidates_recorded", rel.Candidates, "keep_downloaded_within_days", ns.Days)
			}
			if err != nil {
				return res, fmt.Errorf("gc: cache evict namespace %s: %w", ns.ID, err)
			}
			if err := g.reclaimGate(ctx); err != nil {
				res.Stopped = true
				g.log.Warn("gc: cache eviction stopped by the kill switch", "err", err)
				return res, nil
			}
			nv, nrel, err := npmstore.New(g.st).EvictStaleRemoteVersions(ctx, ns.ID, cutoff, g.cfg.CacheEvictBatch, cacheEvictMaxBatches)
			res.NpmVersions += nv
			res.Candidates += nrel.Candidates
			g.metrics.cacheEvicted.Add(float64(nv))
			if nv > 0 {
				g.log.Info("gc.cache_evict", "namespace", ns.ID, "npm_versions", nv, "attachments_detached", nrel.Attachments,
					"candidates_recorded", nrel.Candidates, "keep_downloaded_within_days", ns.Days)
			}
			if err != nil {
				return res, fmt.Errorf("gc: cache evict npm versions of namespace %s: %w", ns.ID, err)
			}
		}
		if len(page) < cacheEvictPage {
			return res, nil
		}
	}
}
