package maven

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/blobsql"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Server-generated maven-metadata.xml.
//
// The client's GET-merge-PUT of maven-metadata.xml loses versions when two
// deploys race, and a re-deploy of an old release makes the client write a
// wrong <release>. So the server never stores the client's document: the
// stored metadata file is rendered from the stored rows (versions for the
// package level, timestamped files for a SNAPSHOT version level) by a
// deterministic function, and refreshed after every change of those rows
// and whenever a client uploads its document.
//
// A refresh renders from a snapshot of the rows without locks, stores the
// bytes as a blob (deduplicated), then in one transaction locks the
// package row (the lock every writer of the package takes), renders again
// and installs the new file only if both renderings agree; otherwise the
// rows changed meanwhile and it starts over. Every change of the rows is
// followed by a refresh that starts after the change committed, so the
// last refresh to install a document installs one that includes every
// committed change: concurrent deploys of different versions never lose
// one.

const refreshAttempts = 8

// activeVersions lists the active versions of a package and the
// creation time of the newest.
func activeVersions(ctx context.Context, q db.Queryer, nsID, pkgID uuid.UUID) ([]string, time.Time, error) {
	rows, err := q.Query(ctx, `
		SELECT version, created_at FROM maven_versions
		WHERE namespace_id = $1 AND maven_package_id = $2 AND soft_deleted_at IS NULL`, nsID, pkgID)
	if err != nil {
		return nil, time.Time{}, db.MapErr(fmt.Errorf("store: maven versions: %w", err))
	}
	defer rows.Close()
	var (
		out    []string
		newest time.Time
	)
	for rows.Next() {
		var (
			v string
			c time.Time
		)
		if err := rows.Scan(&v, &c); err != nil {
			return nil, time.Time{}, fmt.Errorf("store: maven versions: %w", err)
		}
		out = append(out, v)
		if c.After(newest) {
			newest = c
		}
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, db.MapErr(fmt.Errorf("store: maven versions: %w", err))
	}
	return out, newest, nil
}

// renderPackageMetadata renders a package's metadata from its active
// versions; nil when it has none.
func renderPackageMetadata(ctx context.Context, q db.Queryer, nsID, pkgID uuid.UUID, groupID, artifactID string) ([]byte, error) {
	versions, newest, err := activeVersions(ctx, q, nsID, pkgID)
	if err != nil || len(versions) == 0 {
		return nil, err
	}
	return packageMetadata(groupID, artifactID, versions, newest), nil
}

// renderSnapshotMetadata renders a SNAPSHOT version's metadata from
// its files; nil when it holds no timestamped file.
func renderSnapshotMetadata(ctx context.Context, q db.Queryer, nsID, versionID uuid.UUID, groupID, artifactID, version string) ([]byte, error) {
	if !mavenlayout.IsSnapshotVersion(version) {
		return nil, nil
	}
	names, err := versionFileNames(ctx, q, nsID, versionID)
	if err != nil {
		return nil, err
	}
	return snapshotMetadata(groupID, artifactID, version, names), nil
}

// metadataScope names one metadata document: the package's
// (versionID nil) or a SNAPSHOT version's.
type metadataScope struct {
	pkgID      uuid.UUID
	versionID  *uuid.UUID
	groupID    string
	artifactID string
	version    string
}

func (m metadataScope) render(ctx context.Context, q db.Queryer, nsID uuid.UUID) ([]byte, error) {
	if m.versionID == nil {
		return renderPackageMetadata(ctx, q, nsID, m.pkgID, m.groupID, m.artifactID)
	}
	return renderSnapshotMetadata(ctx, q, nsID, *m.versionID, m.groupID, m.artifactID, m.version)
}

// storedFile is the part of a maven_files row a writer replaces.
type storedFile struct {
	id           uuid.UUID
	sha256       [32]byte
	attachmentID int64
	size         int64
}

// current returns the active metadata row of the scope (nil if none);
// lock is "" or "FOR UPDATE OF f".
func (m metadataScope) current(ctx context.Context, q db.Queryer, nsID uuid.UUID, lock string) (*storedFile, error) {
	where := `f.maven_package_id = $2 AND f.maven_version_id IS NULL`
	arg := m.pkgID
	if m.versionID != nil {
		where, arg = `f.maven_version_id = $2`, *m.versionID
	}
	return currentFile(ctx, q, nsID, where, arg, mavenlayout.MetadataFile, lock)
}

