package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// UploadKind selects the TTL of an upload session.
type UploadKind int

const (
	// UploadMonolithic: the bytes arrive in one request (short TTL).
	UploadMonolithic UploadKind = iota
	// UploadResumable: the bytes arrive in chunks (long TTL).
	UploadResumable
)

// UploadRef names an upload session. Every operation checks that the
// session belongs to the repository in the URL (docs/schema.md "Upload
// sessions"), so a leaked
// upload id cannot be used from another repository.
type UploadRef struct {
	NamespaceID  uuid.UUID
	RepositoryID uuid.UUID
	UploadID     uuid.UUID
}

// Upload is an upload_sessions row.
type Upload struct {
	ID           int64
	NamespaceID  uuid.UUID
	RepositoryID uuid.UUID
	UploadID     uuid.UUID
	Size         int64 // bytes received so far
	Dirty        bool
	CreatedAt    time.Time
	ExpiresAt    time.Time
	UpdatedAt    time.Time
}

// Ref returns the session's reference.
func (u *Upload) Ref() UploadRef {
	return UploadRef{NamespaceID: u.NamespaceID, RepositoryID: u.RepositoryID, UploadID: u.UploadID}
}

// StartUpload opens an upload session in a repository; expires_at is the
// clock's now plus the TTL of the kind.
func (s *Store) StartUpload(ctx context.Context, namespaceID, repositoryID uuid.UUID, kind UploadKind) (*Upload, error) {
	u, h, err := s.startUpload(ctx, namespaceID, repositoryID, kind, nil, nil)
	if err != nil {
		return nil, err
	}
	if err := h.Close(); err != nil {
		s.abandonUpload(ctx, u.Ref())
		return nil, fmt.Errorf("store: start upload: %w", err)
	}
	return u, nil
}

// startUpload is StartUpload that keeps the temporary storage open
// (objstore.CreateOpenUpload, with meta). On the file backend the upload
// file is created while the session row is inserted: a crash in between
// leaves a file without a row (as creating it first always could) or a
// row whose file is missing, which its purge treats as deleted; nobody
// else can open the upload before this returns its id. acquired, when not
// nil, is called once the statement's connection is held: from then on
// startUpload needs no other connection, so a caller may take one for
// itself without risking a wait on its own upload.
func (s *Store) startUpload(ctx context.Context, namespaceID, repositoryID uuid.UUID, kind UploadKind, meta map[string]string, acquired func()) (*Upload, *objstore.Upload, error) {
	ttl := s.opts.MonolithicUploadTTL
	if kind == UploadResumable {
		ttl = s.opts.ResumableUploadTTL
	}
	uploadID := db.NewID()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, db.MapErr(fmt.Errorf("store: start upload: %w", err))
	}
	defer conn.Release()
	if acquired != nil {
		acquired()
	}
	type created struct {
		h   *objstore.Upload
		err error
	}
	done := make(chan created, 1)
	create := func() {
		h, err := s.objects.CreateOpenUpload(ctx, namespaceID, uploadID, meta)
		done <- created{h, err}
	}
	if s.objects.IsFile() {
		go create()
	} else {
		create() // no I/O: nothing to overlap
	}
	u := &Upload{NamespaceID: namespaceID, RepositoryID: repositoryID, UploadID: uploadID}
	err = s.insertUploadSession(ctx, conn.Conn(), u, s.opts.Clock.Now(), ttl)
	c := <-done
	if err == nil && c.err == nil {
		return u, c.h, nil
	}
	if c.h != nil {
		_ = c.h.Close()
	}
	_ = s.objects.DeleteUpload(context.WithoutCancel(ctx), namespaceID, uploadID)
	if HasCode(err, CodeTooManyUploads) {
		return nil, nil, err
	}
	if err != nil {
		return nil, nil, db.MapErr(fmt.Errorf("store: start upload: %w", err))
	}
	_, _ = conn.Exec(context.WithoutCancel(ctx), `DELETE FROM upload_sessions WHERE namespace_id = $1 AND upload_id = $2`,
		namespaceID, uploadID)
	return nil, nil, fmt.Errorf("store: start upload: %w", c.err)
}

// insertUploadSessionSQL inserts a session row; created_at is the store
// clock's, like a blob row's, so the GC can compare the two. Every push
// and publish starts a session: it names the namespace's partition
// (partition.Statements), where the parent cost a plan at every call.
var insertUploadSessionSQL = partition.Statements(`
INSERT INTO {upload_sessions} (namespace_id, repository_id, upload_id, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5)
RETURNING id, size_bytes, dirty, created_at, expires_at, updated_at`, "upload_sessions")

