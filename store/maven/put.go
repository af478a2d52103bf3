package maven

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Put describes a version file upload.
type Put struct {
	FileRef
	// Size is the announced length (Content-Length); < 0: not announced.
	Size int64
	// Expect holds checksums the client announced for the bytes (lowercase
	// hex by algorithm, e.g. from X-Checksum-Sha1 headers). A mismatch
	// refuses the upload before anything is stored.
	Expect map[mavenlayout.ChecksumAlgorithm]string
	// AllowRedeploy lets a release file be replaced by different bytes
	// (releases are immutable by default).
	AllowRedeploy bool
}

// PutResult reports a stored version file.
type PutResult struct {
	File File
	// Created: no file of that name existed (201). False: the same bytes
	// were already stored (idempotent re-deploy) or, with Replaced, a
	// SNAPSHOT (or redeployable release) file got new bytes.
	Created  bool
	Replaced bool
	// VersionCreated: this upload created the version.
	VersionCreated bool
}

// ensurePackage returns the id of the active package, creating it on
// first upload, and holds its row lock (FOR NO KEY UPDATE: writers of one
// package queue here; foreign-key checks of new versions and files are not
// blocked).
func ensurePackage(ctx context.Context, tx pgx.Tx, t *Target, groupID, artifactID string) (uuid.UUID, bool, error) {
	id := db.NewID()
	var got uuid.UUID
	err := tx.QueryRow(ctx, `
		INSERT INTO maven_packages (id, namespace_id, maven_repository_id, group_id, artifact_id)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (namespace_id, maven_repository_id, group_id, artifact_id) WHERE soft_deleted_at IS NULL DO NOTHING
		RETURNING id`, id, t.NamespaceID, t.MavenRepositoryID, groupID, artifactID).Scan(&got)
	if err == nil {
		return got, true, nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `
			SELECT id FROM maven_packages
			WHERE namespace_id = $1 AND maven_repository_id = $2 AND group_id = $3 AND artifact_id = $4
			  AND soft_deleted_at IS NULL
			FOR NO KEY UPDATE`, t.NamespaceID, t.MavenRepositoryID, groupID, artifactID).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return uuid.Nil, false, db.ErrRace // soft-deleted between the two statements
		}
	}
	if err != nil {
		return uuid.Nil, false, db.MapErr(fmt.Errorf("store: maven package %s:%s: %w", groupID, artifactID, err))
	}
	return got, false, nil
}

// ensureVersion returns the id of the active version, creating it on
// its first file (the caller holds the package lock).
func ensureVersion(ctx context.Context, tx pgx.Tx, nsID, pkgID uuid.UUID, version string) (uuid.UUID, bool, error) {
	id := db.NewID()
	var got uuid.UUID
	err := tx.QueryRow(ctx, `
		INSERT INTO maven_versions (id, namespace_id, maven_package_id, version)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (namespace_id, maven_package_id, version) WHERE soft_deleted_at IS NULL DO NOTHING
		RETURNING id`, id, nsID, pkgID, version).Scan(&got)
	if err == nil {
		return got, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, db.MapErr(fmt.Errorf("store: maven version %s: %w", version, err))
	}
	err = tx.QueryRow(ctx, `
		SELECT id FROM maven_versions
		WHERE namespace_id = $1 AND maven_package_id = $2 AND version = $3 AND soft_deleted_at IS NULL`,
		nsID, pkgID, version).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, db.ErrRace
	}
	if err != nil {
		return uuid.Nil, false, db.MapErr(fmt.Errorf("store: maven version %s: %w", version, err))
	}
	return got, false, nil
}

