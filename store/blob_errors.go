package store

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// Typed errors of the blob layer. Protocols test them with errors.Is (and
// errors.As for the detail types) and answer in their own wire format.
var (
	// ErrRangeMismatch: a chunk's offset is not the upload's current size.
	// The chain holds a *RangeMismatchError with the current size.
	ErrRangeMismatch = errors.New("store: chunk offset does not match the upload size")
	// ErrUploadConflict: another writer advanced the upload concurrently (this
	// writer lost the compare-and-swap). The session is now poisoned.
	ErrUploadConflict = errors.New("store: concurrent write to the upload")
	// ErrUploadPoisoned: the session saw concurrent writers (dirty bit) and
	// accepts nothing more; the client must start a new upload.
	ErrUploadPoisoned = errors.New("store: upload poisoned by concurrent writers")
	// ErrUploadUnknown: no such upload session in this namespace and
	// repository (never existed, expired, cancelled, committed or purged).
	ErrUploadUnknown = errors.New("store: upload unknown")
	// ErrDigestMismatch: the bytes do not hash to the expected digest.
	ErrDigestMismatch = errors.New("store: digest mismatch")
	// ErrSizeMismatch: the upload does not have the expected size.
	ErrSizeMismatch = errors.New("store: size mismatch")
	// ErrTooManyUploads: the repository already holds
	// Options.MaxUploadSessionsPerRepository unexpired upload sessions
	// (every protocol's, they share the table); the message says how many.
	ErrTooManyUploads = errors.New("store: too many upload sessions in the repository")
	// ErrBlobTooLarge: the upload exceeds Options.MaxBlobSize.
	ErrBlobTooLarge = errors.New("store: blob too large")
	// ErrBlobUnknown: no blob row for (namespace, sha256). Returned wrapped in
	// a *DigestError naming the digest.
	ErrBlobUnknown = errors.New("store: blob unknown")
	// ErrBlobMustReupload: the blob row exists but a live GC candidate made us
	// check storage and the object is gone; the client must upload the bytes
	// again. Returned wrapped in a *DigestError.
	ErrBlobMustReupload = errors.New("store: blob object missing, upload it again")
	// ErrAttachmentUnknown: Detach was given an attachment that does not
	// exist (or the same attachment twice).
	ErrAttachmentUnknown = errors.New("store: attachment unknown")
	// ErrRangeNotSatisfiable: a read range outside the blob.
	ErrRangeNotSatisfiable = errors.New("store: range not satisfiable")
)

// RangeMismatchError carries the upload's current size (OCI answers 416 with
// Range: 0-<Size-1>).
type RangeMismatchError struct {
	Offset int64 // offset the client sent
	Size   int64 // bytes the upload holds
}

func (e *RangeMismatchError) Error() string {
	return fmt.Sprintf("%v: chunk at %d, upload holds %d bytes", ErrRangeMismatch, e.Offset, e.Size)
}

// Is makes errors.Is(err, ErrRangeMismatch) true.
func (e *RangeMismatchError) Is(target error) bool { return target == ErrRangeMismatch }

// DigestError names the digest an error is about.
type DigestError struct {
	Err    error
	SHA256 [32]byte
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("%v: sha256:%s", e.Err, hex.EncodeToString(e.SHA256[:]))
}

func (e *DigestError) Unwrap() error { return e.Err }

func digestErr(err error, sha [32]byte) error { return &DigestError{Err: err, SHA256: sha} }
