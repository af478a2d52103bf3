package objstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/google/uuid"
	"gocloud.dev/blob"
	"golang.org/x/sync/errgroup"

	"github.com/artifact-registry/artifact-registry/store/objstore/driver"
)

// Part is one chunk of upload data on a backend that cannot append: the
// chunk's object is UploadKey + "/" + <offset>-<nonce>. The nonce makes two
// writers racing for the same offset write different objects, so the loser
// can never overwrite the bytes the winner's hash state describes; the
// database records which parts won (in the serialized upload state). On the
// file backend parts are empty: the data is one file written in place.
type Part struct {
	Offset int64
	Size   int64
	Nonce  uint64
}

func partKey(prefix string, p Part) string {
	return prefix + "/" + fmt.Sprintf("%016x-%016x", p.Offset, p.Nonce)
}

// Upload is a handle on the temporary data of one upload. On the file
// backend it holds an exclusive lock on the upload file for its lifetime
// (lock.go), so a second concurrent writer of the same upload fails with
// ErrBusy instead of writing over bytes the first one is accounting for; callers
// read the upload session only after OpenUpload succeeded. Close releases it.
type Upload struct {
	s      *Store
	prefix string
	f      *os.File // file backend only, locked (lockUpload)
	path   string   // the file f was opened at
	// meta is the user metadata of the objects written from now on and of
	// the promoted blob (SetMetadata).
	meta map[string]string
	// metaAt is where the file backend holds meta so far.
	metaAt metaPlace
	// promoted: the file backend's upload file became the blob (Promote),
	// so nothing of the upload is left to delete.
	promoted bool
	// sealed: the file backend's upload file was cut to sealedSize, its
	// metadata staged and the whole synced (Seal), nothing changed since.
	sealed     bool
	sealedSize int64
}

// metaPlace is where the file backend keeps an upload's metadata: as
// extended attributes of the upload file, which rename(2) carries to the
// blob key with the bytes, or, on a file system without user attributes,
// in fileblob's sidecar file <upload>.attrs, renamed next to the blob.
type metaPlace int

const (
	metaPending   metaPlace = iota // not written yet
	metaOnFile                     // extended attributes of the upload file
	metaInSidecar                  // uploads/<id>.attrs
)

// setMetadataOnFile is setFileMetadata; tests replace it to take the
// sidecar path a file system without user attributes takes.
var setMetadataOnFile = setFileMetadata

// errNoXattrs: the file system keeps no user extended attributes.
var errNoXattrs = errors.New("objstore: file system without user extended attributes")

// SetMetadata sets the user metadata (gocloud WriterOptions.Metadata; on
// S3 the x-amz-meta-<key> headers) that the promoted blob object carries,
// and that parts written from now on carry. Keys should be lowercase.
func (u *Upload) SetMetadata(m map[string]string) { u.meta, u.metaAt, u.sealed = m, metaPending, false }

func (u *Upload) writerOptions() *blob.WriterOptions {
	return &blob.WriterOptions{ContentType: contentType, Metadata: u.meta}
}

// CreateOpenUpload prepares the temporary storage of a new upload (file
// backend: an empty file; other backends: nothing) and returns it open for
// writing (and, on the file backend, locked), with the user metadata of
// its blob set (SetMetadata) when meta is not nil. On the file backend
// the metadata is written now (stageMetadata), while the caller records
// the upload session, not on the commit path.
func (s *Store) CreateOpenUpload(ctx context.Context, namespaceID, uploadID uuid.UUID, meta map[string]string) (*Upload, error) {
	u := &Upload{s: s, prefix: UploadKey(namespaceID, uploadID), meta: meta}
	if !s.IsFile() {
		if s.s3 != nil {
			s.markUploads(ctx, namespaceID)
		}
		return u, nil
	}
	p := s.path(u.prefix)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(p), 0o777); err == nil {
			f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: create upload file: %w", err)
	}
	// Nobody else knows the upload yet, so the lock is free; taking it
	// makes the handle what OpenUpload returns.
	if err := lockUpload(ctx, f, p); err != nil {
		f.Close()
		_ = os.Remove(p)
		return nil, fmt.Errorf("objstore: lock upload: %w", err)
	}
	u.f, u.path = f, p
	if err := u.stageMetadata(p); err != nil {
		u.Close()
		_ = os.Remove(p + attrsSuffix)
		_ = os.Remove(p)
		return nil, err
	}
	return u, nil
}

