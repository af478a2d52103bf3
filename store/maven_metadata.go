package store

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

	"github.com/artifact-registry/artifact-registry/store/enum"
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

const mavenRefreshAttempts = 8

// activeMavenVersions lists the active versions of a package and the
// creation time of the newest.
func activeMavenVersions(ctx context.Context, q db.Queryer, nsID, pkgID uuid.UUID) ([]string, time.Time, error) {
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

// renderMavenPackageMetadata renders a package's metadata from its active
// versions; nil when it has none.
func renderMavenPackageMetadata(ctx context.Context, q db.Queryer, nsID, pkgID uuid.UUID, groupID, artifactID string) ([]byte, error) {
	versions, newest, err := activeMavenVersions(ctx, q, nsID, pkgID)
	if err != nil || len(versions) == 0 {
		return nil, err
	}
	return mavenPackageMetadata(groupID, artifactID, versions, newest), nil
}

// renderMavenSnapshotMetadata renders a SNAPSHOT version's metadata from
// its files; nil when it holds no timestamped file.
func renderMavenSnapshotMetadata(ctx context.Context, q db.Queryer, nsID, versionID uuid.UUID, groupID, artifactID, version string) ([]byte, error) {
	if !IsMavenSnapshotVersion(version) {
		return nil, nil
	}
	names, err := mavenVersionFileNames(ctx, q, nsID, versionID)
	if err != nil {
		return nil, err
	}
	return mavenSnapshotMetadata(groupID, artifactID, version, names), nil
}

// mavenMetadataScope names one metadata document: the package's
// (versionID nil) or a SNAPSHOT version's.
type mavenMetadataScope struct {
	pkgID      uuid.UUID
	versionID  *uuid.UUID
	groupID    string
	artifactID string
	version    string
}

func (m mavenMetadataScope) render(ctx context.Context, q db.Queryer, nsID uuid.UUID) ([]byte, error) {
	if m.versionID == nil {
		return renderMavenPackageMetadata(ctx, q, nsID, m.pkgID, m.groupID, m.artifactID)
	}
	return renderMavenSnapshotMetadata(ctx, q, nsID, *m.versionID, m.groupID, m.artifactID, m.version)
}

// storedMavenFile is the part of a maven_files row a writer replaces.
type storedMavenFile struct {
	id           uuid.UUID
	sha256       [32]byte
	attachmentID int64
	size         int64
}

// current returns the active metadata row of the scope (nil if none);
// lock is "" or "FOR UPDATE OF f".
func (m mavenMetadataScope) current(ctx context.Context, q db.Queryer, nsID uuid.UUID, lock string) (*storedMavenFile, error) {
	where := `f.maven_package_id = $2 AND f.maven_version_id IS NULL`
	arg := m.pkgID
	if m.versionID != nil {
		where, arg = `f.maven_version_id = $2`, *m.versionID
	}
	return currentMavenFile(ctx, q, nsID, where, arg, MavenMetadataFile, lock)
}

func currentMavenFile(ctx context.Context, q db.Queryer, nsID uuid.UUID, where string, arg uuid.UUID, name, lock string) (*storedMavenFile, error) {
	var (
		f   storedMavenFile
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

// lockMavenPackage takes the package-row lock every writer of a package
// takes first; false when the package is no longer active.
func lockMavenPackage(ctx context.Context, tx pgx.Tx, nsID, pkgID uuid.UUID) (bool, error) {
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

// refreshMavenMetadata brings the stored metadata document of the scope in
// line with the rows (see the comment at the top of this file). It
// reports whether a document was created where none was before.
func (s *Store) refreshMavenMetadata(ctx context.Context, t *MavenTarget, m mavenMetadataScope) (created bool, err error) {
	for range mavenRefreshAttempts {
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
			if _, err := s.PutBlob(ctx, t.UploadRef(uuid.Nil), bytes.NewReader(content),
				Expected{SHA256: want, Size: int64(len(content))}); err != nil {
				return false, err
			}
		}
		done := false
		err = s.WithTx(ctx, func(tx pgx.Tx) error {
			created, done = false, false
			ok, err := lockMavenPackage(ctx, tx, t.NamespaceID, m.pkgID)
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
				return s.removeMavenFile(ctx, tx, t, m.versionID, cur)
			case cur != nil && cur.sha256 == want:
				return nil
			}
			created = cur == nil
			_, err = s.installMavenFile(ctx, tx, t, m.pkgID, m.versionID, MavenMetadataFile,
				newMavenHashes().sumOf(content), cur)
			return err
		})
		if err != nil {
			return false, err
		}
		if done {
			return created, nil
		}
	}
	return false, errs.Wrap(CodeRetryable, errMavenRefreshContended, "temporarily unavailable, retry: maven-metadata.xml of %s:%s", m.groupID, m.artifactID)
}

// errMavenRefreshContended: a refresh gave up because the rows kept
// changing under it. Every one of those changes is followed by its own
// refresh, and the last of them meets no further change, so a writer
// whose change is already committed may ignore this error: the document
// will include its change.
var errMavenRefreshContended = errors.New("the rows kept changing during the refresh")

// refreshAfterWrite is refreshMavenMetadata for a writer whose change is
// committed: contention is not its failure (see errMavenRefreshContended).
func (s *Store) refreshAfterWrite(ctx context.Context, t *MavenTarget, m mavenMetadataScope) (bool, error) {
	created, err := s.refreshMavenMetadata(ctx, t, m)
	if errors.Is(err, errMavenRefreshContended) {
		return false, nil
	}
	return created, err
}

// removeMavenFile deletes a file row and its attachment (same
// transaction, package row locked by the caller).
func (s *Store) removeMavenFile(ctx context.Context, tx pgx.Tx, t *MavenTarget, versionID *uuid.UUID, cur *storedMavenFile) error {
	if cur == nil {
		return nil
	}
	if _, err := blobsql.Lock(ctx, tx, t.NamespaceID, blobsql.SortedDigests([][32]byte{cur.sha256})); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM maven_files WHERE namespace_id = $1 AND id = $2`, t.NamespaceID, cur.id); err != nil {
		return db.MapErr(fmt.Errorf("store: delete maven file: %w", err))
	}
	if _, err := s.Detach(ctx, tx, t.NamespaceID, []Attachment{{ID: cur.attachmentID, SHA256: cur.sha256}}); err != nil {
		return err
	}
	if err := insertMavenDeltas(ctx, tx, t.NamespaceID, []mavenDelta{{target: enum.CounterTargetRepository,
		targetID: t.RepositoryID, field: enum.CounterFieldSizeBytes, delta: -cur.size}}); err != nil {
		return err
	}
	return addMavenVersionSize(ctx, tx, t.NamespaceID, versionID, -cur.size)
}

// installMavenFile inserts a file row with its own attachment of the blob
// sums.SHA256 (which must exist), replacing cur (row deleted, attachment
// detached) when not nil, and keeps the version's size_bytes exact. The
// caller holds the package-row lock. Blob rows are locked in ascending
// digest order before Attach and Detach.
func (s *Store) installMavenFile(ctx context.Context, tx pgx.Tx, t *MavenTarget, pkgID uuid.UUID, versionID *uuid.UUID,
	name string, sums mavenSums, cur *storedMavenFile) (uuid.UUID, error) {
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
		if _, err := s.Detach(ctx, tx, t.NamespaceID, []Attachment{{ID: cur.attachmentID, SHA256: cur.sha256}}); err != nil {
			return uuid.Nil, err
		}
	}
	att, err := s.Attach(ctx, tx, t.NamespaceID, [][32]byte{sums.SHA256})
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
	if err := insertMavenDeltas(ctx, tx, t.NamespaceID, []mavenDelta{{target: enum.CounterTargetRepository,
		targetID: t.RepositoryID, field: enum.CounterFieldSizeBytes, delta: delta}}); err != nil {
		return uuid.Nil, err
	}
	return id, addMavenVersionSize(ctx, tx, t.NamespaceID, versionID, delta)
}

// addMavenVersionSize keeps maven_versions.size_bytes (the sum of the
// sizes of the version's active files) exact in the writing transaction.
// ADR-007 buffers this counter; until the counter flusher exists the
// version row, already serialized behind the package-row lock, is updated
// in place.
func addMavenVersionSize(ctx context.Context, tx pgx.Tx, nsID uuid.UUID, versionID *uuid.UUID, delta int64) error {
	if versionID == nil || delta == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE maven_versions SET size_bytes = size_bytes + $3 WHERE namespace_id = $1 AND id = $2`,
		nsID, *versionID, delta); err != nil {
		return db.MapErr(fmt.Errorf("store: maven version size: %w", err))
	}
	return nil
}

// mavenSums are the digests of a file, computed while its bytes stream in.
type mavenSums struct {
	Size   int64
	MD5    [16]byte
	SHA1   [20]byte
	SHA256 [32]byte
	SHA512 [64]byte
}

// hex returns the lowercase hex of an algorithm.
func (m mavenSums) checksums() MavenChecksums {
	md := m.MD5
	return MavenChecksums{MD5: &md, SHA1: m.SHA1, SHA256: m.SHA256, SHA512: m.SHA512}
}

// mavenHashes is the writer a file's bytes are teed into: md5, sha1,
// sha256 and sha512 in one pass.
type mavenHashes struct {
	n                         int64
	md5, sha1, sha256, sha512 interface {
		io.Writer
		Sum([]byte) []byte
	}
}

func newMavenHashes() *mavenHashes {
	return &mavenHashes{md5: md5.New(), sha1: sha1.New(), sha256: sha256.New(), sha512: sha512.New()}
}

func (h *mavenHashes) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	_, _ = h.md5.Write(p)
	_, _ = h.sha1.Write(p)
	_, _ = h.sha256.Write(p)
	_, _ = h.sha512.Write(p)
	return len(p), nil
}

func (h *mavenHashes) sums() mavenSums {
	s := mavenSums{Size: h.n}
	h.md5.Sum(s.MD5[:0])
	h.sha1.Sum(s.SHA1[:0])
	h.sha256.Sum(s.SHA256[:0])
	h.sha512.Sum(s.SHA512[:0])
	return s
}

func (h *mavenHashes) sumOf(p []byte) mavenSums {
	_, _ = h.Write(p)
	return h.sums()
}
