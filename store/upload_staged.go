package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

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
}

// StagedUse is what the caller's statements need to attach a staged blob
// under the lock CommitStaged holds.
type StagedUse struct {
	Blob *Blob
	// Candidate: the blob row has a live GC candidate, which attaching
	// must delete (ADR-025: attach clears the candidate).
	Candidate bool
}

// StageBlob starts a monolithic upload in ref's namespace and repository
// (ref.UploadID is ignored) and writes r into it, hashing while writing. A
// digest or size other than want's fails with ErrDigestMismatch or
// ErrSizeMismatch and leaves nothing behind.
func (s *Store) StageBlob(ctx context.Context, ref UploadRef, r io.Reader, want Expected) (*StagedBlob, error) {
	u, err := s.StartUpload(ctx, ref.NamespaceID, ref.RepositoryID, UploadMonolithic)
	if err != nil {
		return nil, err
	}
	b := &StagedBlob{s: s, ref: u.Ref(), sha1: want.SHA1}
	if err := b.write(ctx, r, want); err != nil {
		b.discard(ctx)
		return nil, err
	}
	return b, nil
}

func (b *StagedBlob) write(ctx context.Context, r io.Reader, want Expected) error {
	h, err := b.s.openUpload(ctx, b.ref)
	if err != nil {
		return err
	}
	b.h = h
	setSHA1Metadata(h, want)
	hash := sha256.New()
	p, err := b.s.writeAt(ctx, h, 0, r, hash)
	if err != nil {
		return err
	}
	if !b.s.objects.IsFile() && p.Size > 0 {
		b.parts = []objstore.Part{p}
	}
	b.size = p.Size
	copy(b.sum[:], hash.Sum(nil))
	return want.check(b.sum, b.size)
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
		return nil, fmt.Errorf("%w: upload session gone before its commit", ErrRetryable)
	}
	if err != nil {
		return nil, err
	}
	if err := use(StagedUse{Blob: &c.blob, Candidate: *c.candidate}); err != nil {
		return nil, err
	}
	return s.placeCommitted(ctx, c, b.h, b.parts, b.size, b.sum)
}

// Close releases the staged upload once the caller's transaction has
// ended. committed: the transaction committed, so the session row is gone
// and only the temporary data a commit leaves (parts on backends without
// rename) is removed; otherwise the whole upload is discarded.
func (b *StagedBlob) Close(ctx context.Context, committed bool) {
	if !committed {
		b.discard(ctx)
		return
	}
	_ = b.h.Close()
	_ = b.s.objects.DeleteUpload(context.WithoutCancel(ctx), b.ref.NamespaceID, b.ref.UploadID)
}

// discard deletes the temporary data and the session row.
func (b *StagedBlob) discard(ctx context.Context) {
	if b.h != nil {
		_ = b.h.Close()
	}
	b.s.abandonUpload(ctx, b.ref)
}