// stageMetadata writes the pending metadata of the file backend's upload
// at path p: as extended attributes of the upload file, else as the
// sidecar p.attrs.
func (u *Upload) stageMetadata(p string) error {
	if u.meta == nil || u.metaAt != metaPending {
		return nil
	}
	err := setMetadataOnFile(u.f, u.meta)
	if errors.Is(err, errNoXattrs) {
		if err = writeFileAttrs(p, u.meta); err == nil {
			u.metaAt = metaInSidecar
		}
		return err
	}
	if err == nil {
		u.metaAt = metaOnFile
	}
	return err
}

// OpenUpload opens the temporary data of an upload for writing or
// promotion. ErrNotFound: the file backend's upload file is gone (cancelled,
// purged or already committed); ErrBusy: another writer holds it.
func (s *Store) OpenUpload(ctx context.Context, namespaceID, uploadID uuid.UUID) (*Upload, error) {
	u := &Upload{s: s, prefix: UploadKey(namespaceID, uploadID)}
	if !s.IsFile() {
		return u, nil
	}
	p := s.path(u.prefix)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("objstore: upload %s: %w", uploadID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: open upload: %w", err)
	}
	if err := lockUpload(ctx, f, p); err != nil {
		f.Close()
		if errors.Is(err, ErrBusy) {
			return nil, fmt.Errorf("objstore: upload %s: %w", uploadID, ErrBusy)
		}
		return nil, fmt.Errorf("objstore: lock upload: %w", err)
	}
	// The path may have been renamed to a blob key (commit) or removed
	// (cancel, purge) between our open and our lock; both happen under the
	// lock, so checking identity now is final for as long as we hold it.
	fi, err1 := f.Stat()
	pi, err2 := os.Stat(p)
	if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
		_ = unlockUpload(f, p)
		return nil, fmt.Errorf("objstore: upload %s: %w", uploadID, ErrNotFound)
	}
	u.f, u.path = f, p
	return u, nil
}

// Close releases the handle (and the file lock).
func (u *Upload) Close() error {
	if u.f == nil {
		return nil
	}
	err := unlockUpload(u.f, u.path)
	u.f = nil
	return err
}

// Write streams r into the upload at offset, hashing every byte into h while
// it is written (CopyHash). limit < 0: no limit. The returned part must be
// recorded by the caller (other backends) or discarded with DiscardPart when
// the caller's compare-and-swap fails.
func (u *Upload) Write(ctx context.Context, offset int64, r io.Reader, h hash.Hash, limit int64) (Part, error) {
	if u.f != nil {
		u.sealed = false
		w := pieceWriter{&writebackFile{f: u.f, off: offset, flushed: offset}}
		n, err := CopyHash(w, r, h, limit)
		if err != nil {
			return Part{}, fmt.Errorf("objstore: write upload: %w", err)
		}
		return Part{Offset: offset, Size: n}, nil
	}
	p := Part{Offset: offset, Nonce: nonce()}
	key := partKey(u.prefix, p)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := u.s.bucket.NewWriter(wctx, key, u.writerOptions())
	if err != nil {
		return Part{}, fmt.Errorf("objstore: write %s: %w", key, bucketErr(err))
	}
	n, err := CopyHash(partWriter{w}, r, h, limit)
	if err != nil {
		cancel() // abort the object
		_ = w.Close()
		_ = u.s.Delete(context.WithoutCancel(ctx), key)
		return Part{}, fmt.Errorf("objstore: write %s: %w", key, err)
	}
	if err := w.Close(); err != nil {
		return Part{}, fmt.Errorf("objstore: write %s: %w", key, bucketErr(err))
	}
	p.Size = n
	return p, nil
}

