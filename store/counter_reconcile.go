package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Reconciliation of the storage counters (docs/schema.md, "Storage
// accounting"): the exact values are computed from the rows and the
// stored counters are corrected by the difference.
//
// The triggers that record the deltas run in the transaction that changes
// the rows, and the fold moves deltas into the stored values in one
// transaction, so in any one snapshot
//
//	exact = stored + pending deltas
//
// holds for every counter unless something drifted. A batch therefore
// reads the rows, the stored counters and the pending deltas in one
// REPEATABLE READ snapshot and inserts the difference as a counter_deltas
// row: writes that commit after the snapshot bring their own deltas and
// are neither counted twice nor lost, whatever the fold does meanwhile.
// The snapshot only reads (plus the correction inserts), so writers are
// never blocked. Two passes over one namespace would each correct the
// same drift, so a pass holds a session advisory lock of the namespace,
// taken before the first snapshot.

// DefaultReconcileBatch is how many repositories one reconciliation
// transaction covers.
const DefaultReconcileBatch = 100

// counterReconcileLockClass is the first key of the session advisory lock
// a reconciliation pass holds per namespace.
const counterReconcileLockClass = 0x7265636f // "reco"

// reconcileBeginSQL: one snapshot for the rows, the counters and the
// pending deltas.
const reconcileBeginSQL = "BEGIN ISOLATION LEVEL REPEATABLE READ"

// CounterDrift is a counter whose stored value plus pending deltas
// differed from the exact value by Drift (exact - counted); the
// reconciliation recorded Drift as a correction delta.
type CounterDrift struct {
	Target   enum.CounterTarget
	TargetID uuid.UUID
	Field    enum.CounterField
	Drift    int64
}

// ReconcileResult describes one namespace pass.
type ReconcileResult struct {
	Repositories int            // repository rows checked
	Batches      int            // committed transactions
	Drifts       []CounterDrift // corrections recorded
	// Skipped: another pass held the namespace; nothing was done.
	Skipped bool
}

// reconcileRepositoriesSQL computes, for a batch of one namespace's
// repositories ($2), the exact artifacts_count (artifact rows,
// soft-deleted ones included) and size_bytes (the distinct digests the
// repository's rows reference, sized through the namespace shadow of the
// blob rows), with the stored values and the pending deltas. The
// collecting scans read the namespace's partition of each table.
const reconcileRepositoriesSQL = `
WITH cimg AS (
	SELECT i.id, cr.repository_id FROM container_images i
	JOIN container_repositories cr ON cr.namespace_id = i.namespace_id AND cr.id = i.container_repository_id
	WHERE i.namespace_id = $1 AND cr.namespace_id = $1 AND cr.repository_id = ANY($2)
), crimg AS (
	SELECT i.id, cr.repository_id FROM container_remote_images i
	JOIN container_remote_repositories cr ON cr.namespace_id = i.namespace_id AND cr.id = i.container_remote_repository_id
	WHERE i.namespace_id = $1 AND cr.namespace_id = $1 AND cr.repository_id = ANY($2)
), npkg AS (
	SELECT p.id, nr.repository_id FROM npm_packages p
	JOIN npm_repositories nr ON nr.namespace_id = p.namespace_id AND nr.id = p.npm_repository_id
	WHERE p.namespace_id = $1 AND nr.namespace_id = $1 AND nr.repository_id = ANY($2)
), nrpkg AS (
	SELECT p.id, nr.repository_id FROM npm_remote_packages p
	JOIN npm_remote_repositories nr ON nr.namespace_id = p.namespace_id AND nr.id = p.npm_remote_repository_id
	WHERE p.namespace_id = $1 AND nr.namespace_id = $1 AND nr.repository_id = ANY($2)
), mpkg AS (
	SELECT p.id, mr.repository_id FROM maven_packages p
	JOIN maven_repositories mr ON mr.namespace_id = p.namespace_id AND mr.id = p.maven_repository_id
	WHERE p.namespace_id = $1 AND mr.namespace_id = $1 AND mr.repository_id = ANY($2)
), mrpkg AS (
	SELECT p.id, mr.repository_id FROM maven_remote_packages p
	JOIN maven_remote_repositories mr ON mr.namespace_id = p.namespace_id AND mr.id = p.maven_remote_repository_id
	WHERE p.namespace_id = $1 AND mr.namespace_id = $1 AND mr.repository_id = ANY($2)
), artifacts AS (
	SELECT c.repository_id, count(*) AS n FROM container_manifests m JOIN cimg c ON c.id = m.container_image_id
	WHERE m.namespace_id = $1 GROUP BY 1
	UNION ALL
	SELECT c.repository_id, count(*) FROM container_remote_manifests m JOIN crimg c ON c.id = m.container_remote_image_id
	WHERE m.namespace_id = $1 GROUP BY 1
	UNION ALL
	SELECT p.repository_id, count(*) FROM npm_versions v JOIN npkg p ON p.id = v.npm_package_id
	WHERE v.namespace_id = $1 GROUP BY 1
	UNION ALL
	SELECT p.repository_id, count(*) FROM npm_remote_versions v JOIN nrpkg p ON p.id = v.npm_remote_package_id
	WHERE v.namespace_id = $1 GROUP BY 1
	UNION ALL
	SELECT p.repository_id, count(*) FROM maven_versions v JOIN mpkg p ON p.id = v.maven_package_id
	WHERE v.namespace_id = $1 GROUP BY 1
	UNION ALL
	SELECT p.repository_id, count(*) FROM maven_remote_versions v JOIN mrpkg p ON p.id = v.maven_remote_package_id
	WHERE v.namespace_id = $1 GROUP BY 1
), digests AS (
	SELECT c.repository_id, b.blob_sha256 AS sha FROM container_blobs b JOIN cimg c ON c.id = b.container_image_id
	WHERE b.namespace_id = $1
	UNION
	SELECT c.repository_id, m.blob_sha256 FROM container_manifests m JOIN cimg c ON c.id = m.container_image_id
	WHERE m.namespace_id = $1
	UNION
	SELECT c.repository_id, b.blob_sha256 FROM container_remote_blobs b JOIN crimg c ON c.id = b.container_remote_image_id
	WHERE b.namespace_id = $1
	UNION
	SELECT c.repository_id, m.blob_sha256 FROM container_remote_manifests m JOIN crimg c ON c.id = m.container_remote_image_id
	WHERE m.namespace_id = $1
	UNION
	SELECT p.repository_id, f.blob_sha256 FROM npm_files f
	JOIN npm_versions v ON v.namespace_id = f.namespace_id AND v.id = f.npm_version_id
	JOIN npkg p ON p.id = v.npm_package_id
	WHERE f.namespace_id = $1 AND v.namespace_id = $1
	UNION
	SELECT p.repository_id, f.blob_sha256 FROM npm_metadata_files f JOIN npkg p ON p.id = f.npm_package_id
	WHERE f.namespace_id = $1
	UNION
	SELECT p.repository_id, f.blob_sha256 FROM npm_remote_files f
	JOIN npm_remote_versions v ON v.namespace_id = f.namespace_id AND v.id = f.npm_remote_version_id
	JOIN nrpkg p ON p.id = v.npm_remote_package_id
	WHERE f.namespace_id = $1 AND v.namespace_id = $1
	UNION
	SELECT p.repository_id, f.blob_sha256 FROM npm_remote_metadata_files f JOIN nrpkg p ON p.id = f.npm_remote_package_id
	WHERE f.namespace_id = $1
	UNION
	SELECT p.repository_id, f.blob_sha256 FROM maven_files f JOIN mpkg p ON p.id = f.maven_package_id
	WHERE f.namespace_id = $1
	UNION
	SELECT p.repository_id, f.blob_sha256 FROM maven_remote_files f JOIN mrpkg p ON p.id = f.maven_remote_package_id
	WHERE f.namespace_id = $1
), sizes AS (
	SELECT d.repository_id, sum(s.size) AS size FROM digests d
	JOIN blob_storage_blobs_by_namespace s ON s.namespace_id = $1 AND s.sha256 = d.sha
	GROUP BY 1
), pending AS (
	SELECT target_id, coalesce(sum(delta) FILTER (WHERE field = 0), 0) AS artifacts,
	       coalesce(sum(delta) FILTER (WHERE field = 2), 0) AS size
	FROM counter_deltas
	WHERE namespace_id = $1 AND target = 0 AND field IN (0, 2) AND target_id = ANY($2)
	GROUP BY 1
)
SELECT r.id,
       coalesce((SELECT sum(a.n) FROM artifacts a WHERE a.repository_id = r.id), 0)::bigint,
       coalesce((SELECT s.size FROM sizes s WHERE s.repository_id = r.id), 0)::bigint,
       r.artifacts_count + coalesce(p.artifacts, 0),
       r.size_bytes + coalesce(p.size, 0)
FROM repositories r
LEFT JOIN pending p ON p.target_id = r.id
WHERE r.namespace_id = $1 AND r.id = ANY($2)`

// reconcileImagesSQL computes, for the images of a batch of one
// namespace's repositories ($2), the exact artifacts_count (manifest rows,
// soft-deleted ones included), with the stored value and the pending
// deltas. The image's count only gates the exact count of the per-image
// manifest limit, but a delta lost to a fold that did not know the field
// (an instance of the release before it, during a rolling upgrade) would
// otherwise stay lost.
const reconcileImagesSQL = `
WITH img AS (
	SELECT i.id, i.artifacts_count FROM container_images i
	JOIN container_repositories cr ON cr.namespace_id = i.namespace_id AND cr.id = i.container_repository_id
	WHERE i.namespace_id = $1 AND cr.namespace_id = $1 AND cr.repository_id = ANY($2)
), manifests AS (
	SELECT m.container_image_id AS id, count(*) AS n FROM container_manifests m
	WHERE m.namespace_id = $1 AND m.container_image_id IN (SELECT id FROM img) GROUP BY 1
), pending AS (
	SELECT target_id AS id, sum(delta) AS n FROM counter_deltas
	WHERE namespace_id = $1 AND target = 2 AND field = 0 GROUP BY 1
)
SELECT i.id, coalesce(m.n, 0)::bigint, (i.artifacts_count + coalesce(p.n, 0))::bigint
FROM img i
LEFT JOIN manifests m ON m.id = i.id
LEFT JOIN pending p ON p.id = i.id`

// reconcileNamespaceSQL computes the namespace's exact
// deduplicated_size_bytes (every blob row of the namespace, through the
// shadow) and components_count (artifact rows, soft-deleted ones
// included), with the stored values and the pending deltas.
const reconcileNamespaceSQL = `
SELECT (SELECT coalesce(sum(size), 0) FROM blob_storage_blobs_by_namespace WHERE namespace_id = $1)::bigint,
       ((SELECT count(*) FROM container_manifests WHERE namespace_id = $1)
        + (SELECT count(*) FROM container_remote_manifests WHERE namespace_id = $1)
        + (SELECT count(*) FROM npm_versions WHERE namespace_id = $1)
        + (SELECT count(*) FROM npm_remote_versions WHERE namespace_id = $1)
        + (SELECT count(*) FROM maven_versions WHERE namespace_id = $1)
        + (SELECT count(*) FROM maven_remote_versions WHERE namespace_id = $1))::bigint,
       s.deduplicated_size_bytes + coalesce((SELECT sum(delta) FROM counter_deltas
           WHERE namespace_id = $1 AND target = 1 AND field = 5), 0),
       s.components_count + coalesce((SELECT sum(delta) FROM counter_deltas
           WHERE namespace_id = $1 AND target = 1 AND field = 6), 0)
FROM namespace_statistics s WHERE s.namespace_id = $1`

// ReconcileNamespaceCounters recomputes the storage counters of one
// namespace (its repositories in batches of batch, DefaultReconcileBatch
// when <= 0, then the namespace's own), records the drift it finds as
// correction deltas (the next fold applies them), and on full success
// sets namespace_statistics.last_reconciled_at. Skipped when another pass
// holds the namespace.
func (s *Store) ReconcileNamespaceCounters(ctx context.Context, nsID uuid.UUID, batch int) (ReconcileResult, error) {
	if batch <= 0 {
		batch = DefaultReconcileBatch
	}
	var res ReconcileResult
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, db.MapErr(wrapReconcile(nsID, "acquire", err))
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2::text))`,
		counterReconcileLockClass, nsID.String()).Scan(&locked); err != nil {
		return res, db.MapErr(wrapReconcile(nsID, "lock", err))
	}
	if !locked {
		res.Skipped = true
		return res, nil
	}
	defer func() {
		// A failed unlock leaves the lock to the connection: close it.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext($2::text))`,
			counterReconcileLockClass, nsID.String()); err != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	after := uuid.Nil
	for {
		n, last, drifts, err := reconcileRepositoryBatch(ctx, conn, nsID, after, batch)
		if err != nil {
			return res, err
		}
		res.Repositories += n
		res.Drifts = append(res.Drifts, drifts...)
		res.Batches++
		if n < batch {
			break
		}
		after = last
	}
	drifts, err := reconcileNamespaceRow(ctx, conn, nsID)
	if err != nil {
		return res, err
	}
	res.Drifts = append(res.Drifts, drifts...)
	res.Batches++
	if _, err := conn.Exec(ctx, `UPDATE namespace_statistics SET last_reconciled_at = now() WHERE namespace_id = $1`, nsID); err != nil {
		return res, db.MapErr(wrapReconcile(nsID, "record", err))
	}
	return res, nil
}