// insertCappedUploadSessionSQL is insertUploadSessionSQL that inserts
// nothing when the repository already holds $6 unexpired sessions (it
// counts no further than that).
var insertCappedUploadSessionSQL = partition.Statements(`
INSERT INTO {upload_sessions} (namespace_id, repository_id, upload_id, created_at, expires_at)
SELECT $1, $2, $3, $4, $5
WHERE (SELECT count(*) FROM (
	SELECT 1 FROM {upload_sessions}
	WHERE namespace_id = $1 AND repository_id = $2 AND expires_at > $4
	LIMIT $6) open) < $6
RETURNING id, size_bytes, dirty, created_at, expires_at, updated_at`, "upload_sessions")

// uploadCapLockClass is the first key of the transaction-level advisory
// lock that serializes session starts of one repository while the cap is
// checked (the second key is a hash of the repository id).
const uploadCapLockClass = 0x75706c64 // "upld"

// insertUploadSession inserts u's row (expires_at = now + ttl) under the
// per-repository session cap. With a cap, the advisory lock and the capped
// insert go in one batch, hence one implicit transaction and one round
// trip: the lock is held until the insert commits, and the insert, a
// statement of its own, counts every session committed before the lock
// was granted, on every instance. CodeTooManyUploads when the cap is
// reached.
//
// That transaction commits without waiting for its WAL to reach the disk
// (synchronous_commit off, for it alone): the lock is released at the
// end of the commit, so the flush would serialize every session start of
// the repository behind the disk. A row it may lose in a database crash is
// a session the client then finds unknown and starts again (a crash
// between the file and the row leaves the same); the commit of the bytes,
// which makes a blob exist, waits for the disk as before.
func (s *Store) insertUploadSession(ctx context.Context, conn *pgx.Conn, u *Upload, now time.Time, ttl time.Duration) error {
	limit := s.opts.MaxUploadSessionsPerRepository
	scan := func(row pgx.Row) error {
		return row.Scan(&u.ID, &u.Size, &u.Dirty, &u.CreatedAt, &u.ExpiresAt, &u.UpdatedAt)
	}
	if limit <= 0 {
		return scan(partition.QueryRow(ctx, conn, &insertUploadSessionSQL, u.NamespaceID, u.RepositoryID, u.UploadID, now, now.Add(ttl)))
	}
	p, err := partition.Of(ctx, conn, u.NamespaceID)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(`SELECT pg_advisory_xact_lock($1, hashtext($2::text))`, uploadCapLockClass, u.RepositoryID)
	b.Queue(insertCappedUploadSessionSQL[p], u.NamespaceID, u.RepositoryID, u.UploadID, now, now.Add(ttl), limit)
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = scan(br.QueryRow())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.New(CodeTooManyUploads, "too many upload sessions in the repository: the repository has %d open upload sessions, the limit: finish or cancel some, or wait for them to expire", limit)
	}
	return err
}

// loadUploadSQL reads a session from its namespace's partition: every
// PATCH and PUT of an upload runs it (see partition.Statements).
var loadUploadSQL = partition.Statements(`
	SELECT id, repository_id, size_bytes, hash_state, dirty, created_at, expires_at, updated_at
	FROM {upload_sessions}
	WHERE namespace_id = $1 AND upload_id = $2`, "upload_sessions")

// loadUpload reads a session. Unknown, foreign-repository and expired
// sessions are all CodeUploadUnknown.
func (s *Store) loadUpload(ctx context.Context, ref UploadRef) (*Upload, []byte, error) {
	u := &Upload{NamespaceID: ref.NamespaceID, UploadID: ref.UploadID}
	var state []byte
	err := partition.QueryRow(ctx, s.pool, &loadUploadSQL, ref.NamespaceID, ref.UploadID).Scan(&u.ID, &u.RepositoryID, &u.Size, &state, &u.Dirty, &u.CreatedAt, &u.ExpiresAt, &u.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, errs.New(CodeUploadUnknown, "upload unknown")
	}
	if err != nil {
		return nil, nil, db.MapErr(fmt.Errorf("store: read upload: %w", err))
	}
	if u.RepositoryID != ref.RepositoryID || !s.opts.Clock.Now().Before(u.ExpiresAt) {
		return nil, nil, errs.New(CodeUploadUnknown, "upload unknown")
	}
	return u, state, nil
}

