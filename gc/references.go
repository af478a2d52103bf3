package gc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/artifact-registry/artifact-registry/store/container"
)

// KindRecordReferences is gc:record-blob-references: the backfill of
// container_manifest_blob_references for manifests stored before pushes
// recorded them, and the review of images whose purge had to keep blob
// links (docs/garbage-collection.md "What a purge detaches"). It reads
// manifest payloads from storage and only ever detaches links no manifest
// of their image references; it never destroys bytes.
const KindRecordReferences = "gc:record-blob-references"

// Defaults of the backfill.
const (
	DefaultReferencesInterval = 10 * time.Minute
	DefaultReferencesBatch    = 200
	maxStoredManifest         = 4 << 20 // the push limit (protocol/oci)
)

// ManifestParser returns the blob digests (config, layers) a stored
// manifest references; cmd/artifact-registry passes oci.BlobReferences.
type ManifestParser func(mediaType string, payload []byte) ([][32]byte, error)

// RecordReferencesArgs is gc:record-blob-references.
type RecordReferencesArgs struct{}

// Kind implements river.JobArgs.
func (RecordReferencesArgs) Kind() string { return KindRecordReferences }

// InsertOpts: one run in flight at a time.
func (RecordReferencesArgs) InsertOpts() river.InsertOpts {
	return maintenanceOpts(3)
}

type referencesWorker struct {
	river.WorkerDefaults[RecordReferencesArgs]
	g *GC
}

func (w *referencesWorker) Timeout(*river.Job[RecordReferencesArgs]) time.Duration { return time.Hour }

func (w *referencesWorker) Work(ctx context.Context, _ *river.Job[RecordReferencesArgs]) error {
	_, err := w.g.RecordReferences(ctx)
	return err
}

// ReferencesResult is what one run did.
type ReferencesResult struct {
	Recorded   int // manifests whose references were recorded
	Unreadable int // manifests left unrecorded (payload missing or unparsable)
	LinksFreed int // blob links of pending images freed
	Candidates int // blobs left with no attachment by those
	Stopped    bool
}

// RecordReferences runs the backfill over every namespace: unrecorded
// manifests are read and parsed batch by batch and their references
// recorded (one transaction per batch); then the images a purge marked
// pending are reviewed (gated by the kill switch, like every detach). A
// manifest whose payload cannot be read or parsed stays unrecorded (and
// its image's links stay attached); the next run tries again.
func (g *GC) RecordReferences(ctx context.Context) (*ReferencesResult, error) {
	res := &ReferencesResult{}
	if g.cfg.ManifestParser == nil {
		return res, nil
	}
	cs := container.New(g.st)
	var after uuid.UUID
	for {
		page, err := cs.NamespacePage(ctx, after, 500)
		if err != nil {
			return res, fmt.Errorf("gc: record references: %w", err)
		}
		for _, ns := range page {
			if err := g.recordNamespace(ctx, cs, ns, res); err != nil {
				if errors.Is(err, errReclaimStopped) {
					res.Stopped = true
					g.log.Warn("gc: link review stopped by the kill switch", "err", err)
					return res, nil
				}
				return res, fmt.Errorf("gc: record references of namespace %s: %w", ns, err)
			}
		}
		if len(page) < 500 {
			break
		}
		after = page[len(page)-1]
	}
	if res.Recorded+res.LinksFreed+res.Unreadable > 0 {
		g.log.Info("gc.record_references", "recorded", res.Recorded, "unreadable", res.Unreadable,
			"links_freed", res.LinksFreed, "candidates_recorded", res.Candidates)
	}
	return res, nil
}

func (g *GC) recordNamespace(ctx context.Context, cs *container.Store, ns uuid.UUID, res *ReferencesResult) error {
	var after uuid.UUID
	for {
		ms, err := cs.UnrecordedManifests(ctx, ns, after, g.cfg.ReferencesBatch)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			break
		}
		var batch []container.RecordedReferences
		for _, m := range ms {
			digests, err := g.manifestReferences(ctx, cs, m)
			if err != nil {
				res.Unreadable++
				g.log.Warn("gc: manifest references unreadable", "namespace", ns, "manifest", m.ID, "err", err)
				continue
			}
			batch = append(batch, container.RecordedReferences{ManifestID: m.ID, Digests: digests})
		}
		n, err := cs.RecordBlobReferences(ctx, ns, batch)
		if err != nil {
			return err
		}
		res.Recorded += n
		after = ms[len(ms)-1].ID
	}
	for {
		if err := g.reclaimGate(ctx); err != nil {
			return err
		}
		r, err := cs.ReviewPendingLinks(ctx, ns, g.cfg.ReferencesBatch)
		if err != nil {
			return err
		}
		res.LinksFreed += r.LinksFreed
		res.Candidates += r.Released.Candidates
		// Images kept pending stay for the next run.
		if r.Images < g.cfg.ReferencesBatch || r.StillKept == r.Images {
			return nil
		}
	}
}

func (g *GC) manifestReferences(ctx context.Context, cs *container.Store, m *container.UnrecordedManifest) ([][32]byte, error) {
	if m.Payload.ObjectStorageKey == "" {
		return nil, errors.New("payload blob row missing")
	}
	payload, err := cs.ReadManifest(ctx, &m.ManifestRow, maxStoredManifest)
	if err != nil {
		return nil, err
	}
	return g.cfg.ManifestParser(m.MediaType, payload)
}

// reclaimGate reads the kill switch (fails closed).
func (g *GC) reclaimGate(ctx context.Context) error {
	kctx, cancel := context.WithTimeout(ctx, killSwitchTimeout)
	defer cancel()
	enabled, by, err := g.cfg.KillSwitch.ReclaimEnabled(kctx)
	switch {
	case err != nil:
		return fmt.Errorf("%w (%s): %v", errReclaimStopped, StopFailClosed, err)
	case !enabled:
		return fmt.Errorf("%w (%s): %s", errReclaimStopped, StopOperator, by)
	}
	return nil
}