func currentFile(ctx context.Context, q db.Queryer, nsID uuid.UUID, where string, arg uuid.UUID, name, lock string) (*storedFile, error) {
	var (
		f   storedFile
		sha []byte
	)
	// The size comes from blob_storage_blobs_by_namespace, partitioned by
	// namespace_id like maven_files, so both prune to one partition when
	// planned (blob_storage_blobs, partitioned by sha256, could only be
	// pruned at run time here).
	err := q.QueryRow(ctx, `
		SELECT f.id, f.blob_sha256, f.blob_storage_attachment_id, bn.size
		FROM maven_files f
		JOIN blob_storage_blobs_by_namespace bn ON bn.namespace_id = $1 AND bn.sha256 = f.blob_sha256
		WHERE f.namespace_id = $1 AND `+where+` AND f.file_name = $3 AND f.soft_deleted_at IS NULL `+lock,
		nsID, arg, name).Scan(&f.id, &sha, &f.attachmentID, &f.size)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.MapErr(fmt.Errorf("store: maven file %s: %w", name, err))
	}
	f.sha256 = [32]byte(sha)
	return &f, nil
}

// lockPackage takes the package-row lock every writer of a package
// takes first; false when the package is no longer active.
func lockPackage(ctx context.Context, tx pgx.Tx, nsID, pkgID uuid.UUID) (bool, error) {
	var one int
	err := tx.QueryRow(ctx, `
		SELECT 1 FROM maven_packages
		WHERE namespace_id = $1 AND id = $2 AND soft_deleted_at IS NULL
		FOR NO KEY UPDATE`, nsID, pkgID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, db.MapErr(fmt.Errorf("store: lock maven package: %w", err))
	}
	return true, nil
}

// refreshMetadata brings the stored metadata document of the scope in
// line with the rows (see the comment at the top of this file). It
// reports whether a document was created where none was before.
func (s *Store) refreshMetadata(ctx context.Context, t *Target, m metadataScope) (created bool, err error) {
	for range refreshAttempts {
		content, err := m.render(ctx, s.pool, t.NamespaceID)
		if err != nil {
			return false, err
		}
		cur, err := m.current(ctx, s.pool, t.NamespaceID, "")
		if err != nil {
			return false, err
		}
		want := sha256.Sum256(content)
		if (content == nil && cur == nil) || (content != nil && cur != nil && cur.sha256 == want) {
			return false, nil
		}
		if content != nil {
			if _, err := s.core.PutBlob(ctx, t.UploadRef(uuid.Nil), bytes.NewReader(content),
				store.Expected{SHA256: want, Size: int64(len(content))}); err != nil {
				return false, err
			}
		}
		done := false
		err = s.core.WithTx(ctx, func(tx pgx.Tx) error {
			created, done = false, false
			ok, err := lockPackage(ctx, tx, t.NamespaceID, m.pkgID)
			if err != nil || !ok {
				done = !ok // package gone: nothing to describe any more
				return err
			}
			again, err := m.render(ctx, tx, t.NamespaceID)
			if err != nil {
				return err
			}
			if !bytes.Equal(again, content) {
				return nil // the rows changed: render again
			}
			cur, err := m.current(ctx, tx, t.NamespaceID, "FOR UPDATE OF f")
			if err != nil {
				return err
			}
			done = true
			switch {
			case content == nil:
				return s.removeFile(ctx, tx, t, m.versionID, cur)
			case cur != nil && cur.sha256 == want:
				return nil
			}
			created = cur == nil
			_, err = s.installFile(ctx, tx, t, m.pkgID, m.versionID, mavenlayout.MetadataFile,
				newHashes().sumOf(content), cur)
			return err
		})
		if err != nil {
			return false, err
		}
		if done {
			return created, nil
		}
	}
	return false, errs.Wrap(store.CodeRetryable, errRefreshContended, "temporarily unavailable, retry: maven-metadata.xml of %s:%s", m.groupID, m.artifactID)
}

// errRefreshContended: a refresh gave up because the rows kept
// changing under it. Every one of those changes is followed by its own
// refresh, and the last of them meets no further change, so a writer
// whose change is already committed may ignore this error: the document
// will include its change.
var errRefreshContended = errors.New("the rows kept changing during the refresh")

// refreshAfterWrite is refreshMetadata for a writer whose change is
// committed: contention is not its failure (see errRefreshContended).
func (s *Store) refreshAfterWrite(ctx context.Context, t *Target, m metadataScope) (bool, error) {
	created, err := s.refreshMetadata(ctx, t, m)
	if errors.Is(err, errRefreshContended) {
		return false, nil
	}
	return created, err
}