// PutFile stores a version file (jar, pom, sources, classifier, any
// extension; not maven-metadata.xml and not a checksum sidecar).
//
// The bytes are read once: they stream into an upload session while md5,
// sha1, sha256 and sha512 are computed on the way (sha512 and sha1 are
// NOT NULL in maven_files), and are committed as a deduplicated blob. Then
// one transaction creates the package and version on first use (package
// row locked), and inserts the file row with its attachment. A release
// file that exists with other bytes is refused (CodeReleaseExists)
// unless AllowRedeploy; identical bytes are an idempotent success. A
// SNAPSHOT version's files may be replaced. Nothing is written when the
// bytes do not match in.Expect or in.Size.
//
// A new version refreshes the package's maven-metadata.xml.
func (s *Store) PutFile(ctx context.Context, t *Target, in Put, r io.Reader) (*PutResult, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if in.FileName == mavenlayout.MetadataFile {
		return nil, errs.New(CodeInvalid, "invalid Maven coordinates: %s is uploaded with PutMetadata", mavenlayout.MetadataFile)
	}
	if _, _, ok := mavenlayout.SplitChecksumName(in.FileName); ok {
		return nil, errs.New(CodeInvalid, "invalid Maven coordinates: %s is a checksum: verify it with VerifyChecksum", in.FileName)
	}
	for alg, want := range in.Expect {
		if _, err := ParseChecksumBody(alg, []byte(want)); err != nil {
			return nil, err
		}
	}
	snapshot := mavenlayout.IsSnapshotVersion(in.Version)
	var stored *File
	if !snapshot && !in.AllowRedeploy {
		// A release file that is already stored with another size or
		// another announced checksum is a conflict: refuse it before its
		// bytes are read (the client then never sends them after
		// "Expect: 100-continue").
		cur, err := s.File(ctx, t, in.FileRef)
		switch {
		case err == nil:
			if in.Size >= 0 && in.Size != cur.Blob.Size {
				return nil, errs.New(CodeReleaseExists, "release file already exists with different content: %s (stored with %d bytes, upload has %d)", in.FileRef, cur.Blob.Size, in.Size)
			}
			for alg, want := range in.Expect {
				if have, ok := cur.Checksums.Hex(alg); ok && have != want {
					return nil, errs.New(CodeReleaseExists, "release file already exists with different content: %s (stored %s %s, upload announces %s)", in.FileRef, alg, have, want)
				}
			}
			stored = cur
		case !store.HasCode(err, CodeNotFound):
			return nil, err
		}
	}
	// For a stored release file the bytes decide before they are
	// committed: the same bytes need no new blob, other bytes are refused
	// without leaving a blob behind.
	sums, same, err := s.streamBlob(ctx, t, in, r, func(sums fileSums) (bool, error) {
		switch {
		case stored == nil:
			return false, nil
		case sums.SHA256 == stored.Checksums.SHA256:
			return true, nil
		}
		return false, errs.New(CodeReleaseExists, "release file already exists with different content: %s", in.FileRef)
	})
	if err != nil {
		return nil, err
	}
	if same {
		return &PutResult{File: *stored}, nil
	}
	var res *PutResult
	err = db.Retry(ctx, s.core.WithTx, func(tx pgx.Tx) error {
		res = &PutResult{}
		pkgID, _, err := ensurePackage(ctx, tx, t, in.GroupID, in.ArtifactID)
		if err != nil {
			return err
		}
		versionID, created, err := ensureVersion(ctx, tx, t.NamespaceID, pkgID, in.Version)
		if err != nil {
			return err
		}
		res.VersionCreated = created
		// The repository's and the namespace's counters are recorded by
		// the accounting triggers of the version and file rows
		// (docs/schema.md, Storage accounting).
		cur, err := currentFile(ctx, tx, t.NamespaceID, `f.maven_version_id = $2`, versionID, in.FileName, "FOR UPDATE OF f")
		if err != nil {
			return err
		}
		res.File = File{PackageID: pkgID, VersionID: &versionID, FileName: in.FileName, Checksums: sums.checksums()}
		if cur != nil && cur.sha256 == sums.SHA256 {
			res.File.ID = cur.id
			return nil // the same bytes again: idempotent
		}
		if cur != nil && !snapshot && !in.AllowRedeploy {
			return errs.New(CodeReleaseExists, "release file already exists with different content: %s", in.FileRef)
		}
		res.Created, res.Replaced = cur == nil, cur != nil
		res.File.ID, err = s.installFile(ctx, tx, t, pkgID, &versionID, in.FileName, sums, cur)
		return err
	})
	if err != nil {
		return nil, err
	}
	blob, err := s.core.StatBlob(ctx, t.NamespaceID, sums.SHA256)
	if err != nil {
		return nil, err
	}
	res.File.Blob = *blob
	if res.VersionCreated {
		if _, err := s.refreshAfterWrite(ctx, t, metadataScope{
			pkgID: res.File.PackageID, groupID: in.GroupID, artifactID: in.ArtifactID,
		}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// streamBlob reads the body once into an upload session, hashing it
// on the way, checks it against the announced size and checksums and
// against decide, and commits it as a blob. decide may refuse the bytes
// (an error) or report that they need not be stored (skip: the same bytes
// are stored already). Unless committed, the session is cancelled:
// nothing stays behind.
func (s *Store) streamBlob(ctx context.Context, t *Target, in Put, r io.Reader,
	decide func(fileSums) (skip bool, err error)) (fileSums, bool, error) {
	u, err := s.core.StartUpload(ctx, t.NamespaceID, t.RepositoryID, store.UploadMonolithic)
	if err != nil {
		return fileSums{}, false, err
	}
	ref := u.Ref()
	cancel := func(err error) error {
		if cerr := s.core.CancelUpload(context.WithoutCancel(ctx), ref); cerr != nil && !store.HasCode(cerr, store.CodeUploadUnknown) {
			return errors.Join(err, cerr)
		}
		return err
	}
	h := newHashPipe()
	_, err = s.core.AppendUpload(ctx, ref, 0, io.TeeReader(r, h))
	sums := h.sums() // also stops the hashing workers on error
	if err != nil {
		return fileSums{}, false, cancel(err)
	}
	if in.Size >= 0 && sums.Size != in.Size {
		return fileSums{}, false, cancel(errs.New(store.CodeSizeMismatch, "size mismatch: received %d bytes, announced %d", sums.Size, in.Size))
	}
	got := sums.checksums()
	for alg, want := range in.Expect {
		have, _ := got.Hex(alg)
		if subtle.ConstantTimeCompare([]byte(have), []byte(want)) != 1 {
			return fileSums{}, false, cancel(errs.New(CodeChecksumMismatch, "checksum mismatch: %s of %s is %s, the client announced %s", alg, in.FileName, have, want))
		}
	}
	skip, err := decide(sums)
	if err != nil || skip {
		return sums, skip, cancel(err)
	}
	if _, err := s.core.CommitUpload(ctx, ref, nil, store.Expected{SHA256: sums.SHA256, Size: sums.Size}); err != nil {
		return fileSums{}, false, err // CommitUpload deletes the session on a verification failure
	}
	return sums, false, nil
}

// VerifyChecksum answers the upload of a checksum sidecar of a stored
// file: nothing is stored (sidecars are served from the file's columns);
// a value that differs from the stored file's checksum is refused with
// CodeChecksumMismatch, and CodeNothingToDescribe when the file
// does not exist. Sidecars of maven-metadata.xml describe the client's
// document, which the server replaces by its own: they are accepted
// without comparison.
func (s *Store) VerifyChecksum(ctx context.Context, t *Target, ref FileRef, alg mavenlayout.ChecksumAlgorithm, value string) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	want, err := ParseChecksumBody(alg, []byte(value))
	if err != nil {
		return err
	}
	if ref.FileName == mavenlayout.MetadataFile {
		return nil
	}
	f, err := s.File(ctx, t, ref)
	if store.HasCode(err, CodeNotFound) {
		return errs.New(CodeNothingToDescribe, "nothing stored for this metadata or checksum: %s is not stored (upload the file before its checksum)", ref)
	}
	if err != nil {
		return err
	}
	have, ok := f.Checksums.Hex(alg)
	if !ok {
		return errs.New(CodeNothingToDescribe, "nothing stored for this metadata or checksum: %s has no stored %s", ref, alg)
	}
	if have != want {
		return errs.New(CodeChecksumMismatch, "checksum mismatch: %s of %s is %s, the upload says %s", alg, ref, have, want)
	}
	return nil
}

// PutMetadata answers the upload of a maven-metadata.xml (package
// level, ref.Version == "", or SNAPSHOT version level). The client's
// document is parsed and checked against the path (CodeInvalid), then
// discarded: the server refreshes its own document from the stored rows,
// which keeps every committed version even when deploys race. It reports
// whether the server document was created by this call.
// CodeNothingToDescribe when the package or version holds nothing.
// Group-level plugin metadata (plugins, no artifactId) is accepted and
// ignored.
func (s *Store) PutMetadata(ctx context.Context, t *Target, ref FileRef, body io.Reader) (bool, error) {
	ref.FileName = mavenlayout.MetadataFile
	if err := ref.Validate(); err != nil {
		return false, err
	}
	doc, err := ParseMetadata(body)
	if err != nil {
		return false, err
	}
	if ref.Version == "" && doc.IsGroupLevel() {
		return false, nil
	}
	switch {
	case doc.ArtifactID != ref.ArtifactID:
		return false, errs.New(CodeInvalid, "invalid Maven coordinates: the document describes artifactId %q, the path %q", doc.ArtifactID, ref.ArtifactID)
	case doc.GroupID != "" && doc.GroupID != ref.GroupID:
		return false, errs.New(CodeInvalid, "invalid Maven coordinates: the document describes groupId %q, the path %q", doc.GroupID, ref.GroupID)
	case ref.Version != "" && doc.Version != "" && doc.Version != ref.Version:
		return false, errs.New(CodeInvalid, "invalid Maven coordinates: the document describes version %q, the path %q", doc.Version, ref.Version)
	}
	if doc.Versioning != nil {
		for _, v := range doc.Versioning.Versions {
			if err := ValidateVersion(v); err != nil {
				return false, err
			}
		}
	}
	m := metadataScope{groupID: ref.GroupID, artifactID: ref.ArtifactID, version: ref.Version}
	if ref.Version == "" {
		m.pkgID, err = s.findPackage(ctx, t, ref.GroupID, ref.ArtifactID)
	} else {
		if !mavenlayout.IsSnapshotVersion(ref.Version) {
			return false, errs.New(CodeInvalid, "invalid Maven coordinates: only SNAPSHOT versions have a version-level %s", mavenlayout.MetadataFile)
		}
		var versionID uuid.UUID
		m.pkgID, versionID, err = s.findVersion(ctx, t, ref.GroupID, ref.ArtifactID, ref.Version)
		m.versionID = &versionID
	}
	if store.HasCode(err, CodeNotFound) {
		return false, errs.New(CodeNothingToDescribe, "nothing stored for this metadata or checksum: %s (upload the artifacts before the metadata)", err)
	}
	if err != nil {
		return false, err
	}
	return s.refreshAfterWrite(ctx, t, m)
}

// hashPipe computes the four digests of a stream off the reader's
// goroutine: each chunk written is copied into one of a few pooled
// buffers and hashed by two workers (md5 and sha1, sha256 and sha512), so
// hashing overlaps with reading the request and writing the upload.
// Close waits for the workers; sums is valid after it.
type hashPipe struct {
	h     *hashes
	free  chan *hashChunk
	work  [2]chan *hashChunk
	done  sync.WaitGroup
	n     int64
	close sync.Once
}

type hashChunk struct {
	buf  []byte
	n    int
	refs atomic.Int32
}

const (
	hashChunkSize = 1 << 20
	hashBuffers   = 4
)

func newHashPipe() *hashPipe {
	p := &hashPipe{h: newHashes(), free: make(chan *hashChunk, hashBuffers)}
	for range hashBuffers {
		p.free <- &hashChunk{buf: make([]byte, hashChunkSize)}
	}
	workers := [2][2]interface{ Write([]byte) (int, error) }{{p.h.md5, p.h.sha1}, {p.h.sha256, p.h.sha512}}
	for i := range p.work {
		p.work[i] = make(chan *hashChunk, hashBuffers)
		p.done.Add(1)
		go func() {
			defer p.done.Done()
			for c := range p.work[i] {
				for _, w := range workers[i] {
					_, _ = w.Write(c.buf[:c.n])
				}
				if c.refs.Add(-1) == 0 {
					p.free <- c
				}
			}
		}()
	}
	return p
}

func (p *hashPipe) Write(b []byte) (int, error) {
	total := len(b)
	for len(b) > 0 {
		c := <-p.free
		c.n = copy(c.buf, b)
		b = b[c.n:]
		p.n += int64(c.n)
		c.refs.Store(2)
		p.work[0] <- c
		p.work[1] <- c
	}
	return total, nil
}

// Close stops the workers once every chunk is hashed.
func (p *hashPipe) Close() {
	p.close.Do(func() {
		close(p.work[0])
		close(p.work[1])
		p.done.Wait()
	})
}

// sums closes the pipe and returns the digests.
func (p *hashPipe) sums() fileSums {
	p.Close()
	p.h.n = p.n
	return p.h.sums()
}
