package gc

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/internal/jobstates"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

// KindCacheEvict is gc:cache-evict: evict the images of container
// pull-through caches and the versions of Maven proxies that were not
// downloaded within their namespace's
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
	return river.InsertOpts{Queue: QueueMaintenance, Priority: 3, MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: jobstates.InFlight()}}
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
	Namespaces int // namespaces with a rule and a cache, visited (once per cache family)
	Images     int // cached images evicted
	Versions   int // cached Maven versions evicted
	Candidates int // blobs left unused, recorded as GC candidates
	Stopped    bool
}

// CacheEvict runs one gc:cache-evict over every namespace with a
// KEEP_DOWNLOADED_WITHIN rule and a container remote or a Maven proxy.
// The kill switch is read before each namespace and fails closed (an
// eviction makes blobs reclaimable). An image or version downloaded since
// it was listed is kept: the batch checks last_downloaded_at again under
// the lock (a download's time is buffered, so it counts once folded; the
// rule is in days, the fold in seconds).
func (g *GC) CacheEvict(ctx context.Context) (*CacheEvictResult, error) {
	res := &CacheEvictResult{}
	cs, ms := container.New(g.st), maven.New(g.st)
	now := g.now()
	families := []struct {
		name  string
		list  func(ctx context.Context, after uuid.UUID, limit int) ([]cacheEvictNamespace, error)
		evict func(ctx context.Context, ns uuid.UUID, cutoff time.Time) (int, store.Released, error)
		count *int
	}{
		{"images", func(ctx context.Context, after uuid.UUID, limit int) ([]cacheEvictNamespace, error) {
			page, err := cs.CacheEvictNamespaces(ctx, after, limit)
			out := make([]cacheEvictNamespace, len(page))
			for i, n := range page {
				out[i] = cacheEvictNamespace{n.ID, n.Days}
			}
			return out, err
		}, func(ctx context.Context, ns uuid.UUID, cutoff time.Time) (int, store.Released, error) {
			return cs.EvictStaleRemoteImages(ctx, ns, cutoff, g.cfg.CacheEvictBatch, cacheEvictMaxBatches)
		}, &res.Images},
		{"maven_versions", func(ctx context.Context, after uuid.UUID, limit int) ([]cacheEvictNamespace, error) {
			page, err := ms.CacheEvictNamespaces(ctx, after, limit)
			out := make([]cacheEvictNamespace, len(page))
			for i, n := range page {
				out[i] = cacheEvictNamespace{n.ID, n.Days}
			}
			return out, err
		}, func(ctx context.Context, ns uuid.UUID, cutoff time.Time) (int, store.Released, error) {
			return ms.EvictStaleRemoteVersions(ctx, ns, cutoff, g.cfg.CacheEvictBatch, cacheEvictMaxBatches)
		}, &res.Versions},
	}
	for _, f := range families {
		after := uuid.Nil
		for {
			page, err := f.list(ctx, after, cacheEvictPage)
			if err != nil {
				return res, fmt.Errorf("gc: cache evict: %w", err)
			}
			for _, ns := range page {
				after = ns.id
				if err := g.reclaimGate(ctx); err != nil {
					res.Stopped = true
					g.log.Warn("gc: cache eviction stopped by the kill switch", "err", err)
					return res, nil
				}
				if ns.days <= 0 {
					continue
				}
				cutoff := now.Add(-time.Duration(ns.days) * 24 * time.Hour)
				n, rel, err := f.evict(ctx, ns.id, cutoff)
				res.Namespaces++
				*f.count += n
				res.Candidates += rel.Candidates
				if f.name == "images" {
					g.metrics.cacheEvicted.Add(float64(n))
				} else {
					g.metrics.cacheEvictedMavenVersions.Add(float64(n))
				}
				if n > 0 {
					g.log.Info("gc.cache_evict", "namespace", ns.id, f.name, n, "attachments_detached", rel.Attachments,
						"candidates_recorded", rel.Candidates, "keep_downloaded_within_days", ns.days)
				}
				if err != nil {
					return res, fmt.Errorf("gc: cache evict namespace %s: %w", ns.id, err)
				}
			}
			if len(page) < cacheEvictPage {
				break
			}
		}
	}
	return res, nil
}

type cacheEvictNamespace struct {
	id   uuid.UUID
	days int
}
