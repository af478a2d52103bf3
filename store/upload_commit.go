package store

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// Expected is what the client says the committed bytes are.
type Expected struct {
	SHA256 [32]byte
	// Size is the expected length; < 0 means not checked.
	Size int64
	// SHA1, when supplied, is stored in blob_storage_blobs.metadata_sha1 of a
	// new blob row (rows are immutable: an existing row keeps its value).
	SHA1 *[20]byte
}

// SHA1MetadataKey is the object metadata key of a blob's SHA-1 (hex),
// set when the committer supplies Expected.SHA1 (on S3 the header
// x-amz-meta-checksum-sha1).
const SHA1MetadataKey = "checksum-sha1"

// CommitResult describes a committed upload.
type CommitResult struct {
	Blob *Blob
	// Created: this commit inserted the blob row and moved the bytes to the
	// blob key.
	Created bool
	// Deduplicated: the row already existed, no object was written (unless
	// Reuploaded).
	Deduplicated bool
	// Reuploaded: the row existed with a live GC candidate and its object was
	// gone from storage; this commit's bytes were moved into its place.
	Reuploaded bool
	// ObjectChecked: a live GC candidate made the commit check storage under
	// the blob-row lock.
	ObjectChecked bool
}

// PutBlob uploads a whole blob in one call (monolithic session: start, then
// commit with the body) into ref's namespace and repository; ref.UploadID
// is ignored (a new session is made). On failure the session is cancelled.
func (s *Store) PutBlob(ctx context.Context, ref UploadRef, r io.Reader, want Expected) (*CommitResult, error) {
	return s.PutBlobLinked(ctx, ref, r, want, UploadLink{})
}

// PutBlobLinked is PutBlob whose commit also records the blob's use (see
// CommitUploadLinked).
func (s *Store) PutBlobLinked(ctx context.Context, ref UploadRef, r io.Reader, want Expected, link UploadLink) (*CommitResult, error) {
	u, err := s.StartUpload(ctx, ref.NamespaceID, ref.RepositoryID, UploadMonolithic)
	if err != nil {
		return nil, err
	}
	res, err := s.CommitUploadLinked(ctx, u.Ref(), r, want, link)
	if err != nil {
		if cerr := s.CancelUpload(context.WithoutCancel(ctx), u.Ref()); cerr != nil && !HasCode(cerr, CodeUploadUnknown) {
			return nil, errors.Join(err, cerr)
		}
		return nil, err
	}
	return res, nil
}

// CommitUpload finishes an upload: it appends final (when not nil) at the
// current size, checks the digest and size against want (a mismatch deletes
// the session and its data: no blob row, no object), then in one foreground
// transaction inserts the blob row with ON CONFLICT (namespace_id, sha256)
// DO NOTHING, moves the bytes to the blob key when the row is new, and
// deletes the session row (compare-and-swap on size_bytes and the dirty bit).
//
// An existing row means deduplication: no object is written, unless a live
// GC candidate exists, in which case the object is checked in storage under
// the blob-row lock (bounded by Options.ObjectCheckTimeout) and re-created
// from this upload's bytes when it is gone (docs/garbage-collection.md
// "Crash recovery").
func (s *Store) CommitUpload(ctx context.Context, ref UploadRef, final io.Reader, want Expected) (*CommitResult, error) {
	return s.CommitUploadLinked(ctx, ref, final, want, UploadLink{})
}

// UploadLink is what a format records about a blob in the transaction
// that commits it, so that a push pays for one transaction instead of
// two and a failed link leaves nothing committed. Either function may be
// nil; the transaction may run more than once (db.Retry), so they keep no
// state across attempts but what they set afresh.
type UploadLink struct {
	// Before runs first in the transaction: the caller's rows that come
	// ahead of the blob row in the lock order (the image a blob is linked
	// to).
	Before func(tx pgx.Tx) error
	// Use runs once the blob row is inserted or locked, before the bytes
	// move to the blob key: it attaches the blob (AttachStaged) with the
	// caller's own statements.
	Use func(tx pgx.Tx, u StagedUse) error
}

