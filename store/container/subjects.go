package container

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// OCI subjects (docs/schema.md "Format tables", manifest subjects): a
// manifest's subject_digest names the manifest it is attached to, and the
// referrers of a digest are found in the image with
// container_manifests_subject_idx. Rows stored before the column existed
// have subject_recorded = false until gc:record-manifest-subjects reads
// their payloads; the protocol reads those payloads itself meanwhile
// (UnrecordedReferrerCandidates).

// Referrer is an active manifest whose recorded subject is the digest
// asked for, with its payload blob row (the descriptor size is the
// payload's).
type Referrer struct {
	ManifestRow
	ArtifactType string
}

// referrersSQL lists an image's active referrers of a subject by digest:
// a range scan of container_manifests_subject_idx (namespace, image,
// subject, then digest: the order asked for), with the optional artifact
// type ($5) and keyset ($6) as filters on the rows it finds.
const referrersSQL = `
SELECT ` + manifestRowColumns + `, COALESCE(cm.artifact_type, '')
FROM container_manifests cm
WHERE cm.namespace_id = $1 AND cm.container_image_id = $2 AND cm.subject_digest = $3
  AND cm.soft_deleted_at IS NULL
  AND ($5::text IS NULL OR cm.artifact_type = $5)
  AND ($6::bytea IS NULL OR cm.digest > $6)
ORDER BY cm.digest
LIMIT $4`

// Referrers returns up to limit active manifests of the target's image
// whose recorded subject is subject, by digest after after (nil: from the
// start), only those of artifactType unless it is "" (referrersSQL), with
// their payload blob rows.
func (s *Store) Referrers(ctx context.Context, t *Target, subject [32]byte, artifactType string, after []byte, limit int) ([]*Referrer, error) {
	if t.ImageID == uuid.Nil || limit <= 0 {
		return nil, nil
	}
	var filter *string
	if artifactType != "" {
		filter = &artifactType
	}
	rows, err := s.pool.Query(ctx, referrersSQL, t.NamespaceID, t.ImageID, subject[:], limit, filter, after)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: referrers: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Referrer, error) {
		var (
			m   Referrer
			dig []byte
		)
		if err := r.Scan(&m.ID, &dig, &m.MediaType, &m.Size, &m.ArtifactType); err != nil {
			return nil, err
		}
		if len(dig) != 32 {
			return nil, fmt.Errorf("manifest row with a %d-byte digest", len(dig))
		}
		m.Digest = [32]byte(dig)
		return &m, nil
	})
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: referrers: %w", err))
	}
	ms := make([]*ManifestRow, len(out))
	for i, r := range out {
		ms[i] = &r.ManifestRow
	}
	if err := s.withPayloads(ctx, t.NamespaceID, ms); err != nil {
		return nil, err
	}
	return out, nil
}

// UnrecordedReferrerCandidates lists the target image's active manifests
// whose subject is not recorded yet and whose media type can carry one
// (mediaTypes), by digest, with their payload blob rows: the protocol
// reads their payloads to find the subject. The partial index
// container_manifests_subject_unrecorded_idx finds them; once the backfill
// has run it is empty and this is one index probe.
func (s *Store) UnrecordedReferrerCandidates(ctx context.Context, t *Target, mediaTypes []string) ([]*ManifestRow, error) {
	if t.ImageID == uuid.Nil {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+manifestRowColumns+`
		FROM container_manifests cm
		WHERE cm.namespace_id = $1 AND cm.container_image_id = $2 AND NOT cm.subject_recorded
		  AND cm.soft_deleted_at IS NULL AND cm.media_type = ANY($3::text[])
		ORDER BY cm.digest`, t.NamespaceID, t.ImageID, mediaTypes)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: unrecorded referrer candidates: %w", err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*ManifestRow, error) { return scanManifestRow(r) })
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: unrecorded referrer candidates: %w", err))
	}
	if err := s.withPayloads(ctx, t.NamespaceID, out); err != nil {
		return nil, err
	}
	return out, nil
}

// SubjectCursor is the backfill's position in a namespace: the (image,
// manifest) ids of the last row it listed.
type SubjectCursor struct {
	ImageID    uuid.UUID
	ManifestID uuid.UUID
}