// fileWriteSize bounds each write into an upload file. Writes of 1 MiB
// (the copy buffers' size) make the page cache allocate large folios. On
// the 2-core VM we measure on (Linux 6.18, ext4), those come from large
// free blocks the VM has handed back to its host, and writing into them
// ran at 160-360 MB/s, against 2.7-3.8 GB/s for the same bytes written 32
// or 64 KiB at a time: a large push ran at a third of its speed
// (BenchmarkNewFileWrites).
const fileWriteSize = 64 << 10

// Sync makes the bytes written so far durable: on the file backend the
// upload file is fsync'd (elsewhere each part is an object of its own,
// durable once written). A caller that records how much an upload holds
// before it commits the blob syncs first: after a crash the record must
// not promise bytes the file lost, or the next chunk would be written
// past a hole and the blob committed under a digest its bytes do not
// have (the hash state is resumed, not recomputed).
func (u *Upload) Sync() error {
	if u.f == nil {
		return nil
	}
	if err := syncFile(u.f); err != nil {
		return fmt.Errorf("objstore: sync upload: %w", err)
	}
	return nil
}

// pieceWriter writes to w at most fileWriteSize bytes at a time.
type pieceWriter struct{ w io.Writer }

func (p pieceWriter) Write(b []byte) (int, error) {
	var n int
	for len(b) > 0 {
		m, err := p.w.Write(b[:min(len(b), fileWriteSize)])
		n += m
		if err != nil {
			return n, err
		}
		b = b[m:]
	}
	return n, nil
}

// writebackChunk is how many bytes an upload file takes before their
// writeback to the disk is started. The commit syncs the file; by then
// most of a large blob is on the disk already, written while the rest
// was still arriving, and the sync waits only for the tail.
const writebackChunk = 8 << 20

// writebackFile writes into an upload file from offset off and starts the
// writeback of each writebackChunk written (startWriteback: Linux only;
// elsewhere the commit's sync writes everything).
type writebackFile struct {
	f       *os.File
	off     int64 // where the next write goes
	flushed int64 // writeback started up to here
}

func (w *writebackFile) Write(b []byte) (int, error) {
	n, err := w.f.WriteAt(b, w.off)
	w.off += int64(n)
	if w.off-w.flushed >= writebackChunk {
		startWriteback(w.f, w.flushed, w.off-w.flushed)
		w.flushed = w.off
	}
	return n, err
}

// DiscardPart removes a part that did not make it into the upload state.
func (u *Upload) DiscardPart(ctx context.Context, p Part) error {
	if u.f != nil {
		return nil // bytes past the recorded size are ignored and truncated on commit
	}
	return u.s.Delete(ctx, partKey(u.prefix, p))
}

// Promote moves size bytes of upload data to the blob key dst without
// rehashing them: rename on the file backend, server-side copy of a single
// part elsewhere, a server-side compose of several parts on S3 (composeS3)
// and where the scheme's driver composes (composeOnDriver: GCS), a
// streamed compose of several parts otherwise. On the file
// backend the upload data is gone afterwards; elsewhere the parts remain
// until DeleteUpload (so a failed database commit can be retried).
// ErrNotFound: the upload data is missing.
func (u *Upload) Promote(ctx context.Context, parts []Part, size int64, dst string) error {
	if u.f != nil {
		return u.promoteFile(size, u.s.path(dst))
	}
	var sum int64
	for _, p := range parts {
		if p.Offset != sum {
			return fmt.Errorf("objstore: promote: part at %d, expected %d", p.Offset, sum)
		}
		sum += p.Size
	}
	if sum != size {
		return fmt.Errorf("objstore: promote: parts hold %d bytes, expected %d", sum, size)
	}
	switch {
	case len(parts) == 0: // empty blob
		return u.s.WriteAll(ctx, dst, nil)
	case len(parts) == 1 && size <= maxServerCopy:
		return u.copyPart(ctx, parts[0], dst)
	}
	// Composing reads only the parts, so every transport failure is the store's.
	if done, err := u.composeS3(ctx, parts, dst); done {
		return bucketErr(err)
	}
	if done, err := u.composeOnDriver(ctx, parts, size, dst); done {
		return bucketErr(err)
	}
	return bucketErr(u.compose(ctx, parts, dst))
}

