package gc

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/maven"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// KindCacheEvict is gc:cache-evict: evict the images of container
// pull-through caches and the versions of npm and Maven remotes that were
// not downloaded within their namespace's KEEP_DOWNLOADED_WITHIN days (the rule of the namespace's enabled
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
	NpmVersions   int
	MavenVersions int // cached Maven versions evicted, with their files
	Candidates    int // blobs left unused, recorded as GC candidates
	Stopped       bool
}

// cacheEvictor evicts one family of cached rows of a namespace.
type cacheEvictor struct {
	name   string // the log key
	evict  func(ctx context.Context, ns uuid.UUID, cutoff time.Time) (int, store.Released, error)
	count  func(*CacheEvictResult) *int
	metric func(*metrics) prometheus.Counter
}

// CacheEvict runs one gc:cache-evict over every namespace with a
// KEEP_DOWNLOADED_WITHIN rule and a remote repository. The kill switch is
// read before each namespace and family and fails closed (an eviction
// makes blobs reclaimable). An image or version downloaded since it was
// listed is kept: the batch checks last_downloaded_at again under the
// lock (a download's time is buffered, so it counts once folded; the rule
// is in days, the fold in seconds).
func (g *GC) CacheEvict(ctx context.Context) (*CacheEvictResult, error) {
	res := &CacheEvictResult{}
	cs := container.New(g.st)
	evictors := g.cacheEvictors(cs)
	now := g.now()
	after := uuid.Nil
	for {
		page, err := cs.CacheEvictNamespaces(ctx, after, cacheEvictPage)
		if err != nil {
			return res, fmt.Errorf("gc: cache evict: %w", err)
		}
		for _, ns := range page {
			after = ns.ID
			if ns.Days <= 0 {
				continue
			}
			res.Namespaces++
			cutoff := now.Add(-time.Duration(ns.Days) * 24 * time.Hour)
			for _, e := range evictors {
				if err := g.reclaimGate(ctx); err != nil {
					res.Stopped = true
					g.log.Warn("gc: cache eviction stopped by the kill switch", "err", err)
					return res, nil
				}
				n, rel, err := e.evict(ctx, ns.ID, cutoff)
				*e.count(res) += n
				res.Candidates += rel.Candidates
				e.metric(g.metrics).Add(float64(n))
				if n > 0 {
					g.log.Info("gc.cache_evict", "namespace", ns.ID, e.name, n, "attachments_detached", rel.Attachments,
						"candidates_recorded", rel.Candidates, "keep_downloaded_within_days", ns.Days)
				}
				if err != nil {
					return res, fmt.Errorf("gc: cache evict %s of namespace %s: %w", e.name, ns.ID, err)
				}
			}
		}
		if len(page) < cacheEvictPage {
			return res, nil
		}
	}
}

func (g *GC) cacheEvictors(cs *container.Store) []cacheEvictor {
	ns, ms := npmstore.New(g.st), maven.New(g.st)
	batch := g.cfg.CacheEvictBatch
	return []cacheEvictor{
		{"images", func(ctx context.Context, id uuid.UUID, cutoff time.Time) (int, store.Released, error) {
			return cs.EvictStaleRemoteImages(ctx, id, cutoff, batch, cacheEvictMaxBatches)
		}, func(r *CacheEvictResult) *int { return &r.Images }, func(m *metrics) prometheus.Counter { return m.cacheEvicted }},
		{"npm_versions", func(ctx context.Context, id uuid.UUID, cutoff time.Time) (int, store.Released, error) {
			return ns.EvictStaleRemoteVersions(ctx, id, cutoff, batch, cacheEvictMaxBatches)
		}, func(r *CacheEvictResult) *int { return &r.NpmVersions }, func(m *metrics) prometheus.Counter { return m.cacheEvictedNpmVersions }},
		{"maven_versions", func(ctx context.Context, id uuid.UUID, cutoff time.Time) (int, store.Released, error) {
			return ms.EvictStaleRemoteVersions(ctx, id, cutoff, batch, cacheEvictMaxBatches)
		}, func(r *CacheEvictResult) *int { return &r.MavenVersions }, func(m *metrics) prometheus.Counter { return m.cacheEvictedMavenVersions }},
	}
}