// CommitUploadLinked is CommitUpload whose transaction also runs link. A
// failure leaves the session and the bytes it held before this call, so
// the client may send the last request again.
func (s *Store) CommitUploadLinked(ctx context.Context, ref UploadRef, final io.Reader, want Expected, link UploadLink) (*CommitResult, error) {
	h, err := s.openUpload(ctx, ref)
	missingData := errors.Is(err, objstore.ErrNotFound)
	if err != nil && !missingData {
		return nil, err
	}
	if h != nil {
		defer h.Close()
	}
	u, raw, err := s.loadUpload(ctx, ref)
	if err != nil {
		return nil, err
	}
	if u.Dirty {
		return nil, errs.New(CodeUploadPoisoned, "upload poisoned by concurrent writers")
	}
	st, err := unmarshalUploadState(raw, u.Size)
	if err != nil {
		return nil, err
	}
	if h != nil {
		setSHA1Metadata(h, want)
	}
	size := u.Size
	var finalPart *objstore.Part
	if final != nil {
		if missingData {
			return nil, errs.New(CodeUploadUnknown, "upload unknown")
		}
		p, err := s.writeAt(ctx, h, size, final, st.hash)
		if err != nil {
			return nil, err
		}
		finalPart = &p
		if !s.objects.IsFile() && p.Size > 0 {
			st.parts = append(st.parts, p)
		}
		size += p.Size
	}
	var sum [32]byte
	copy(sum[:], st.hash.Sum(nil))
	discard := func() {
		if finalPart != nil {
			_ = h.DiscardPart(context.WithoutCancel(ctx), *finalPart)
		}
	}
	if err := want.check(sum, size); err != nil {
		s.abandonUpload(ctx, ref)
		return nil, err
	}
	res, err := s.commitBlob(ctx, ref, u.Size, h, st.parts, size, sum, want.SHA1, link)
	if err != nil {
		discard()
		return nil, err
	}
	// The session row is gone: drop the temporary data (nothing when it was
	// renamed into place, or when an earlier attempt had: h is nil). A
	// failure here leaks temporary objects, never data.
	if h != nil {
		_ = h.Remove(context.WithoutCancel(ctx))
	}
	return res, nil
}

// setSHA1Metadata makes the SHA-1 the client supplied travel with the
// object, so storage-side tools can verify it without the database.
func setSHA1Metadata(h *objstore.Upload, want Expected) {
	if m := sha1Metadata(want); m != nil {
		h.SetMetadata(m)
	}
}

// sha1Metadata is the object metadata of want's SHA-1; nil without one.
func sha1Metadata(want Expected) map[string]string {
	if want.SHA1 == nil {
		return nil
	}
	return map[string]string{SHA1MetadataKey: hex.EncodeToString(want.SHA1[:])}
}

// writeAt writes r into the upload at offset, hashing it into hash, within
// the blob size limit (CodeBlobTooLarge beyond it).
func (s *Store) writeAt(ctx context.Context, h *objstore.Upload, offset int64, r io.Reader, hash hash.Hash) (objstore.Part, error) {
	p, err := h.Write(ctx, offset, r, hash, s.sizeLimit(offset))
	if errors.Is(err, objstore.ErrTooLarge) {
		return objstore.Part{}, errs.New(CodeBlobTooLarge, "blob too large")
	}
	if err != nil {
		return objstore.Part{}, fmt.Errorf("store: write upload: %w", err)
	}
	return p, nil
}

// check compares the bytes an upload holds with what the client said.
func (want Expected) check(sum [32]byte, size int64) error {
	switch {
	case sum != want.SHA256:
		return errs.New(CodeDigestMismatch, "digest mismatch: bytes hash to %s, expected %s", FormatSHA256(sum), FormatSHA256(want.SHA256))
	case want.Size >= 0 && size != want.Size:
		return errs.New(CodeSizeMismatch, "size mismatch: %d bytes, expected %d", size, want.Size)
	}
	return nil
}

// abandonUpload deletes a session and its data after a failed verification.
func (s *Store) abandonUpload(ctx context.Context, ref UploadRef) {
	ctx = context.WithoutCancel(ctx)
	_ = s.objects.DeleteUpload(ctx, ref.NamespaceID, ref.UploadID)
	_, _ = s.pool.Exec(ctx, `DELETE FROM upload_sessions WHERE namespace_id = $1 AND upload_id = $2`,
		ref.NamespaceID, ref.UploadID)
}