// removeFile deletes a file row and its attachment (same
// transaction, package row locked by the caller).
func (s *Store) removeFile(ctx context.Context, tx pgx.Tx, t *Target, versionID *uuid.UUID, cur *storedFile) error {
	if cur == nil {
		return nil
	}
	if _, err := blobsql.Lock(ctx, tx, t.NamespaceID, blobsql.SortedDigests([][32]byte{cur.sha256})); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM maven_files WHERE namespace_id = $1 AND id = $2`, t.NamespaceID, cur.id); err != nil {
		return db.MapErr(fmt.Errorf("store: delete maven file: %w", err))
	}
	if _, err := s.core.Detach(ctx, tx, t.NamespaceID, []store.Attachment{{ID: cur.attachmentID, SHA256: cur.sha256}}); err != nil {
		return err
	}
	return addVersionSize(ctx, tx, t.NamespaceID, versionID, -cur.size)
}

// installFile inserts a file row with its own attachment of the blob
// sums.SHA256 (which must exist), replacing cur (row deleted, attachment
// detached) when not nil, and keeps the version's size_bytes exact. The
// caller holds the package-row lock. Blob rows are locked in ascending
// digest order before Attach and Detach.
func (s *Store) installFile(ctx context.Context, tx pgx.Tx, t *Target, pkgID uuid.UUID, versionID *uuid.UUID,
	name string, sums fileSums, cur *storedFile) (uuid.UUID, error) {
	digests := [][32]byte{sums.SHA256}
	if cur != nil {
		digests = append(digests, cur.sha256)
	}
	if _, err := blobsql.Lock(ctx, tx, t.NamespaceID, blobsql.SortedDigests(digests)); err != nil {
		return uuid.Nil, err
	}
	if cur != nil {
		if _, err := tx.Exec(ctx, `DELETE FROM maven_files WHERE namespace_id = $1 AND id = $2`, t.NamespaceID, cur.id); err != nil {
			return uuid.Nil, db.MapErr(fmt.Errorf("store: replace maven file: %w", err))
		}
		if _, err := s.core.Detach(ctx, tx, t.NamespaceID, []store.Attachment{{ID: cur.attachmentID, SHA256: cur.sha256}}); err != nil {
			return uuid.Nil, err
		}
	}
	att, err := s.core.Attach(ctx, tx, t.NamespaceID, [][32]byte{sums.SHA256})
	if err != nil {
		return uuid.Nil, err
	}
	id := db.NewID()
	if _, err := tx.Exec(ctx, `
		INSERT INTO maven_files (id, namespace_id, maven_package_id, maven_version_id, file_name,
		                         blob_storage_attachment_id, blob_sha256, sha1, md5, sha512)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		id, t.NamespaceID, pkgID, versionID, name, att[0].ID, sums.SHA256[:], sums.SHA1[:], sums.MD5[:], sums.SHA512[:]); err != nil {
		return uuid.Nil, db.MapErr(fmt.Errorf("store: insert maven file %s: %w", name, err))
	}
	delta := sums.Size
	if cur != nil {
		delta -= cur.size
	}
	return id, addVersionSize(ctx, tx, t.NamespaceID, versionID, delta)
}

// addVersionSize keeps maven_versions.size_bytes (the sum of the
// sizes of the version's active files) exact in the writing transaction.
// docs/schema.md (Buffered counters) lists it among the buffered
// counters; here the version row, already serialized behind the
// package-row lock, is updated in place instead, so no delta is written
// for it.
func addVersionSize(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, versionID *uuid.UUID, delta int64) error {
	if versionID == nil || delta == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE maven_versions SET size_bytes = size_bytes + $3 WHERE namespace_id = $1 AND id = $2`,
		nsID, *versionID, delta); err != nil {
		return db.MapErr(fmt.Errorf("store: maven version size: %w", err))
	}
	return nil
}

// fileSums are the digests of a file, computed while its bytes stream in.
type fileSums struct {
	Size   int64
	MD5    [16]byte
	SHA1   [20]byte
	SHA256 [32]byte
	SHA512 [64]byte
}

// checksums returns the digests as the file's Checksums.
func (m fileSums) checksums() Checksums {
	md := m.MD5
	return Checksums{MD5: &md, SHA1: m.SHA1, SHA256: m.SHA256, SHA512: m.SHA512}
}

// hashes is the writer a file's bytes are teed into: md5, sha1,
// sha256 and sha512 in one pass.
type hashes struct {
	n                         int64
	md5, sha1, sha256, sha512 interface {
		io.Writer
		Sum([]byte) []byte
	}
}

func newHashes() *hashes {
	return &hashes{md5: md5.New(), sha1: sha1.New(), sha256: sha256.New(), sha512: sha512.New()}
}

func (h *hashes) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	_, _ = h.md5.Write(p)
	_, _ = h.sha1.Write(p)
	_, _ = h.sha256.Write(p)
	_, _ = h.sha512.Write(p)
	return len(p), nil
}

func (h *hashes) sums() fileSums {
	s := fileSums{Size: h.n}
	h.md5.Sum(s.MD5[:0])
	h.sha1.Sum(s.SHA1[:0])
	h.sha256.Sum(s.SHA256[:0])
	h.sha512.Sum(s.SHA512[:0])
	return s
}

func (h *hashes) sumOf(p []byte) fileSums {
	_, _ = h.Write(p)
	return h.sums()
}