// promoteFile renames the upload file, cut to size, to the blob path to,
// with its metadata: on the file, or in a sidecar renamed first so that
// the blob never appears without it. The blob's directory is made only
// when the rename finds it missing.
//
// The caller commits the blob row right after, and PostgreSQL makes that
// commit durable; the bytes and the rename must be on the disk before it.
// Without the syncs, a crash within the kernel's writeback delay (tens of
// seconds) could leave a committed row over a file that is empty, short
// or still at its upload path: ext4 allocates a new file's blocks late,
// and the rename may reach the journal before them. The file is synced
// before the rename, its new directory after it.
func (u *Upload) promoteFile(size int64, to string) error {
	if !u.sealed || u.sealedSize != size {
		if err := u.Seal(size); err != nil {
			return err
		}
	}
	from := u.path
	var made bool // a directory of to's path
	if u.metaAt == metaInSidecar {
		var err error
		made, err = renameInto(from+attrsSuffix, to+attrsSuffix)
		if errors.Is(err, os.ErrNotExist) {
			// Moved by an earlier Promote of this upload that failed after it.
			err = writeFileAttrs(to, u.meta)
		}
		if err != nil {
			return fmt.Errorf("objstore: promote: attributes: %w", err)
		}
	}
	madeHere, err := renameInto(from, to)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("objstore: promote: %w", ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("objstore: promote: %w", err)
	}
	if err := u.s.syncDirs(filepath.Dir(to), made || madeHere); err != nil {
		return fmt.Errorf("objstore: promote: sync directory: %w", err)
	}
	u.promoted = true
	return nil
}

// Seal readies the file backend's upload for a Promote of size bytes:
// the file cut to size, its metadata staged and everything synced, which
// is all of the promotion but the rename and the sync of its directory.
// The file's fsync is the promotion's longest wait, so a caller that
// holds all the bytes before its transaction's statements seals while
// they run, and the Promote after them only renames. A later Write or
// SetMetadata undoes it. Elsewhere it does nothing: each part is durable
// once written.
func (u *Upload) Seal(size int64) error {
	if u.f == nil {
		return nil
	}
	if err := u.f.Truncate(size); err != nil {
		return fmt.Errorf("objstore: truncate upload: %w", err)
	}
	if err := u.stageMetadata(u.path); err != nil {
		return err
	}
	if err := u.Sync(); err != nil {
		return err
	}
	u.sealed, u.sealedSize = true, size
	return nil
}

// syncFile is fsync(2); a variable so that a test can see which files
// are synced, and when.
var syncFile = (*os.File).Sync

// syncDirs syncs dir, where a blob was renamed to, and, when the rename
// made directories, every directory above it up to the bucket's root:
// each new directory is an entry of its parent.
func (s *Store) syncDirs(dir string, made bool) error {
	for {
		if err := syncPath(dir); err != nil {
			return err
		}
		if !made || len(dir) <= len(s.fileRoot) {
			return nil
		}
		dir = filepath.Dir(dir)
	}
}

