package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// StagedBlob is a monolithic upload whose bytes sit verified in temporary
// storage (its session row committed, as every upload's is), waiting to be
// committed inside the transaction of the format row that uses it. A
// publish then inserts the blob row, its attachment and its own rows in one
// transaction instead of two, and needs no separate lock of the blob row:
// the commit statement already holds it. Close it when done.
type StagedBlob struct {
	s     *Store
	ref   UploadRef
	h     *objstore.Upload
	parts []objstore.Part
	size  int64
	sum   [32]byte
	sha1  *[20]byte
	// sealed waits for the seal SealAsync started; nil before.
	sealed func() error
	// closed: Close ran (a second Close does nothing).
	closed bool
}

// StagedUse is what the caller's statements need to attach a staged blob
// under the lock CommitStaged holds.
type StagedUse struct {
	Blob *Blob
	// Candidate: the blob row has a live GC candidate, which attaching
	// must delete (docs/garbage-collection.md, rule 3: attach clears the
	// candidate).
	Candidate bool
}

// StageBlob starts a monolithic upload in ref's namespace and repository
// (ref.UploadID is ignored), writes r into it, hashing while writing, and
// starts its seal (SealAsync). A digest or size other than want's fails
// with CodeDigestMismatch or CodeSizeMismatch and leaves nothing behind.
func (s *Store) StageBlob(ctx context.Context, ref UploadRef, r io.Reader, want Expected) (*StagedBlob, error) {
	b, err := s.stageBlob(ctx, ref, r, want, nil)
	if err != nil && b != nil {
		b.discard(ctx)
		return nil, err
	}
	return b, err
}

// stageBlob is StageBlob that leaves the discard of a failed write to the
// caller (b is not nil then), so that it needs no database connection
// after acquired (see startUpload) has been called.
func (s *Store) stageBlob(ctx context.Context, ref UploadRef, r io.Reader, want Expected, acquired func()) (*StagedBlob, error) {
	u, h, err := s.startUpload(ctx, ref.NamespaceID, ref.RepositoryID, UploadMonolithic, sha1Metadata(want), acquired)
	if err != nil {
		return nil, err
	}
	b := &StagedBlob{s: s, ref: u.Ref(), h: h, sha1: want.SHA1}
	if err := b.write(ctx, r, want); err != nil {
		return b, err
	}
	b.SealAsync()
	return b, nil
}

// PendingStage is a StageBlob running concurrently with the caller.
type PendingStage struct {
	done chan struct{}
	b    *StagedBlob
	err  error
}

// StageBlobAsync starts StageBlob of data and returns once its
// connection is held, so that the caller may take one of its own (for
// the transaction that will use the blob) without the two waiting on
// each other when the pool runs dry. Wait for the result, and Close the
// staged blob (Close(ctx, false) also discards a failed one).
func (s *Store) StageBlobAsync(ctx context.Context, ref UploadRef, data []byte, want Expected) *PendingStage {
	p := &PendingStage{done: make(chan struct{})}
	acquired := make(chan struct{})
	var once sync.Once
	signal := func() { once.Do(func() { close(acquired) }) }
	go func() {
		defer close(p.done)
		defer signal()
		p.b, p.err = s.stageBlob(ctx, ref, bytes.NewReader(data), want, signal)
	}()
	<-acquired
	return p
}

// WithStagedTx runs fn in a foreground transaction (WithTx), again after
// a retryable failure (db.Retry), for a caller whose transaction commits
// the blob pending stages: fn waits for it (pending.Wait) once the rows
// that come before the blob row are locked, and commits it
// (CommitStaged). The staged blob is closed afterwards, its bytes kept
// only when fn's transaction committed.
func (s *Store) WithStagedTx(ctx context.Context, pending *PendingStage, fn func(tx pgx.Tx) error) error {
	err := db.Retry(ctx, s.WithTx, fn)
	if staged, _ := pending.Wait(); staged != nil {
		staged.Close(ctx, err == nil)
	}
	return err
}

// StagedPending wraps a blob the caller staged already as a finished
// PendingStage, for code that takes either kind.
func StagedPending(b *StagedBlob) *PendingStage {
	done := make(chan struct{})
	close(done)
	return &PendingStage{done: done, b: b}
}

// SealAsync starts readying the staged bytes for their commit while the
// caller runs the transaction that will commit them: on the file backend
// the upload file is cut, its metadata staged and the file synced
// (objstore.Upload.Seal), so that the commit only renames it. CommitStaged
// waits for it before it moves the bytes, Close before it lets go of them.
// Set the SHA-1 (SetSHA1) before; a second call does nothing.
func (b *StagedBlob) SealAsync() {
	if b.sealed == nil {
		b.sealed = b.s.sealAsync(b.h, b.size)
	}
}

// waitSealed waits for the seal SealAsync started, if any.
func (b *StagedBlob) waitSealed() error {
	if b.sealed == nil {
		return nil
	}
	return b.sealed()
}

// Wait returns the staged blob, or the error that staging it met; the
// blob is not nil when there is something to Close.
func (p *PendingStage) Wait() (*StagedBlob, error) {
	<-p.done
	return p.b, p.err
}

func (b *StagedBlob) write(ctx context.Context, r io.Reader, want Expected) error {
	if err := b.copyFrom(ctx, r); err != nil {
		return err
	}
	return want.check(b.sum, b.size)
}

// copyFrom writes r into the staged upload, hashing it.
func (b *StagedBlob) copyFrom(ctx context.Context, r io.Reader) error {
	hash := sha256.New()
	p, err := b.s.writeAt(ctx, b.h, 0, r, hash)
	if err != nil {
		return err
	}
	if !b.s.objects.IsFile() && p.Size > 0 {
		b.parts = []objstore.Part{p}
	}
	b.size = p.Size
	copy(b.sum[:], hash.Sum(nil))
	return nil
}

