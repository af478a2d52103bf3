package partition

import (
	"context"
	"encoding/binary"
	"math/bits"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

// Digest returns the partition number of a sha256 digest in the tables
// partitioned by HASH (sha256) (blob_storage_blobs,
// blob_storage_attachments, gc_blob_review_queue: 64 partitions each, so
// one digest has the same number in all three). Unlike a namespace id it
// needs no round trip: this is PostgreSQL's own computation for a bytea
// key, hash_bytes_extended (Bob Jenkins' lookup3, as in src/common/hashfn.c)
// with the partition seed, combined as compute_partition_hash_value does,
// modulo Count. TestDigestMatchesPostgreSQL checks it against
// satisfies_hash_partition.
func Digest(sha [32]byte) int {
	return int((hashBytesExtended(sha[:], partitionSeed) + hashCombine) % Count)
}

const (
	// partitionSeed is HASH_PARTITION_SEED (src/include/catalog/partition.h).
	partitionSeed uint64 = 0x7A5B22367996DCFD
	// hashCombine is what hash_combine64(0, h) adds to h.
	hashCombine uint64 = 0x49a0f4dd15e5a8e3
)

// hashBytesExtended is hash_bytes_extended on a little-endian machine.
func hashBytesExtended(k []byte, seed uint64) uint64 {
	a := 0x9e3779b9 + uint32(len(k)) + 3923095
	b, c := a, a
	if seed != 0 {
		a += uint32(seed >> 32)
		b += uint32(seed)
		a, b, c = mix(a, b, c)
	}
	for len(k) >= 12 {
		a += binary.LittleEndian.Uint32(k)
		b += binary.LittleEndian.Uint32(k[4:])
		c += binary.LittleEndian.Uint32(k[8:])
		a, b, c = mix(a, b, c)
		k = k[12:]
	}
	// The last 11 bytes; the lowest byte of c is reserved for the length.
	var tail [12]byte
	copy(tail[:], k)
	switch {
	case len(k) > 8:
		c += binary.LittleEndian.Uint32(tail[8:]) << 8
		fallthrough
	case len(k) > 4:
		b += binary.LittleEndian.Uint32(tail[4:])
		fallthrough
	case len(k) > 0:
		a += binary.LittleEndian.Uint32(tail[:])
	}
	_, b, c = final(a, b, c)
	return uint64(b)<<32 | uint64(c)
}

func mix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

func final(a, b, c uint32) (uint32, uint32, uint32) {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return a, b, c
}

// QueryRowDigest runs the statement of stmts (from Statements over tables
// partitioned by HASH (sha256)) for the partition of sha on q, as a
// statement cached per connection.
func QueryRowDigest(ctx context.Context, q db.Queryer, stmts *[Count]string, sha [32]byte, args ...any) pgx.Row {
	return cached(ctx, q, stmts[Digest(sha)], args...)
}

// QueryByDigests runs a statement on the rows of digests (distinct): with
// one digest, its partition's statement of stmts, cached per connection;
// with several, parent (the statement on the partitioned parents, from
// Parent).
func QueryByDigests(ctx context.Context, q db.Queryer, stmts *[Count]string, parent string, digests [][]byte, args ...any) (pgx.Rows, error) {
	if len(digests) == 1 {
		return q.Query(ctx, stmts[Digest([32]byte(digests[0]))], cachedArgs(args)...)
	}
	return q.Query(ctx, parent, args...)
}
