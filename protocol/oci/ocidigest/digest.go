// Package ocidigest parses the digests of OCI content. It depends on the
// standard library alone, so that the manifest parser built on it is
// fuzzed without compiling the registry's store.
package ocidigest

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// pattern is the general digest grammar (algorithm ":" encoded).
var pattern = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)

// Digest is a sha256 digest, the only algorithm this registry stores
// (raw 32-byte columns, docs/schema.md "Digests, hashes and enums").
type Digest [32]byte

func (d Digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

// Bytes returns the raw 32 bytes as a new slice.
func (d Digest) Bytes() []byte { b := d; return b[:] }

// Error is a refused digest. Unsupported is set for a well-formed digest
// of another algorithm (sha512, blake3, ...): the OCI spec answers it
// with its own error code.
type Error struct {
	// Input is the refused text.
	Input       string
	Unsupported bool
	message     string
}

func (e *Error) Error() string { return e.message }

// Parse parses "sha256:<64 lowercase hex>". A refusal is an *Error.
func Parse(s string) (Digest, error) {
	var d Digest
	invalid := func(format string) (Digest, error) {
		return d, &Error{Input: s, message: fmt.Sprintf(format, s)}
	}
	if !pattern.MatchString(s) {
		return invalid("invalid digest %q")
	}
	algo, enc, _ := strings.Cut(s, ":")
	if algo != "sha256" {
		return d, &Error{Input: s, Unsupported: true,
			message: fmt.Sprintf("digest algorithm %q is not supported: this registry stores sha256 digests only", algo)}
	}
	if len(enc) != 64 || strings.ToLower(enc) != enc {
		return invalid("invalid sha256 digest %q: expected 64 lowercase hex characters")
	}
	if _, err := hex.Decode(d[:], []byte(enc)); err != nil {
		return invalid("invalid sha256 digest %q")
	}
	return d, nil
}