// SyncObject makes an object that is already in place durable, on the
// file backend: its file and every directory from its own up to the
// bucket's root. A commit that renamed a blob into place and then failed
// (a directory sync, the database) leaves it there unsynced; the retry
// accepts it and syncs it first. Elsewhere objects are durable once
// written.
func (s *Store) SyncObject(key string) error {
	if !s.IsFile() {
		return nil
	}
	p := s.path(key)
	err := syncPath(p)
	if err == nil {
		err = s.syncDirs(filepath.Dir(p), true)
	}
	if err != nil {
		return fmt.Errorf("objstore: sync %s: %w", key, err)
	}
	return nil
}

// syncPath makes the file at p durable: a file's bytes, a directory's
// entries.
func syncPath(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	defer d.Close()
	return syncFile(d)
}

// renameInto renames from to to, making to's directory when it is
// missing (made). os.ErrNotExist: from is missing.
func renameInto(from, to string) (made bool, err error) {
	err = os.Rename(from, to)
	if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o777); err != nil {
		return false, err
	}
	return true, os.Rename(from, to)
}

// copyPart promotes a single part by a server-side copy. The copy keeps
// the part's attributes, unless the upload has metadata: S3 and GCS copies
// then replace it (BeforeCopy); elsewhere, when the part was written
// before the metadata was known, the object is composed (streamed) again
// with it.
func (u *Upload) copyPart(ctx context.Context, p Part, dst string) error {
	replaced := false
	var opts *blob.CopyOptions
	if u.meta != nil {
		opts = &blob.CopyOptions{BeforeCopy: func(as func(any) bool) error {
			var in *s3.CopyObjectInput
			if as(&in) {
				in.Metadata = u.meta
				in.MetadataDirective = s3types.MetadataDirectiveReplace
				in.ContentType = aws.String(contentType)
				replaced = true
			}
			if d := u.s.driver; d != nil && d.ReplaceOnCopy(as, contentType, u.meta) {
				replaced = true
			}
			return nil
		}}
	}
	if err := u.s.bucket.Copy(ctx, dst, partKey(u.prefix, p), opts); err != nil {
		return wrapErr("copy to", dst, err)
	}
	if u.meta == nil || replaced {
		return nil
	}
	attrs, err := u.s.bucket.Attributes(ctx, dst)
	if err != nil {
		return wrapErr("attributes of", dst, err)
	}
	for k, v := range u.meta {
		if attrs.Metadata[k] != v {
			return u.compose(ctx, []Part{p}, dst)
		}
	}
	return nil
}

// attrsSuffix ends the name of gocloud fileblob's metadata sidecar.
const attrsSuffix = ".attrs"

// writeFileAttrs writes the sidecar in which gocloud fileblob keeps an
// object's attributes, <path>.attrs, before the data file is renamed
// into place. fileblob reads it for Attributes and removes it with the
// object.
func writeFileAttrs(path string, meta map[string]string) error {
	b, err := json.Marshal(map[string]any{"user.content_type": contentType, "user.metadata": meta})
	if err != nil {
		return fmt.Errorf("objstore: promote: attributes: %w", err)
	}
	err = writeSynced(path+attrsSuffix, b)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(path), 0o777); err == nil {
			err = writeSynced(path+attrsSuffix, b)
		}
	}
	if err != nil {
		return fmt.Errorf("objstore: promote: attributes: %w", err)
	}
	return nil
}

// writeSynced writes b to a new file at path and syncs it, as the blob
// file it goes with is synced (promoteFile).
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// maxServerCopy is the largest single-request server-side copy (S3
// CopyObject); larger single parts are composed by streaming.
const maxServerCopy = 5 << 30