// StageStream stages r, whose digest nobody knows before it has been read
// (a tarball decoded from a request body while the body streams in): the
// bytes go to temporary storage as they arrive, never whole in memory.
// Nothing is compared: the caller checks Size and SHA256 against what it
// expects, sets the SHA-1 with SetSHA1, and Closes the blob (Close(ctx,
// false) when it refuses the bytes). A failed write leaves nothing.
func (s *Store) StageStream(ctx context.Context, ref UploadRef, r io.Reader) (*StagedBlob, error) {
	u, h, err := s.startUpload(ctx, ref.NamespaceID, ref.RepositoryID, UploadMonolithic, nil, nil)
	if err != nil {
		return nil, err
	}
	b := &StagedBlob{s: s, ref: u.Ref(), h: h}
	if err := b.copyFrom(ctx, r); err != nil {
		b.discard(ctx)
		return nil, err
	}
	return b, nil
}

// Size is the staged byte count.
func (b *StagedBlob) Size() int64 { return b.size }

// SHA256 is the staged bytes' digest.
func (b *StagedBlob) SHA256() [32]byte { return b.sum }

// SetSHA1 records the SHA-1 of a blob staged by StageStream, for the blob
// row and the object's metadata (as Expected.SHA1 does for StageBlob).
func (b *StagedBlob) SetSHA1(sum [20]byte) {
	b.sha1 = &sum
	b.h.SetMetadata(sha1Metadata(Expected{SHA1: &sum}))
}

// CommitStaged commits b inside the caller's transaction: it deletes the
// session row and inserts the blob row (or locks the existing one FOR
// UPDATE), runs use, which attaches the blob with the caller's own
// statements while the row is held, and last moves the bytes to the blob
// key (or, on a dedup with a live candidate, checks the object and
// re-creates it when it is gone). The bytes move last so that a failing
// use leaves no object behind. After the caller's COMMIT or rollback,
// call Close. tx may be retried: a new attempt finds the session row back.
func (s *Store) CommitStaged(ctx context.Context, tx pgx.Tx, b *StagedBlob, use func(StagedUse) error) (*CommitResult, error) {
	c, err := s.commitBlobTx(ctx, tx, b.ref, 0, b.size, b.sum, b.sha1)
	if errors.Is(err, errSessionChanged) {
		// Only the purge of an expired session can do that to a staged one.
		return nil, errs.New(CodeRetryable, "temporarily unavailable, retry: upload session gone before its commit")
	}
	if err != nil {
		return nil, err
	}
	if err := use(StagedUse{Blob: &c.blob, Candidate: *c.candidate}); err != nil {
		return nil, err
	}
	if err := b.waitSealed(); err != nil {
		return nil, err
	}
	return s.placeCommitted(ctx, c, b.h, b.parts, b.size, b.sum)
}

// Close releases the staged upload once the caller's transaction has
// ended. committed: the transaction committed, so the session row is gone
// and only the temporary data a commit leaves (parts on backends without
// rename) is removed; otherwise the whole upload is discarded.
func (b *StagedBlob) Close(ctx context.Context, committed bool) {
	if b.closed {
		return
	}
	b.closed = true
	_ = b.waitSealed() // the seal uses the upload file until it returns
	if !committed {
		b.discard(ctx)
		return
	}
	_ = b.h.Close()
	_ = b.h.Remove(context.WithoutCancel(ctx))
}

// discard deletes the temporary data and the session row.
func (b *StagedBlob) discard(ctx context.Context) {
	if b.h != nil {
		_ = b.h.Close()
	}
	b.s.abandonUpload(ctx, b.ref)
}

// ClearStagedCandidate clears the live GC candidate of the blob a
// CommitStaged holds, if it has one: what AttachStaged does before it
// inserts the attachment, for a caller that inserts the attachment in a
// statement of its own. A statement of its own, run only when the commit
// found a candidate, so that the attaching statement does not plan a read
// of the GC queue on every call. The queue is partitioned by namespace:
// the unnamed statement is planned with the namespace known, where a
// named one could settle on a generic plan that locks all 64 partitions.
func ClearStagedCandidate(ctx context.Context, tx pgx.Tx, u StagedUse) error {
	if !u.Candidate {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 = $2`,
		pgx.QueryExecModeCacheDescribe, u.Blob.NamespaceID, u.Blob.SHA256[:]); err != nil {
		return db.MapErr(fmt.Errorf("store: clear gc candidate: %w", err))
	}
	return nil
}

// AttachStaged records one attachment of the blob a CommitStaged holds,
// from inside its use callback, and clears the blob's live GC candidate
// (docs/garbage-collection.md, rule 3). Unlike Attach it does not check
// the object in storage: CommitStaged places or re-creates the object
// after use returns, under the same lock.
func (s *Store) AttachStaged(ctx context.Context, tx pgx.Tx, u StagedUse) (Attachment, error) {
	var a Attachment
	if err := ClearStagedCandidate(ctx, tx, u); err != nil {
		return a, err
	}
	var sha []byte
	err := tx.QueryRow(ctx, `INSERT INTO blob_storage_attachments (namespace_id, sha256) VALUES ($1, $2) RETURNING id, sha256`,
		u.Blob.NamespaceID, u.Blob.SHA256[:]).Scan(&a.ID, &sha)
	if err != nil {
		return a, db.MapErr(fmt.Errorf("store: attach staged blob: %w", err))
	}
	a.SHA256 = [32]byte(sha)
	return a, nil
}