func wrapReconcile(nsID uuid.UUID, what string, err error) error {
	return fmt.Errorf("store: reconcile counters of namespace %s: %s: %w", nsID, what, err)
}

// reconcileRepositoryBatch checks the repositories after the given id (in
// id order, up to batch of them) in one snapshot.
func reconcileRepositoryBatch(ctx context.Context, conn *pgxpool.Conn, nsID, after uuid.UUID, batch int) (int, uuid.UUID, []CounterDrift, error) {
	var (
		n      int
		last   uuid.UUID
		drifts []CounterDrift
	)
	err := inReconcileTx(ctx, conn, nsID, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM repositories WHERE namespace_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
			nsID, after, batch)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil || len(ids) == 0 {
			return err
		}
		n, last = len(ids), ids[len(ids)-1]
		rows, err = tx.Query(ctx, reconcileRepositoriesSQL, nsID, ids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id                                 uuid.UUID
				artifacts, size, cArtifacts, cSize int64
			)
			if err := rows.Scan(&id, &artifacts, &size, &cArtifacts, &cSize); err != nil {
				return err
			}
			drifts = appendDrift(drifts, enum.CounterTargetRepository, id, enum.CounterFieldArtifactsCount, artifacts-cArtifacts)
			drifts = appendDrift(drifts, enum.CounterTargetRepository, id, enum.CounterFieldSizeBytes, size-cSize)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if drifts, err = appendImageDrifts(ctx, tx, nsID, ids, drifts); err != nil {
			return err
		}
		return insertCorrections(ctx, tx, nsID, drifts)
	})
	if err != nil {
		return 0, uuid.Nil, nil, err
	}
	return n, last, drifts, nil
}

