// Package blobsql holds the blob-row statements the format packages run
// inside their own transactions, in the lock order of the blob protocol
// (docs/garbage-collection.md, "Lock protocol"): format rows first, then
// blob rows in ascending digest order.
package blobsql

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// SortedDigests returns the distinct digests in ascending byte order (the
// order bytea sorts in, hence the lock order of the protocol).
func SortedDigests(in [][32]byte) [][]byte {
	out := make([][]byte, 0, len(in))
	for i := range in {
		out = append(out, in[i][:])
	}
	slices.SortFunc(out, bytes.Compare)
	return slices.CompactFunc(out, bytes.Equal)
}

// lockSQL locks blob rows FOR UPDATE in ascending digest order: the lock
// rows node sits above the sort, so rows are locked in that order, and two
// transactions locking overlapping sets can never wait on each other in a
// cycle.
const lockSQL = `
SELECT b.sha256, b.object_storage_key
FROM {blob_storage_blobs} b
WHERE b.namespace_id = $1 AND b.sha256 = ANY($2::bytea[])
ORDER BY b.sha256
FOR UPDATE OF b`

var (
	lockParentSQL = partition.Parent(lockSQL, "blob_storage_blobs")
	// lockDigestSQL is lockSQL on one digest's partition: a manifest or
	// a package version attaches one digest, and the parent's statement
	// is planned again at every call.
	lockDigestSQL = partition.Statements(lockSQL, "blob_storage_blobs")
)

// Lock locks the blob rows of digests (sorted, distinct) and returns their
// object keys by digest.
func Lock(ctx context.Context, tx pgx.Tx, namespaceID uuid.UUID, digests [][]byte) (map[[32]byte]string, error) {
	rows, err := partition.QueryByDigests(ctx, tx, &lockDigestSQL, lockParentSQL, digests, namespaceID, digests)
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: lock blobs: %w", err))
	}
	defer rows.Close()
	keys := make(map[[32]byte]string, len(digests))
	for rows.Next() {
		var sha []byte
		var key string
		if err := rows.Scan(&sha, &key); err != nil {
			return nil, fmt.Errorf("store: lock blobs: %w", err)
		}
		keys[[32]byte(sha)] = key
	}
	if err := rows.Err(); err != nil {
		return nil, db.MapErr(fmt.Errorf("store: lock blobs: %w", err))
	}
	return keys, nil
}