// A new blob row's created_at is the store clock's time ($8 here, $6 in
// commitRetrySQL), not the database's now(): the GC grace window is
// measured from created_at against the same clock (GCCleanupPolicy.Now,
// ReconcileGCPage's now), so a clock that differs from the database
// server's can neither shorten the window nor stretch it.
//
// commitSQL is the common path of a commit in one statement: delete the
// session (compare-and-swap) and insert the blob row. It always returns one
// row: the number of sessions deleted, then the inserted blob, or NULLs
// when the row exists (a dedup commit, or a concurrent inserter we waited
// for): commitRetrySQL then locks it. Locking an existing row is left to
// that second statement because a commit usually brings new bytes (clients
// ask before they upload what the registry has), and every table a
// statement reads from costs its planning on every call: the lock and the
// GC candidate check would double this statement's.
const commitSQL = `
WITH sess AS (
	DELETE FROM {upload_sessions}
	WHERE namespace_id = $1 AND upload_id = $2 AND size_bytes = $3 AND NOT dirty
	RETURNING 1
), ins AS (
	INSERT INTO blob_storage_blobs (namespace_id, sha256, object_storage_key, size, metadata_sha1, created_at)
	VALUES ($1, $4, $5, $6, $7, $8)
	ON CONFLICT (namespace_id, sha256) DO NOTHING
	RETURNING id, namespace_id, sha256, object_storage_key, size, metadata_sha1, created_at
)
SELECT (SELECT count(*) FROM sess), CASE WHEN i.id IS NOT NULL THEN true END, false,
       i.id, i.namespace_id, i.sha256, i.object_storage_key, i.size, i.metadata_sha1, i.created_at
FROM (SELECT) one LEFT JOIN ins i ON true`

// commitPartitionSQL is commitSQL on the namespace's partition of
// upload_sessions (perPartition); blob_storage_blobs is partitioned by
// sha256 and only inserted into, which needs no pruning.
var commitPartitionSQL = partition.Statements(commitSQL, "upload_sessions")

// commitRetrySQL inserts the blob row or, when it exists, locks it FOR
// UPDATE and reports whether a live GC candidate exists; NULLs when the
// row exists but is not visible to this statement's snapshot yet (it was
// committed by a concurrent inserter we waited for) or was deleted while
// we waited for its lock: the next attempt, a new statement, sees it.
// It runs on the digest's partitions of both tables (partitioned by
// HASH (sha256) alike): every push of bytes the namespace holds already
// runs it, and on the parents it was planned again at each call (0.6 ms).
var commitRetrySQL = partition.Statements(`
WITH ins AS (
	INSERT INTO {blob_storage_blobs} (namespace_id, sha256, object_storage_key, size, metadata_sha1, created_at)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (namespace_id, sha256) DO NOTHING
	RETURNING id, namespace_id, sha256, object_storage_key, size, metadata_sha1, created_at
), locked AS (
	SELECT b.id, b.namespace_id, b.sha256, b.object_storage_key, b.size, b.metadata_sha1, b.created_at,
	       EXISTS (SELECT 1 FROM {gc_blob_review_queue} q WHERE q.namespace_id = $1 AND q.sha256 = $2) AS candidate
	FROM {blob_storage_blobs} b
	WHERE b.namespace_id = $1 AND b.sha256 = $2 AND NOT EXISTS (SELECT 1 FROM ins)
	FOR UPDATE OF b
), res AS (
	SELECT true AS inserted, i.*, false AS candidate FROM ins i
	UNION ALL
	SELECT false, l.* FROM locked l
)
SELECT 1::bigint, r.inserted, r.candidate,
       r.id, r.namespace_id, r.sha256, r.object_storage_key, r.size, r.metadata_sha1, r.created_at
FROM (SELECT) one LEFT JOIN res r ON true`, "blob_storage_blobs", "gc_blob_review_queue")

const commitAttempts = 5

type commitRow struct {
	sessions  int64
	inserted  *bool
	candidate *bool
	blob      Blob
}

func scanCommitRow(row pgx.Row) (*commitRow, error) {
	var c commitRow
	var (
		id      *int64
		ns      *uuid.UUID
		key     *string
		size    *int64
		created *time.Time
		b       = blobScan{b: &c.blob}
	)
	err := row.Scan(&c.sessions, &c.inserted, &c.candidate, &id, &ns, &b.sha, &key, &size, &b.sha1, &created)
	if err != nil {
		return nil, err
	}
	if c.inserted == nil {
		return &c, nil
	}
	c.blob.ID, c.blob.NamespaceID, c.blob.ObjectStorageKey, c.blob.Size, c.blob.CreatedAt = *id, *ns, *key, *size, *created
	return &c, b.finish()
}