// appendImageDrifts adds the drifts of the images of the repositories
// repoIDs to ds.
func appendImageDrifts(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, repoIDs []uuid.UUID, ds []CounterDrift) ([]CounterDrift, error) {
	rows, err := tx.Query(ctx, reconcileImagesSQL, nsID, repoIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id                 uuid.UUID
			manifests, counted int64
		)
		if err := rows.Scan(&id, &manifests, &counted); err != nil {
			return nil, err
		}
		ds = appendDrift(ds, enum.CounterTargetContainerImage, id, enum.CounterFieldArtifactsCount, manifests-counted)
	}
	return ds, rows.Err()
}

// reconcileNamespaceRow checks namespace_statistics in one snapshot.
func reconcileNamespaceRow(ctx context.Context, conn *pgxpool.Conn, nsID uuid.UUID) ([]CounterDrift, error) {
	var drifts []CounterDrift
	err := inReconcileTx(ctx, conn, nsID, func(tx pgx.Tx) error {
		var size, components, cSize, cComponents int64
		err := tx.QueryRow(ctx, reconcileNamespaceSQL, nsID).Scan(&size, &components, &cSize, &cComponents)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // the namespace is gone
		}
		if err != nil {
			return err
		}
		drifts = appendDrift(drifts, enum.CounterTargetNamespaceStatistics, nsID, enum.CounterFieldDeduplicatedSizeBytes, size-cSize)
		drifts = appendDrift(drifts, enum.CounterTargetNamespaceStatistics, nsID, enum.CounterFieldComponentsCount, components-cComponents)
		return insertCorrections(ctx, tx, nsID, drifts)
	})
	return drifts, err
}

