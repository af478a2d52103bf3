// Package errs is the store's one error type. Every expected failure of a
// store operation (a missing row, a taken name, bad input, a refused state
// change, a busy database) is an *Error with a Code; the protocols and
// GraphQL map codes to their own wire format at their edge. Anything else a
// store operation returns is an internal error (500 in every surface).
//
// The package is internal to store so that only store and its format
// packages construct these errors; everyone else uses the aliases in
// package store.
package errs

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// Kind is the class of a failure: what GraphQL puts in extensions.code and
// what a protocol falls back on for a code it does not know.
type Kind string

// The kinds.
const (
	KindNotFound      Kind = "NOT_FOUND"
	KindAlreadyExists Kind = "ALREADY_EXISTS"
	KindInvalidInput  Kind = "INVALID_INPUT"
	KindConflict      Kind = "CONFLICT"
	KindForbidden     Kind = "FORBIDDEN"
	KindTooLarge      Kind = "TOO_LARGE"
	KindUnavailable   Kind = "UNAVAILABLE"
)

// Code names one failure precisely (a manifest unknown in its image, an
// npm version already published); the protocols answer per code. Codes
// are comparable values, so a switch on CodeOf(err) works.
type Code struct {
	Name string
	Kind Kind
}

func (c Code) String() string { return c.Name }

// Generic codes, one per kind, for failures no protocol tells apart.
var (
	NotFound      = Code{"NOT_FOUND", KindNotFound}
	AlreadyExists = Code{"ALREADY_EXISTS", KindAlreadyExists}
	InvalidInput  = Code{"INVALID_INPUT", KindInvalidInput}
	Conflict      = Code{"CONFLICT", KindConflict}
	Forbidden     = Code{"FORBIDDEN", KindForbidden}
	// Retryable: a lock timeout, a deadlock, a serialization failure, a
	// storage check that did not finish within its bound while a lock was
	// held, or a write that kept racing another. Nothing was changed; the
	// client retries (503 with Retry-After).
	Retryable = Code{"RETRYABLE", KindUnavailable}
)

// Error is an expected failure of a store operation. Message is meant for
// the caller and never contains SQL.
type Error struct {
	Code    Code
	Message string
	// Digest names the blob the failure is about, when there is one.
	Digest *[32]byte
	// Size is the number of bytes an upload holds, for a chunk that did not
	// start there (OCI answers 416 with Range: 0-<Size-1>).
	Size int64
	// Err is the cause, kept for errors.Is/As and logs.
	Err error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Code.Name
	}
	if e.Digest != nil {
		msg += ": sha256:" + hex.EncodeToString(e.Digest[:])
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, &Error{Code: c}) true when any *Error in err's
// chain carries code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// New returns an *Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with a formatted message and a cause.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// WithDigest returns an *Error about one blob.
func WithDigest(code Code, sha [32]byte, format string, args ...any) *Error {
	e := New(code, format, args...)
	e.Digest = &sha
	return e
}

// As returns the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// CodeOf returns the code of the first *Error in err's chain, or the zero
// Code when there is none (an internal error).
func CodeOf(err error) Code {
	if e, ok := As(err); ok {
		return e.Code
	}
	return Code{}
}

// Has reports whether any *Error in err's chain carries code (as errors.Is
// did for the sentinel errors this type replaced: a retryable failure can
// wrap the failure that caused it).
func Has(err error, code Code) bool { return errors.Is(err, &Error{Code: code}) }

// KindOf returns the kind of the first *Error in err's chain ("" when none).
func KindOf(err error) Kind { return CodeOf(err).Kind }