// commitBlob is the transaction of CommitUpload. casSize is the session
// size the compare-and-swap expects; size and sum describe the bytes held by
// h (parts on backends without append). h is nil when the upload data is
// already gone (file backend: renamed into place by an earlier attempt whose
// database commit failed). The bytes move last, once every statement has
// run: an attempt that fails before (a deadlock retried, a refused link)
// leaves them in the upload. The upload file is sealed (synced) while the
// statements run, and the move waits for it.
func (s *Store) commitBlob(ctx context.Context, ref UploadRef, casSize int64, h *objstore.Upload, parts []objstore.Part, size int64, sum [32]byte, sha1 *[20]byte, link UploadLink) (*CommitResult, error) {
	sealed := s.sealAsync(h, size)
	// Its error fails the move that waits for it; this wait only makes
	// sure h is not in use when the caller closes it.
	defer sealed()
	var res *CommitResult
	err := db.Retry(ctx, s.WithTx, func(tx pgx.Tx) error {
		if link.Before != nil {
			if err := link.Before(tx); err != nil {
				return err
			}
		}
		c, err := s.commitBlobTx(ctx, tx, ref, casSize, size, sum, sha1)
		if err != nil {
			return err
		}
		if link.Use != nil {
			if err := link.Use(tx, StagedUse{Blob: &c.blob, Candidate: *c.candidate}); err != nil {
				return err
			}
		}
		if err := sealed(); err != nil {
			return err
		}
		res, err = s.placeCommitted(ctx, c, h, parts, size, sum)
		return err
	})
	if errors.Is(err, errSessionChanged) {
		return nil, s.whyNotCommitted(ctx, ref, casSize)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// sealAsync starts h.Seal(size) when h holds an upload file, and returns
// the wait for it: the file's sync then overlaps the commit's statements
// instead of following them.
func (s *Store) sealAsync(h *objstore.Upload, size int64) func() error {
	if h == nil || !s.objects.IsFile() {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() { done <- h.Seal(size) }()
	return sync.OnceValue(func() error {
		if err := <-done; err != nil {
			return fmt.Errorf("store: commit upload: %w", err)
		}
		return nil
	})
}

// errSessionChanged: the session compare-and-swap of a commit deleted no
// row (the session is gone, poisoned or was advanced meanwhile).
var errSessionChanged = errors.New("store: upload session changed")

// commitBlobTx runs the statements of a commit in tx: the session row is
// deleted (compare-and-swap on casSize; errSessionChanged when that fails)
// and the blob row inserted or, when it exists, locked FOR UPDATE. Either
// way tx holds the blob row until it ends.
func (s *Store) commitBlobTx(ctx context.Context, tx pgx.Tx, ref UploadRef, casSize, size int64, sum [32]byte, sha1 *[20]byte) (*commitRow, error) {
	key := objstore.BlobKey(ref.NamespaceID, sum)
	var sha1Arg []byte
	if sha1 != nil {
		sha1Arg = sha1[:]
	}
	// The statement waits for the blob-row lock when the row exists.
	lockStart := time.Now()
	createdAt := s.opts.Clock.Now()
	part, err := partition.Of(ctx, tx, ref.NamespaceID)
	if err != nil {
		return nil, err
	}
	c, err := scanCommitRow(tx.QueryRow(ctx, commitPartitionSQL[part], ref.NamespaceID, ref.UploadID, casSize, sum[:], key, size, sha1Arg, createdAt))
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: commit upload: %w", err))
	}
	if c.sessions == 0 {
		return nil, errSessionChanged
	}
	for attempt := 1; c.inserted == nil; attempt++ {
		if attempt >= commitAttempts {
			return nil, errs.New(CodeRetryable, "temporarily unavailable, retry: blob row kept changing under the commit")
		}
		c, err = scanCommitRow(partition.QueryRowDigest(ctx, tx, &commitRetrySQL, sum, ref.NamespaceID, sum[:], key, size, sha1Arg, createdAt))
		if err != nil {
			return nil, db.MapErr(fmt.Errorf("store: commit upload: %w", err))
		}
	}
	if !*c.inserted { // a dedup commit: it locked the existing row
		s.ObserveBlobLockWait(lockStart)
		if !*c.candidate {
			// A detach that held the lock before this statement got it may
			// have recorded a candidate its snapshot cannot see; under the
			// lock a new statement sees every candidate there is.
			if err := partition.QueryRowDigest(ctx, tx, &candidateSQL, sum, ref.NamespaceID, sum[:]).Scan(c.candidate); err != nil {
				return nil, db.MapErr(fmt.Errorf("store: commit upload: gc candidate: %w", err))
			}
		}
	}
	return c, nil
}

// candidateSQL reports whether the blob has a live GC candidate, on the
// digest's partition.
var candidateSQL = partition.Statements(`
SELECT EXISTS (SELECT 1 FROM {gc_blob_review_queue} WHERE namespace_id = $1 AND sha256 = $2)`, "gc_blob_review_queue")

// placeCommitted puts the bytes where the blob row of c says, under the
// blob-row lock commitBlobTx took: a new row gets the upload's bytes moved
// to its key; an existing row is a dedup skip that writes nothing, unless
// a live GC candidate says the object may be gone (GC deleted it and
// crashed before its commit), which is then checked and, when missing,
// re-created from this upload's bytes.
func (s *Store) placeCommitted(ctx context.Context, c *commitRow, h *objstore.Upload, parts []objstore.Part, size int64, sum [32]byte) (*CommitResult, error) {
	res := &CommitResult{Blob: &c.blob}
	if *c.inserted {
		res.Created = true
		if err := s.place(ctx, h, parts, size, c.blob.ObjectStorageKey); err != nil {
			return nil, err
		}
		return res, nil
	}
	res.Deduplicated = true
	if c.blob.Size != size {
		return nil, fmt.Errorf("store: blob %s is recorded with %d bytes, the upload has %d", FormatSHA256(sum), c.blob.Size, size)
	}
	if !*c.candidate {
		return res, nil
	}
	res.ObjectChecked = true
	ok, err := s.objectExists(ctx, c.blob.ObjectStorageKey)
	s.ObserveDedupObjectCheck(ok, err)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := s.place(ctx, h, parts, size, c.blob.ObjectStorageKey); err != nil {
			return nil, err
		}
		res.Reuploaded = true
	}
	return res, nil
}

// objectExists checks an object under a held lock, bounded by
// ObjectCheckTimeout; a check that cannot finish in time is retryable.
func (s *Store) objectExists(ctx context.Context, key string) (bool, error) {
	bounded, cancel := context.WithTimeout(ctx, s.opts.ObjectCheckTimeout)
	defer cancel()
	return s.objectExistsWithin(ctx, bounded, key)
}

// objectExistsWithin checks an object under bounded, a context derived
// from the caller's ctx with the check's deadline (shared by the checks of
// one Attach). A failure is the caller's own cancellation when ctx is done,
// else retryable: the bound ran out or storage failed, and nothing was
// changed.
func (s *Store) objectExistsWithin(ctx, bounded context.Context, key string) (bool, error) {
	ok, err := s.objects.Exists(bounded, key)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, errs.Wrap(CodeRetryable, err, "temporarily unavailable, retry: object check")
	}
	return ok, nil
}