func appendDrift(ds []CounterDrift, t enum.CounterTarget, id uuid.UUID, f enum.CounterField, d int64) []CounterDrift {
	if d == 0 {
		return ds
	}
	return append(ds, CounterDrift{Target: t, TargetID: id, Field: f, Drift: d})
}

// inReconcileTx runs fn in a REPEATABLE READ transaction on conn.
func inReconcileTx(ctx context.Context, conn *pgxpool.Conn, nsID uuid.UUID, fn func(pgx.Tx) error) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: reconcileBeginSQL})
	if err != nil {
		return db.MapErr(wrapReconcile(nsID, "begin", err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return db.MapErr(wrapReconcile(nsID, "compute", err))
	}
	if err := tx.Commit(ctx); err != nil {
		return db.MapErr(wrapReconcile(nsID, "commit", err))
	}
	return nil
}

// insertCorrections records the drifts as counter deltas.
func insertCorrections(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, drifts []CounterDrift) error {
	if len(drifts) == 0 {
		return nil
	}
	var (
		ids, tids       []uuid.UUID
		targets, fields []int16
		deltas          []int64
	)
	for _, d := range drifts {
		ids = append(ids, db.NewID())
		targets = append(targets, int16(d.Target))
		tids = append(tids, d.TargetID)
		fields = append(fields, int16(d.Field))
		deltas = append(deltas, d.Drift)
	}
	_, err := tx.Exec(ctx, `
		INSERT INTO counter_deltas (id, namespace_id, target, target_id, field, delta)
		SELECT u.id, $1, u.target, u.target_id, u.field, u.delta
		FROM unnest($2::uuid[], $3::smallint[], $4::uuid[], $5::smallint[], $6::bigint[])
		     AS u(id, target, target_id, field, delta)`,
		nsID, ids, targets, tids, fields, deltas)
	return err
}

// NamespacesToReconcile lists up to limit namespaces whose last
// reconciliation pass completed before the given time, stalest first
// (index namespace_statistics_last_reconciled_at_idx); never-reconciled
// namespaces ('epoch') come first.
func (s *Store) NamespacesToReconcile(ctx context.Context, before time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT namespace_id FROM namespace_statistics
		WHERE last_reconciled_at < $1
		ORDER BY last_reconciled_at, namespace_id LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("store: namespaces to reconcile: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("store: namespaces to reconcile: %w", err)
	}
	return ids, nil
}

// ReconcileBacklog counts the namespaces whose last pass completed before
// the given time (never-reconciled ones included).
func (s *Store) ReconcileBacklog(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM namespace_statistics WHERE last_reconciled_at < $1`, before).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: reconcile backlog: %w", err)
	}
	return n, nil
}

// EpochPlus is a time just after the 'epoch' default of
// last_reconciled_at: NamespacesToReconcile(ctx, EpochPlus(), n) lists
// the namespaces never reconciled.
func EpochPlus() time.Time { return time.Unix(1, 0).UTC() }
