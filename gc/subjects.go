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

// KindRecordSubjects is gc:record-manifest-subjects: the backfill of
// container_manifests.subject_digest and artifact_type for manifests
// stored before pushes recorded them (docs/schema.md "Format tables",
// manifest subjects). It reads payloads from storage and writes only those
// two columns; it never detaches or destroys anything, so it runs in
// every phase and ignores the kill switch.
const KindRecordSubjects = "gc:record-manifest-subjects"

// DefaultSubjectsInterval: once every row is recorded a run is one index
// probe per namespace.
const DefaultSubjectsInterval = 10 * time.Minute

// SubjectParser returns the subject (nil: none) and artifact type a push
// records for a stored manifest; cmd/artifact-registry passes
// oci.ManifestSubject.
type SubjectParser func(mediaType string, payload []byte) (*[32]byte, string, error)

// RecordSubjectsArgs is gc:record-manifest-subjects.
type RecordSubjectsArgs struct{}

// Kind implements river.JobArgs.
func (RecordSubjectsArgs) Kind() string { return KindRecordSubjects }

// InsertOpts: one run in flight at a time.
func (RecordSubjectsArgs) InsertOpts() river.InsertOpts {
	return maintenanceOpts(3)
}

type subjectsWorker struct {
	river.WorkerDefaults[RecordSubjectsArgs]
	g *GC
}

func (w *subjectsWorker) Timeout(*river.Job[RecordSubjectsArgs]) time.Duration { return time.Hour }

func (w *subjectsWorker) Work(ctx context.Context, _ *river.Job[RecordSubjectsArgs]) error {
	_, err := w.g.RecordSubjects(ctx)
	return err
}

// SubjectsResult is what one run did.
type SubjectsResult struct {
	Recorded    int // manifests whose subject was recorded
	WithSubject int // of which, manifests that have a subject
	// Unparsable: payloads the push parser refuses today (recorded without
	// a subject: the referrers API could not read one either).
	Unparsable int
	// Unreadable: payloads missing or unreadable in storage, left
	// unrecorded for the next run.
	Unreadable int
}

// RecordSubjects runs the backfill over every namespace: the unrecorded
// manifests are listed batch by batch (ReferencesBatch rows), the payloads
// of OCI manifests read and parsed (Docker manifests cannot carry a
// subject and are recorded without a read), and each batch recorded in one
// transaction.
func (g *GC) RecordSubjects(ctx context.Context) (*SubjectsResult, error) {
	res := &SubjectsResult{}
	if g.cfg.SubjectParser == nil {
		return res, nil
	}
	cs := container.New(g.st)
	var after uuid.UUID
	for {
		page, err := cs.NamespacePage(ctx, after, 500)
		if err != nil {
			return res, fmt.Errorf("gc: record subjects: %w", err)
		}
		for _, ns := range page {
			if err := g.recordSubjectsOf(ctx, cs, ns, res); err != nil {
				return res, fmt.Errorf("gc: record subjects of namespace %s: %w", ns, err)
			}
		}
		if len(page) < 500 {
			break
		}
		after = page[len(page)-1]
	}
	if res.Recorded+res.Unreadable > 0 {
		g.log.Info("gc.record_subjects", "recorded", res.Recorded, "with_subject", res.WithSubject,
			"unparsable", res.Unparsable, "unreadable", res.Unreadable)
	}
	return res, nil
}

func (g *GC) recordSubjectsOf(ctx context.Context, cs *container.Store, ns uuid.UUID, res *SubjectsResult) error {
	var after container.SubjectCursor
	for {
		ms, err := cs.UnrecordedSubjects(ctx, ns, after, g.cfg.ReferencesBatch)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return nil
		}
		batch := make([]container.RecordedSubject, 0, len(ms))
		for _, m := range ms {
			r, err := g.manifestSubject(ctx, cs, m)
			switch {
			case errors.Is(err, errUnparsable):
				res.Unparsable++
				g.log.Warn("gc: manifest payload does not parse; recorded without a subject", "namespace", ns, "manifest", m.ID, "err", err)
			case err != nil:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				res.Unreadable++
				g.log.Warn("gc: manifest payload unreadable; subject left unrecorded", "namespace", ns, "manifest", m.ID, "err", err)
				continue
			}
			if r.Subject != nil {
				res.WithSubject++
			}
			batch = append(batch, r)
		}
		n, err := cs.RecordSubjects(ctx, ns, batch)
		if err != nil {
			return err
		}
		res.Recorded += n
		last := ms[len(ms)-1]
		after = container.SubjectCursor{ImageID: last.ImageID, ManifestID: last.ID}
	}
}

var errUnparsable = errors.New("payload does not parse")

// manifestSubject reads one manifest's subject. Docker manifests (no
// subject, no artifact type of their own) are recorded without a read.
func (g *GC) manifestSubject(ctx context.Context, cs *container.Store, m *container.UnrecordedManifest) (container.RecordedSubject, error) {
	r := container.RecordedSubject{ManifestID: m.ID}
	if m.MediaType == container.MediaTypeDockerManifest || m.MediaType == container.MediaTypeDockerList {
		return r, nil
	}
	if m.Payload.ObjectStorageKey == "" {
		return r, errors.New("payload blob row missing")
	}
	payload, err := cs.ReadManifest(ctx, &m.ManifestRow, maxStoredManifest)
	if err != nil {
		return r, err
	}
	subject, artifactType, err := g.cfg.SubjectParser(m.MediaType, payload)
	if err != nil {
		return r, fmt.Errorf("%w: %v", errUnparsable, err)
	}
	r.Subject, r.ArtifactType = subject, artifactType
	return r, nil
}
