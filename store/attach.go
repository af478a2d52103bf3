package store

import (
	"context"
	"fmt"
	"time"

	"github.com/artifact-registry/artifact-registry/store/internal/blobsql"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// Attachment is a blob_storage_attachments row: one use of a blob by one
// format row, which stores (namespace_id, id, sha256) to reference it.
type Attachment struct {
	ID     int64
	SHA256 [32]byte
}

// lockBlobsObserved is lockBlobs for Attach and Detach: the time until
// every row is locked goes to the push observer (the blob-row lock wait
// histogram of docs/garbage-collection.md "Operational controls"),
// successful or not.
func (s *Store) lockBlobsObserved(ctx context.Context, tx pgx.Tx, namespaceID uuid.UUID, digests [][]byte) (map[[32]byte]string, error) {
	start := time.Now()
	defer s.ObserveBlobLockWait(start)
	return blobsql.Lock(ctx, tx, namespaceID, digests)
}

// attachSQL creates one attachment per digest use and clears the live GC
// candidates of the attached blobs, reporting which ones it cleared. It
// runs as its own statement after lockBlobsSQL, so its snapshot already
// includes every change committed by the transactions we waited for.
const attachSQL = `
WITH ins AS (
	INSERT INTO {blob_storage_attachments} (namespace_id, sha256)
	SELECT $1, d FROM unnest($2::bytea[]) WITH ORDINALITY AS u(d, ord) ORDER BY ord
	RETURNING id, sha256
), cleared AS (
	DELETE FROM {gc_blob_review_queue} q
	WHERE q.namespace_id = $1 AND q.sha256 = ANY($3::bytea[])
	RETURNING q.sha256
)
SELECT false, id, sha256 FROM ins
UNION ALL
SELECT true, 0, sha256 FROM cleared`

var (
	attachParentSQL = partition.Parent(attachSQL, "blob_storage_attachments", "gc_blob_review_queue")
	// attachDigestSQL is attachSQL on one digest's partitions (both tables
	// are partitioned by HASH (sha256) alike): a manifest push attaches one
	// digest, and on the parents the statement is planned again at every
	// call.
	attachDigestSQL = partition.Statements(attachSQL, "blob_storage_attachments", "gc_blob_review_queue")
)

// Attach records one attachment per element of digests (a digest used
// twice gets two attachments) inside the caller's transaction, following
// docs/garbage-collection.md (rules 2 and 3): the blob rows are locked FOR
// UPDATE in ascending digest order
// first, then the attachments are inserted and any live GC candidate of
// those blobs is deleted. A blob that had a live candidate is a dedup skip
// on a row that may have lost its object, so its object is checked in
// storage under the lock (bounded by Options.ObjectCheckTimeout): a missing
// object fails with CodeBlobMustReupload (in a *DigestError), a check that
// cannot finish with CodeRetryable. A digest without a blob row fails with
// CodeBlobUnknown. On error the caller must roll back.
//
// The returned attachments are in the order of digests.
func (s *Store) Attach(ctx context.Context, tx pgx.Tx, namespaceID uuid.UUID, digests [][32]byte) ([]Attachment, error) {
	if len(digests) == 0 {
		return nil, nil
	}
	distinct := blobsql.SortedDigests(digests)
	keys, err := s.lockBlobsObserved(ctx, tx, namespaceID, distinct)
	if err != nil {
		return nil, err
	}
	for _, d := range distinct {
		if _, ok := keys[[32]byte(d)]; !ok {
			return nil, errs.WithDigest(CodeBlobUnknown, [32]byte(d), "blob unknown")
		}
	}
	uses := make([][]byte, len(digests))
	for i := range digests {
		uses[i] = digests[i][:]
	}
	rows, err := partition.QueryByDigests(ctx, tx, &attachDigestSQL, attachParentSQL, distinct, namespaceID, uses, distinct)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: attach: %w", err))
	}
	ids := make(map[[32]byte][]int64, len(distinct))
	var cleared [][32]byte
	for rows.Next() {
		var (
			wasCandidate bool
			id           int64
			sha          []byte
		)
		if err := rows.Scan(&wasCandidate, &id, &sha); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: attach: %w", err)
		}
		if wasCandidate {
			cleared = append(cleared, [32]byte(sha))
		} else {
			ids[[32]byte(sha)] = append(ids[[32]byte(sha)], id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: attach: %w", err))
	}
	if err := s.checkObjects(ctx, cleared, keys); err != nil {
		return nil, err
	}
	out := make([]Attachment, len(digests))
	for i, d := range digests {
		list := ids[d]
		if len(list) == 0 {
			return nil, fmt.Errorf("store: attach: no attachment returned for %s", FormatSHA256(d))
		}
		out[i] = Attachment{ID: list[0], SHA256: d}
		ids[d] = list[1:]
	}
	return out, nil
}

// checkObjects verifies, concurrently and within one ObjectCheckTimeout,
// that the objects of the given digests exist. The deadline is derived once
// for the whole set: the checks run 8 at a time, so a per-check deadline
// would let a slow backend hold the blob-row locks for several bounds.
func (s *Store) checkObjects(ctx context.Context, digests [][32]byte, keys map[[32]byte]string) error {
	if len(digests) == 0 {
		return nil
	}
	bounded, cancel := context.WithTimeout(ctx, s.opts.ObjectCheckTimeout)
	defer cancel()
	g, gctx := errgroup.WithContext(bounded)
	g.SetLimit(8)
	for _, d := range digests {
		g.Go(func() error {
			ok, err := s.objectExistsWithin(ctx, gctx, keys[d])
			s.ObserveDedupObjectCheck(ok, err)
			if err != nil {
				return err
			}
			if !ok {
				return errs.WithDigest(CodeBlobMustReupload, d, "blob object missing, upload it again")
			}
			return nil
		})
	}
	return g.Wait()
}

// detachSQL deletes attachments and records a GC candidate, due after the
// review delay, for every blob whose attachment count went to zero. The
// statement's snapshot counts the attachments as they were before its own
// deletes (sibling CTEs do not see each other's changes), so "went to zero"
// is "count before = count deleted". The blob rows are locked by a previous
// statement, so no other transaction can change these counts meanwhile.
// Every scan of a blob-layer table names the digests as an array parameter,
// so each prunes to the partitions holding them.
const detachSQL = `
WITH del AS (
	DELETE FROM blob_storage_attachments a
	USING unnest($2::bigint[], $3::bytea[]) AS x(id, sha)
	WHERE a.namespace_id = $1 AND a.sha256 = ANY($4::bytea[]) AND a.id = x.id AND a.sha256 = x.sha
	RETURNING a.sha256
), gone AS (
	SELECT sha256, count(*) AS n FROM del GROUP BY sha256
), before AS (
	SELECT a.sha256, count(*) AS n
	FROM blob_storage_attachments a
	WHERE a.namespace_id = $1 AND a.sha256 = ANY($4::bytea[])
	GROUP BY a.sha256
), cand AS (
	INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after)
	SELECT $1, g.sha256, $5 FROM gone g JOIN before b ON b.sha256 = g.sha256 AND b.n = g.n
	ON CONFLICT (namespace_id, sha256) DO UPDATE
	SET review_after = EXCLUDED.review_after, attempts = 0, strikes = 0,
	    backoff_until = NULL, excluded_at = NULL, last_error = NULL, created_at = now()
	RETURNING sha256
)
SELECT (SELECT count(*) FROM del), ARRAY(SELECT sha256 FROM cand ORDER BY sha256)`

// Detach deletes attachments inside the caller's transaction, after the
// caller locked the artifact row that owned them (lock order for deletes:
// artifact row, then blob rows; docs/garbage-collection.md, rule 2). The blob rows are locked FOR
// UPDATE in ascending digest order, the attachments deleted, and a GC
// candidate due at now + ReviewDelay is recorded for each blob left with
// no attachment. It returns those digests (ascending). An attachment that
// does not exist fails with CodeAttachmentUnknown; the caller must roll back.
func (s *Store) Detach(ctx context.Context, tx pgx.Tx, namespaceID uuid.UUID, attachments []Attachment) ([][32]byte, error) {
	if len(attachments) == 0 {
		return nil, nil
	}
	shas := make([][32]byte, len(attachments))
	ids := make([]int64, len(attachments))
	uses := make([][]byte, len(attachments))
	for i, a := range attachments {
		shas[i], ids[i] = a.SHA256, a.ID
		uses[i] = attachments[i].SHA256[:]
	}
	distinct := blobsql.SortedDigests(shas)
	if _, err := s.lockBlobsObserved(ctx, tx, namespaceID, distinct); err != nil {
		return nil, err
	}
	var (
		deleted int64
		zero    [][]byte
	)
	reviewAfter := s.opts.Clock.Now().Add(s.opts.ReviewDelay)
	err := tx.QueryRow(ctx, detachSQL, namespaceID, ids, uses, distinct, reviewAfter).Scan(&deleted, &zero)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: detach: %w", err))
	}
	if deleted != int64(len(attachments)) {
		return nil, errs.New(CodeAttachmentUnknown, "attachment unknown: %d of %d attachments not found (or given twice)", int64(len(attachments))-deleted, len(attachments))
	}
	out := make([][32]byte, len(zero))
	for i, z := range zero {
		out[i] = [32]byte(z)
	}
	return out, nil
}