// UploadStatus reports a session (Size: bytes received so far). A poisoned
// session is returned with Dirty set.
func (s *Store) UploadStatus(ctx context.Context, ref UploadRef) (*Upload, error) {
	u, _, err := s.loadUpload(ctx, ref)
	return u, err
}

// openUpload opens the temporary data of an upload. A concurrent writer on
// the file backend poisons the session (it is a concurrent write, whoever
// wins the lock) and yields CodeUploadConflict.
func (s *Store) openUpload(ctx context.Context, ref UploadRef) (*objstore.Upload, error) {
	h, err := s.objects.OpenUpload(ctx, ref.NamespaceID, ref.UploadID)
	switch {
	case errors.Is(err, objstore.ErrBusy):
		if err := s.poison(ctx, ref); err != nil {
			return nil, err
		}
		return nil, errs.New(CodeUploadConflict, "concurrent write to the upload")
	case err != nil:
		return nil, err
	}
	return h, nil
}

// poison sets the dirty bit (the session is then refused for good).
// CodeUploadUnknown when the session is gone.
func (s *Store) poison(ctx context.Context, ref UploadRef) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE upload_sessions SET dirty = true, updated_at = now()
		WHERE namespace_id = $1 AND upload_id = $2 AND repository_id = $3`,
		ref.NamespaceID, ref.UploadID, ref.RepositoryID)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: poison upload: %w", err))
	}
	if tag.RowsAffected() == 0 {
		return errs.New(CodeUploadUnknown, "upload unknown")
	}
	return nil
}

func (s *Store) sizeLimit(have int64) int64 {
	if s.opts.MaxBlobSize <= 0 {
		return -1
	}
	return max(s.opts.MaxBlobSize-have, 0)
}

// AppendUpload appends a chunk at offset, which must equal the bytes the
// session holds (else *RangeMismatchError). The chunk is hashed while it is
// written; the new size and SHA-256 state are then persisted by
// compare-and-swap on size_bytes. The loser of a race sets the dirty bit and
// gets CodeUploadConflict; a dirty session answers CodeUploadPoisoned. Returns
// the session after the chunk.
//
// The chunk's bytes are synced before the size is recorded
// (objstore.Upload.Sync). The size is committed without waiting for the
// disk (withUnflushedTx): a database crash that takes it back leaves the
// session at its previous chunk, as a crash between the write and the
// commit already may (the bytes past the recorded size are overwritten or
// cut at the commit), and the client, told a different offset, sends the
// chunk again or restarts. The commit of the blob waits for the disk, and
// flushes this one with it.
func (s *Store) AppendUpload(ctx context.Context, ref UploadRef, offset int64, r io.Reader) (*Upload, error) {
	h, err := s.openUpload(ctx, ref)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, errs.New(CodeUploadUnknown, "upload unknown")
	}
	if err != nil {
		return nil, err
	}
	defer h.Close()
	u, raw, err := s.loadUpload(ctx, ref)
	if err != nil {
		return nil, err
	}
	if u.Dirty {
		return nil, errs.New(CodeUploadPoisoned, "upload poisoned by concurrent writers")
	}
	if offset != u.Size {
		return nil, &Error{Code: CodeRangeMismatch, Size: u.Size,
			Message: fmt.Sprintf("chunk offset does not match the upload size: chunk at %d, upload holds %d bytes", offset, u.Size)}
	}
	st, err := unmarshalUploadState(raw, u.Size)
	if err != nil {
		return nil, err
	}
	part, err := h.Write(ctx, offset, r, st.hash, s.sizeLimit(u.Size))
	if err != nil {
		if errors.Is(err, objstore.ErrTooLarge) {
			return nil, errs.New(CodeBlobTooLarge, "blob too large")
		}
		return nil, fmt.Errorf("store: append upload: %w", err)
	}
	if part.Size == 0 {
		_ = h.DiscardPart(ctx, part)
		return u, nil
	}
	if !s.objects.IsFile() {
		st.parts = append(st.parts, part)
	}
	if err := h.Sync(); err != nil {
		return nil, fmt.Errorf("store: append upload: %w", err)
	}
	enc, err := st.marshal()
	if err != nil {
		return nil, err
	}
	err = s.withUnflushedTx(ctx, func(tx pgx.Tx) error {
		err := partition.QueryRow(ctx, tx, &appendUploadSQL, ref.NamespaceID,
			ref.UploadID, u.Size+part.Size, enc, u.Size,
		).Scan(&u.Size, &u.UpdatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return errLostCAS
		}
		return err
	})
	if errors.Is(err, errLostCAS) {
		// Lost the compare-and-swap: poison the session (committed on its
		// own, the CAS transaction is rolled back).
		err = s.poison(ctx, ref)
		if err == nil {
			err = errs.New(CodeUploadConflict, "concurrent write to the upload")
		}
	}
	if err != nil {
		_ = h.DiscardPart(context.WithoutCancel(ctx), part)
		if HasCode(err, CodeUploadUnknown) || HasCode(err, CodeUploadConflict) || HasCode(err, CodeRetryable) {
			return nil, err
		}
		return nil, fmt.Errorf("store: append upload: %w", err)
	}
	return u, nil
}

// appendUploadSQL records a chunk (compare-and-swap on the size): every
// PATCH runs it, on its namespace's partition (see partition.Statements),
// where the parent cost a plan at every call.
var appendUploadSQL = partition.Statements(`
	UPDATE {upload_sessions}
	SET size_bytes = $3, hash_state = $4, updated_at = now()
	WHERE namespace_id = $1 AND upload_id = $2 AND size_bytes = $5 AND NOT dirty
	RETURNING size_bytes, updated_at`, "upload_sessions")

var errLostCAS = errors.New("store: lost the upload compare-and-swap")

// CancelUpload deletes a session and its temporary data (data first, then
// the row, like the purge).
func (s *Store) CancelUpload(ctx context.Context, ref UploadRef) error {
	if _, _, err := s.loadUpload(ctx, ref); err != nil {
		return err
	}
	if err := s.objects.DeleteUpload(ctx, ref.NamespaceID, ref.UploadID); err != nil {
		return fmt.Errorf("store: cancel upload: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM upload_sessions
		WHERE namespace_id = $1 AND upload_id = $2 AND repository_id = $3`,
		ref.NamespaceID, ref.UploadID, ref.RepositoryID)
	if err != nil {
		return db.MapErr(fmt.Errorf("store: cancel upload: %w", err))
	}
	if tag.RowsAffected() == 0 {
		return errs.New(CodeUploadUnknown, "upload unknown")
	}
	return nil
}