// place moves the upload's bytes to the blob key. When the upload data is
// already gone (an earlier attempt renamed it into place and then failed to
// commit), the object at the key is accepted, and synced: only verified
// bytes are ever moved to a content-addressed key.
func (s *Store) place(ctx context.Context, h *objstore.Upload, parts []objstore.Part, size int64, key string) error {
	var err error
	if h == nil {
		err = objstore.ErrNotFound
	} else {
		err = h.Promote(ctx, parts, size, key)
	}
	if errors.Is(err, objstore.ErrNotFound) {
		if ok, xerr := s.objectExists(ctx, key); xerr == nil && ok {
			if err := s.objects.SyncObject(key); err != nil {
				return fmt.Errorf("store: commit upload: %w", err)
			}
			return nil
		}
		return errs.New(CodeUploadUnknown, "upload unknown")
	}
	if err != nil {
		return fmt.Errorf("store: commit upload: %w", err)
	}
	return nil
}

// whyNotCommitted explains a failed session compare-and-swap: the session
// is gone, poisoned, or was advanced by a concurrent writer (which poisons
// it now).
func (s *Store) whyNotCommitted(ctx context.Context, ref UploadRef, casSize int64) error {
	u, _, err := s.loadUpload(ctx, ref)
	switch {
	case err != nil:
		return err
	case u.Dirty:
		return errs.New(CodeUploadPoisoned, "upload poisoned by concurrent writers")
	case u.Size != casSize:
		if err := s.poison(ctx, ref); err != nil {
			return err
		}
		return errs.New(CodeUploadConflict, "concurrent write to the upload")
	}
	return errs.New(CodeRetryable, "temporarily unavailable, retry: upload session changed during commit")
}
