package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// GCReconcilePage is the result of one page of the reconcile scan.
type GCReconcilePage struct {
	// Scanned blob rows in this page.
	Scanned int
	// Eligible: rows that looked unreferenced, old enough, without a
	// candidate and not committed during an upload still in flight.
	Eligible int
	// Recorded: candidates actually recorded (rechecked under the lock).
	Recorded int
	// Next is the cursor of the next page; nil when the scan is complete.
	Next *GCCandidateKey
}

// gcReconcilePageSQL reads one keyset page of blob rows, in
// (namespace_id, sha256) order (the unique index of every partition,
// merged), and flags the ones the scan should record. It reads the
// database only, never storage. The filter is advisory: the rows are
// rechecked under their lock before a candidate is recorded.
const gcReconcilePageSQL = `
WITH page AS (
	SELECT b.namespace_id, b.sha256, b.created_at
	FROM blob_storage_blobs b
	WHERE %s
	ORDER BY b.namespace_id, b.sha256
	LIMIT $3
)
SELECT p.namespace_id, p.sha256,
       p.created_at <= $4
       AND NOT EXISTS (SELECT 1 FROM blob_storage_attachments a WHERE a.namespace_id = p.namespace_id AND a.sha256 = p.sha256)
       AND NOT EXISTS (SELECT 1 FROM gc_blob_review_queue q WHERE q.namespace_id = p.namespace_id AND q.sha256 = p.sha256)
       AND NOT EXISTS (SELECT 1 FROM upload_sessions u
                       WHERE u.namespace_id = p.namespace_id AND u.expires_at > $5 AND u.created_at <= p.created_at)
FROM page p
ORDER BY p.namespace_id, p.sha256`

// gcReconcileLockSQL locks the eligible blob rows of one namespace,
// skipping rows someone holds (a push or delete in progress: the next scan
// sees them).
const gcReconcileLockSQL = `
SELECT b.sha256 FROM blob_storage_blobs b
WHERE b.namespace_id = $1 AND b.sha256 = ANY($2::bytea[])
ORDER BY b.sha256
FOR UPDATE OF b SKIP LOCKED`

// gcReconcileRecordSQL records the candidates, as its own statement after
// the lock so that it sees every attachment committed before it: zero
// attachments, past the grace window, no unexpired upload session of the
// namespace that was already open when the blob was committed, no
// candidate yet.
const gcReconcileRecordSQL = `
INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after)
SELECT $1, b.sha256, $3
FROM blob_storage_blobs b
WHERE b.namespace_id = $1 AND b.sha256 = ANY($2::bytea[])
  AND b.created_at <= $4
  AND NOT EXISTS (SELECT 1 FROM blob_storage_attachments a WHERE a.namespace_id = $1 AND a.sha256 = b.sha256)
  AND NOT EXISTS (SELECT 1 FROM upload_sessions u
                  WHERE u.namespace_id = $1 AND u.expires_at > $5 AND u.created_at <= b.created_at)
ON CONFLICT (namespace_id, sha256) DO NOTHING`

// ReconcileGCPage runs one page of gc:reconcile-scan
// (docs/garbage-collection.md "Job family"): it repairs
// missed candidate records by scanning blob rows (after the cursor, at most
// limit) for ones with zero attachments, created at least GCGracePeriod
// before now, without a candidate, and not committed while an upload
// session of their namespace that is still unexpired was in flight, and
// records a candidate due after the review delay for each (under the
// blob-row lock). Pass a nil cursor to start; the returned Next is nil at
// the end of the table.
//
// The in-flight filter only counts sessions opened before the blob's row
// was written (both created_at come from the store clock): those are the
// writes that may still be on their way to attaching it. A session opened
// later cannot be, and counting it would let any writer who keeps one
// session open in the namespace hold every unreferenced blob of it out of
// the GC for ever. A session lives at most its TTL, so the filter delays a
// blob by at most that TTL after its commit (with the default TTLs, not
// beyond the grace window).
func (s *Store) ReconcileGCPage(ctx context.Context, now time.Time, after *GCCandidateKey, limit int) (*GCReconcilePage, error) {
	var afterNS *uuid.UUID
	var afterSHA []byte
	if after != nil {
		afterNS, afterSHA = &after.NamespaceID, after.SHA256[:]
	}
	cutoff := now.Add(-GCGracePeriod)
	// Two shapes, so that the keyset condition stays sargable.
	cond := "(b.namespace_id, b.sha256) > ($1::uuid, $2::bytea)"
	if after == nil {
		cond = "$1::uuid IS NULL AND $2::bytea IS NULL"
	}
	rows, err := s.pool.Query(ctx, fmt.Sprintf(gcReconcilePageSQL, cond), afterNS, afterSHA, limit, cutoff, now)
	if err != nil {
		return nil, fmt.Errorf("store: gc reconcile scan: %w", err)
	}
	page := &GCReconcilePage{}
	eligible := map[uuid.UUID][][]byte{}
	var order []uuid.UUID
	var last GCCandidateKey
	for rows.Next() {
		var ns uuid.UUID
		var sha []byte
		var ok bool
		if err := rows.Scan(&ns, &sha, &ok); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: gc reconcile scan: %w", err)
		}
		page.Scanned++
		last = GCCandidateKey{NamespaceID: ns, SHA256: [32]byte(sha)}
		if ok {
			page.Eligible++
			if _, seen := eligible[ns]; !seen {
				order = append(order, ns)
			}
			eligible[ns] = append(eligible[ns], sha)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: gc reconcile scan: %w", err)
	}
	if page.Scanned == limit {
		page.Next = &last
	}
	reviewAfter := now.Add(s.opts.ReviewDelay)
	for _, ns := range order {
		n, err := s.reconcileRecord(ctx, ns, eligible[ns], reviewAfter, cutoff, now)
		if err != nil {
			return nil, err
		}
		page.Recorded += n
	}
	return page, nil
}

func (s *Store) reconcileRecord(ctx context.Context, ns uuid.UUID, shas [][]byte, reviewAfter, cutoff, now time.Time) (int, error) {
	var n int
	err := s.WithTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, gcReconcileLockSQL, ns, shas)
		if err != nil {
			return err
		}
		locked, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
		if err != nil {
			return err
		}
		if len(locked) == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, gcReconcileRecordSQL, ns, locked, reviewAfter, cutoff, now)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: gc reconcile record: %w", err)
	}
	return n, nil
}
