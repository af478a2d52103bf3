package store

import "github.com/artifact-registry/artifact-registry/store/internal/errs"

// Error is the store's one error type: every expected failure of a store
// operation is an *Error with a Code. Protocols switch on CodeOf(err) and
// answer in their own wire format; GraphQL maps KindOf(err) to
// extensions.code. Anything else is an internal error.
type Error = errs.Error

// Code names one failure; its Kind is its class.
type Code = errs.Code

// Kind is the class of a Code.
type Kind = errs.Kind

// The kinds.
const (
	KindNotFound      = errs.KindNotFound
	KindAlreadyExists = errs.KindAlreadyExists
	KindInvalidInput  = errs.KindInvalidInput
	KindConflict      = errs.KindConflict
	KindForbidden     = errs.KindForbidden
	KindTooLarge      = errs.KindTooLarge
	KindUnavailable   = errs.KindUnavailable
)

// Codes of the core: the generic one per kind, and the blob layer's.
var (
	CodeNotFound      = errs.NotFound
	CodeAlreadyExists = errs.AlreadyExists
	CodeInvalidInput  = errs.InvalidInput
	CodeConflict      = errs.Conflict
	CodeForbidden     = errs.Forbidden
	// CodeRetryable: a lock timeout, a deadlock, a serialization failure, a
	// storage check that did not finish within its bound while a lock was
	// held, or a write that kept racing another. Nothing was changed;
	// protocols answer 503 with Retry-After (RetryAfter) and the client
	// retries.
	CodeRetryable = errs.Retryable

	// CodeRangeMismatch: a chunk's offset is not the upload's current size;
	// Error.Size holds the current size.
	CodeRangeMismatch = Code{Name: "RANGE_MISMATCH", Kind: KindConflict}
	// CodeUploadConflict: another writer advanced the upload concurrently
	// (this writer lost the compare-and-swap). The session is now poisoned.
	CodeUploadConflict = Code{Name: "UPLOAD_CONFLICT", Kind: KindConflict}
	// CodeUploadPoisoned: the session saw concurrent writers and accepts
	// nothing more; the client must start a new upload.
	CodeUploadPoisoned = Code{Name: "UPLOAD_POISONED", Kind: KindConflict}
	// CodeUploadUnknown: no such upload session in this namespace and
	// repository (never existed, expired, cancelled, committed or purged).
	CodeUploadUnknown = Code{Name: "UPLOAD_UNKNOWN", Kind: KindNotFound}
	// CodeDigestMismatch: the bytes do not hash to the expected digest.
	CodeDigestMismatch = Code{Name: "DIGEST_MISMATCH", Kind: KindInvalidInput}
	// CodeSizeMismatch: the upload does not have the expected size.
	CodeSizeMismatch = Code{Name: "SIZE_MISMATCH", Kind: KindInvalidInput}
	// CodeTooManyUploads: the repository already holds
	// Options.MaxUploadSessionsPerRepository unexpired upload sessions
	// (every protocol's: they share the table); the message says how many.
	CodeTooManyUploads = Code{Name: "TOO_MANY_UPLOADS", Kind: KindConflict}
	// CodeBlobTooLarge: the upload exceeds Options.MaxBlobSize.
	CodeBlobTooLarge = Code{Name: "BLOB_TOO_LARGE", Kind: KindTooLarge}
	// CodeBlobUnknown: no blob row for (namespace, sha256); Error.Digest
	// names it.
	CodeBlobUnknown = Code{Name: "BLOB_UNKNOWN", Kind: KindNotFound}
	// CodeBlobMustReupload: the blob row exists but a live GC candidate made
	// us check storage and the object is gone; the client must upload the
	// bytes again. Error.Digest names it.
	CodeBlobMustReupload = Code{Name: "BLOB_MUST_REUPLOAD", Kind: KindNotFound}
	// CodeAttachmentUnknown: Detach was given an attachment that does not
	// exist (or the same attachment twice).
	CodeAttachmentUnknown = Code{Name: "ATTACHMENT_UNKNOWN", Kind: KindNotFound}
	// CodeRangeNotSatisfiable: a read range outside the blob.
	CodeRangeNotSatisfiable = Code{Name: "RANGE_NOT_SATISFIABLE", Kind: KindInvalidInput}
)

// CodeOf returns the code of the first *Error in err's chain (the zero Code
// for an internal error).
func CodeOf(err error) Code { return errs.CodeOf(err) }

// KindOf returns the kind of the first *Error in err's chain ("" for an
// internal error).
func KindOf(err error) Kind { return errs.KindOf(err) }

// HasCode reports whether any *Error in err's chain carries code.
func HasCode(err error, code Code) bool { return errs.Has(err, code) }

// AsError returns the first *Error in err's chain.
func AsError(err error) (*Error, bool) { return errs.As(err) }
