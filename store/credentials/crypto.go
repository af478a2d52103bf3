package credentials

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// keySize: AES-256 for namespace keys and data keys.
const keySize = 32

// formatV1 is the first byte of every ciphertext this package writes
// (column values and wrapped data keys): AES-256-GCM with a random 96-bit
// nonce after it and the 16-byte tag at the end. A later scheme gets a new
// byte; the schema does not change.
const formatV1 byte = 1

// Overhead is what encryption adds to a plaintext: format byte, nonce, tag.
const Overhead = 1 + 12 + 16

// Domain separators of the associated data and of the root-wrapped
// namespace key: a value made for one purpose never authenticates as
// another.
const (
	columnDomain = "artifact-registry/credential-column/v1\x00"
	dekDomain    = "artifact-registry/data-key/v1\x00"
	kekDomain    = "artifact-registry/namespace-key/v1\x00"
)

func randomKey() (k [keySize]byte, err error) {
	if _, err = rand.Read(k[:]); err != nil {
		err = fmt.Errorf("credentials: random key: %w", err)
	}
	return k, err
}

func gcm(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	// A random nonce per message: a data key seals a handful of values, a
	// namespace key one data key per row and rotation, far below the
	// 2^32 messages a random 96-bit nonce allows per key.
	return cipher.NewGCMWithRandomNonce(block)
}

func encrypt(key, plaintext, aad []byte) ([]byte, error) {
	a, err := gcm(key)
	if err != nil {
		return nil, err
	}
	return a.Seal([]byte{formatV1}, nil, plaintext, aad), nil
}

var errFormat = errors.New("credentials: unknown ciphertext format")

func decrypt(key, ct, aad []byte) ([]byte, error) {
	if len(ct) < Overhead || ct[0] != formatV1 {
		return nil, errFormat
	}
	a, err := gcm(key)
	if err != nil {
		return nil, err
	}
	return a.Open(nil, nil, ct[1:], aad)
}

// rowAAD is the identity of a row: table, namespace and row id. Table
// names hold no NUL, so the encoding is unambiguous.
func rowAAD(domain string, row Row) []byte {
	b := make([]byte, 0, len(domain)+len(row.Table.Name)+1+32+40)
	b = append(b, domain...)
	b = append(b, row.Table.Name...)
	b = append(b, 0)
	b = append(b, row.NamespaceID[:]...)
	return append(b, row.ID[:]...)
}

// columnAAD binds a column value to its row and column: swapping the user
// name and the password of a row fails as well as copying either to
// another row.
func columnAAD(row Row, column string) []byte {
	return append(rowAAD(columnDomain, row), column...)
}

// dekAAD binds a wrapped data key to its row and to the namespace key
// that wraps it.
func dekAAD(row Row, keyID uuid.UUID) []byte {
	return append(rowAAD(dekDomain, row), keyID[:]...)
}

// Root keepers (gocloud.dev/secrets) take no associated data, so the
// plaintext they wrap carries the namespace and key id, checked on unwrap:
// a wrapped_key copied to another namespace or key row does not open.
func kekPlaintext(ns, id uuid.UUID, kek *[keySize]byte) []byte {
	b := make([]byte, 0, len(kekDomain)+32+keySize)
	b = append(b, kekDomain...)
	b = append(b, ns[:]...)
	b = append(b, id[:]...)
	return append(b, kek[:]...)
}

// wrapKEK wraps a namespace key with a root key.
func wrapKEK(ctx context.Context, root *RootKey, ns, id uuid.UUID, kek *[keySize]byte) ([]byte, error) {
	pt := kekPlaintext(ns, id, kek)
	defer clear(pt)
	w, err := root.Keeper.Encrypt(ctx, pt)
	if err != nil {
		return nil, fmt.Errorf("credentials: wrap namespace key with root key %s: %w", root.URI, err)
	}
	return w, nil
}

// unwrapKEK unwraps a namespace key with the root key named by uri.
func (k *Keyring) unwrapKEK(ctx context.Context, uri string, ns, id uuid.UUID, wrapped []byte) ([keySize]byte, error) {
	var kek [keySize]byte
	root, ok := k.roots[uri]
	if !ok {
		return kek, errs.New(CodeRootKeyUnknown, "the key of namespace %s is wrapped under root key %s, which this instance was not given: "+
			"add it to --previous-root-key-urls (ARTIFACT_REGISTRY_PREVIOUS_ROOT_KEY_URLS)", ns, uri)
	}
	pt, err := root.Keeper.Decrypt(ctx, wrapped)
	if err != nil {
		return kek, errs.Wrap(CodeUndecryptable, err, "namespace key %s of namespace %s does not unwrap with root key %s", id, ns, uri)
	}
	defer clear(pt)
	want := kekPlaintext(ns, id, &kek)
	if len(pt) != len(want) || !bytes.Equal(pt[:len(want)-keySize], want[:len(want)-keySize]) {
		return kek, errs.New(CodeUndecryptable, "namespace key %s of namespace %s unwraps to a key of another row", id, ns)
	}
	copy(kek[:], pt[len(want)-keySize:])
	return kek, nil
}