// UnrecordedSubjects lists up to limit manifests of the namespace (any
// state) whose subject is not recorded, in (image, id) order after the
// cursor, with their payload blob rows (left empty when the blob row is
// missing).
func (s *Store) UnrecordedSubjects(ctx context.Context, nsID uuid.UUID, after SubjectCursor, limit int) ([]*UnrecordedManifest, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+manifestRowColumns+`, cm.container_image_id FROM container_manifests cm
		WHERE cm.namespace_id = $1 AND NOT cm.subject_recorded
		  AND (cm.container_image_id, cm.id) > ($2, $3)
		ORDER BY cm.container_image_id, cm.id LIMIT $4`, nsID, after.ImageID, after.ManifestID, limit)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: unrecorded subjects: %w", err))
	}
	out, err := collectUnrecorded(rows)
	if err != nil || len(out) == 0 {
		return nil, wrap("unrecorded subjects", db.MapErr(err))
	}
	return out, s.fillPayloads(ctx, nsID, out)
}

// RecordedSubject is the subject of one manifest as the backfill read it
// (Subject nil: none).
type RecordedSubject struct {
	ManifestID   uuid.UUID
	Subject      *[32]byte
	ArtifactType string
}

// RecordSubjects records the subjects of manifests stored before the
// column existed and marks them recorded, in one transaction (rows locked
// in id order, like every multi-row lock of manifests); a manifest purged
// or recorded meanwhile is skipped. It returns how many it recorded.
func (s *Store) RecordSubjects(ctx context.Context, nsID uuid.UUID, in []RecordedSubject) (int, error) {
	if len(in) == 0 {
		return 0, nil
	}
	in = slices.Clone(in)
	slices.SortFunc(in, func(a, b RecordedSubject) int { return bytes.Compare(a.ManifestID[:], b.ManifestID[:]) })
	ids := make([]uuid.UUID, len(in))
	subjects := make([][]byte, len(in))
	types := make([]string, len(in))
	for i, r := range in {
		ids[i], types[i] = r.ManifestID, r.ArtifactType
		if r.Subject != nil {
			subjects[i] = r.Subject[:]
		}
	}
	n := 0
	err := db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			WITH input AS (
				SELECT * FROM unnest($2::uuid[], $3::bytea[], $4::text[]) AS u(id, subject, artifact_type)
			), locked AS (
				SELECT cm.id FROM container_manifests cm JOIN input ON input.id = cm.id
				WHERE cm.namespace_id = $1 AND NOT cm.subject_recorded
				ORDER BY cm.id FOR UPDATE OF cm
			)
			UPDATE container_manifests cm
			SET subject_digest = input.subject, artifact_type = NULLIF(input.artifact_type, ''), subject_recorded = true
			FROM locked JOIN input ON input.id = locked.id
			WHERE cm.namespace_id = $1 AND cm.id = locked.id`, nsID, ids, subjects, types)
		if err != nil {
			return db.MapErr(fmt.Errorf("store: record subjects: %w", err))
		}
		n = int(tag.RowsAffected())
		return nil
	})
	return n, err
}

func collectUnrecorded(rows pgx.Rows) ([]*UnrecordedManifest, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*UnrecordedManifest, error) {
		var (
			m   UnrecordedManifest
			dig []byte
		)
		if err := r.Scan(&m.ID, &dig, &m.MediaType, &m.Size, &m.ImageID); err != nil {
			return nil, err
		}
		if len(dig) != 32 {
			return nil, fmt.Errorf("manifest row with a %d-byte digest", len(dig))
		}
		m.Digest = [32]byte(dig)
		return &m, nil
	})
}

// fillPayloads sets the payload blob rows of listed manifests, leaving
// those whose blob row is missing empty (the caller reports them).
func (s *Store) fillPayloads(ctx context.Context, nsID uuid.UUID, ms []*UnrecordedManifest) error {
	shas := make([][]byte, len(ms))
	for i, m := range ms {
		shas[i] = m.Digest[:]
	}
	blobs, err := statBlobs(ctx, s.pool, nsID, shas)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if b, ok := blobs[m.Digest]; ok {
			m.Payload = *b
		}
	}
	return nil
}