// ExpiredUpload is a session past its expiry, as the purge query returns it.
type ExpiredUpload struct {
	ID          int64
	NamespaceID uuid.UUID
	UploadID    uuid.UUID
	ExpiresAt   time.Time
}

// ExpiredUploads is the upload-purge query (docs/schema.md "Upload
// sessions"): sessions whose
// expires_at is before the clock's now, oldest first, at most limit. It
// scans all 64 partitions (no namespace_id), bounded by the expires_at
// index and the limit; it runs in a background job, not on a hot path.
func (s *Store) ExpiredUploads(ctx context.Context, limit int) ([]ExpiredUpload, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, namespace_id, upload_id, expires_at
		FROM upload_sessions
		WHERE expires_at < $1
		ORDER BY expires_at
		LIMIT $2`,
		s.opts.Clock.Now(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: expired uploads: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ExpiredUpload, error) {
		var e ExpiredUpload
		err := row.Scan(&e.ID, &e.NamespaceID, &e.UploadID, &e.ExpiresAt)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: expired uploads: %w", err)
	}
	return out, nil
}

// PurgeUpload deletes an expired session's temporary data, then its row
// (docs/schema.md "Upload sessions"). It reports whether the row was
// still there.
func (s *Store) PurgeUpload(ctx context.Context, e ExpiredUpload) (bool, error) {
	if err := s.objects.DeleteUpload(ctx, e.NamespaceID, e.UploadID); err != nil {
		return false, fmt.Errorf("store: purge upload: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM upload_sessions
		WHERE namespace_id = $1 AND id = $2 AND upload_id = $3`,
		e.NamespaceID, e.ID, e.UploadID)
	if err != nil {
		return false, fmt.Errorf("store: purge upload: %w", err)
	}
	return tag.RowsAffected() > 0, nil
}

// PurgeExpiredUploads runs the purge query once and purges what it
// returned; it reports how many sessions it deleted.
func (s *Store) PurgeExpiredUploads(ctx context.Context, limit int) (int, error) {
	expired, err := s.ExpiredUploads(ctx, limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range expired {
		ok, err := s.PurgeUpload(ctx, e)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}