// Released is what a purge released: attachments removed and the blobs
// left with none (now GC candidates).
type Released struct {
	Attachments int
	Candidates  int
}

// Add sums two releases.
func (r Released) Add(o Released) Released {
	return Released{Attachments: r.Attachments + o.Attachments, Candidates: r.Candidates + o.Candidates}
}

// PurgeAttached hard-deletes format rows that own attachments and detaches
// those attachments, inside the caller's transaction, in the order of the
// lock protocol (docs/garbage-collection.md, rule 2): the caller has locked
// the artifact rows; the blob rows of the attachments are locked here
// (ascending digest order) before deleteRows runs its DELETEs (children
// before parents, one statement each, so that row triggers can still
// resolve each row's repository); then the attachments are detached, which
// records a GC candidate for every blob left with none. Bytes are never
// touched: gc:cleanup reclaims them later.
func (s *Store) PurgeAttached(ctx context.Context, tx pgx.Tx, namespaceID uuid.UUID, attachments []Attachment, deleteRows func() error) (Released, error) {
	if len(attachments) > 0 {
		shas := make([][32]byte, len(attachments))
		for i, a := range attachments {
			shas[i] = a.SHA256
		}
		if _, err := s.lockBlobsObserved(ctx, tx, namespaceID, blobsql.SortedDigests(shas)); err != nil {
			return Released{}, err
		}
	}
	if err := deleteRows(); err != nil {
		return Released{}, err
	}
	zero, err := s.Detach(ctx, tx, namespaceID, attachments)
	if err != nil {
		return Released{}, err
	}
	return Released{Attachments: len(attachments), Candidates: len(zero)}, nil
}

// CollectAttachments reads the (attachment id, sha256) rows a format's
// query selects, e.g. the files of rows about to be purged; err is the
// query's own error, so a call reads CollectAttachments(tx.Query(...)).
func CollectAttachments(rows pgx.Rows, err error) ([]Attachment, error) {
	if err != nil {
		return nil, db.MapErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attachment, error) {
		var (
			a   Attachment
			sha []byte
		)
		if err := r.Scan(&a.ID, &sha); err != nil {
			return a, err
		}
		if len(sha) != 32 {
			return a, fmt.Errorf("attachment %d with a %d-byte digest", a.ID, len(sha))
		}
		a.SHA256 = [32]byte(sha)
		return a, nil
	})
	return out, db.MapErr(err)
}