// compose streams the parts, in order, into one new object.
func (u *Upload) compose(ctx context.Context, parts []Part, dst string) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := u.s.bucket.NewWriter(wctx, dst, u.writerOptions())
	if err != nil {
		return fmt.Errorf("objstore: compose %s: %w", dst, err)
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	fail := func(err error) error {
		cancel()
		_ = w.Close()
		return err
	}
	for _, p := range parts {
		key := partKey(u.prefix, p)
		r, err := u.s.bucket.NewReader(ctx, key, nil)
		if err != nil {
			return fail(wrapErr("compose: open", key, err))
		}
		n, err := io.CopyBuffer(w, r, *bp)
		r.Close()
		if err != nil {
			return fail(fmt.Errorf("objstore: compose %s: %w", dst, err))
		}
		if n != p.Size {
			return fail(fmt.Errorf("objstore: compose %s: part %s holds %d bytes, expected %d", dst, key, n, p.Size))
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("objstore: compose %s: %w", dst, err)
	}
	return nil
}

// Remove removes what is left of the upload's temporary data after a
// successful commit: nothing once the file backend renamed the upload
// file into place, the upload's parts elsewhere (DeleteUpload).
func (u *Upload) Remove(ctx context.Context) error {
	if u.promoted {
		return nil
	}
	return u.s.deleteUpload(ctx, u.prefix)
}

// DeleteUpload removes all temporary data of an upload; missing data counts
// as deleted. It does not take the file lock: a writer that still holds the
// old file notices at its compare-and-swap that the session is gone.
func (s *Store) DeleteUpload(ctx context.Context, namespaceID, uploadID uuid.UUID) error {
	return s.deleteUpload(ctx, UploadKey(namespaceID, uploadID))
}

// deleteUpload is DeleteUpload of the upload at prefix (UploadKey).
func (s *Store) deleteUpload(ctx context.Context, prefix string) error {
	if s.IsFile() {
		for _, p := range []string{s.path(prefix), s.path(prefix) + attrsSuffix} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("objstore: delete upload: %w", err)
			}
		}
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix + "/"})
	for {
		obj, err := it.Next(gctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			_ = g.Wait()
			return fmt.Errorf("objstore: list upload parts: %w", bucketErr(err))
		}
		key := obj.Key
		g.Go(func() error { return s.Delete(gctx, key) })
	}
	return g.Wait()
}

func nonce() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return binary.BigEndian.Uint64(b[:])
}

// String formats a part for diagnostics.
func (p Part) String() string {
	return strconv.FormatInt(p.Offset, 10) + "+" + strconv.FormatInt(p.Size, 10)
}

// markUploads writes, once per namespace and process, an empty directory
// marker object at the namespace's uploads prefix. S3 gateways over a POSIX
// file system (versitygw's posix backend, which the tests run) remove the
// directories a delete leaves empty, and a part written under the same
// prefix at that moment fails (409 ExistingObjectIsDirectory); they keep a
// directory that was written as an object. Elsewhere the marker is an
// ordinary empty object that nothing lists (upload parts are listed under
// their upload's own prefix). It is written on S3 only, the protocol such
// gateways speak, and is best effort: one attempt, bounded by
// uploadMarkTimeout, whose failure (an outage) only leaves the race open,
// so that starting an upload never waits on storage for long.
func (s *Store) markUploads(ctx context.Context, namespaceID uuid.UUID) {
	if _, tried := s.uploadMarks.LoadOrStore(namespaceID, struct{}{}); tried {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), uploadMarkTimeout)
	defer cancel()
	_ = s.bucket.WriteAll(ctx, namespaceID.String()+"/uploads/", nil, nil)
}

const uploadMarkTimeout = 2 * time.Second

// composeOnDriver composes several parts into dst on the server through
// the scheme's driver; done is false when there is none (or the streamed
// compose is forced): the caller streams.
func (u *Upload) composeOnDriver(ctx context.Context, parts []Part, size int64, dst string) (done bool, err error) {
	d := u.s.driver
	if d == nil || u.s.streamCompose.Load() || len(parts) < 2 {
		return false, nil
	}
	srcs := make([]string, len(parts))
	for i, p := range parts {
		srcs[i] = partKey(u.prefix, p)
	}
	err = d.Compose(ctx, u.s.bucket, u.s.url, driver.Compose{
		Sources: srcs, Dst: dst, Size: size, Temp: u.prefix + "/compose",
		ContentType: contentType, Metadata: u.meta,
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return true, err
}
