package store

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"

	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// uploadState is what upload_sessions.hash_state holds: the SHA-256 state
// after size_bytes bytes (serialized with encoding.BinaryMarshaler, so any
// replica can continue the upload after a restart) and, on backends without
// append, the parts that hold those bytes. The parts are recorded in the
// same compare-and-swap as the hash state, so the bytes the state describes
// are exactly the bytes the commit composes, whatever a losing concurrent
// writer left behind.
//
// Encoding (version 1):
//
//	byte      version (1)
//	uvarint   length of the hash state, then the state
//	uvarint   number of parts, then per part: uvarint size, 8-byte nonce
//
// Part offsets are the running sum of the sizes; the sum must equal
// size_bytes.
type uploadState struct {
	hash  hash.Hash
	parts []objstore.Part
}

const uploadStateVersion = 1

func newUploadState() *uploadState { return &uploadState{hash: sha256.New()} }

func (st *uploadState) marshal() ([]byte, error) {
	hs, err := st.hash.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("store: marshal hash state: %w", err)
	}
	buf := make([]byte, 0, 1+binary.MaxVarintLen64*2+len(hs)+len(st.parts)*(binary.MaxVarintLen64+8))
	buf = append(buf, uploadStateVersion)
	buf = binary.AppendUvarint(buf, uint64(len(hs)))
	buf = append(buf, hs...)
	buf = binary.AppendUvarint(buf, uint64(len(st.parts)))
	for _, p := range st.parts {
		buf = binary.AppendUvarint(buf, uint64(p.Size))
		buf = binary.BigEndian.AppendUint64(buf, p.Nonce)
	}
	return buf, nil
}

var errBadUploadState = errors.New("store: corrupt upload hash_state")

// unmarshalUploadState restores the state of an upload holding size bytes.
// A NULL state is only valid for an empty upload.
func unmarshalUploadState(b []byte, size int64) (*uploadState, error) {
	st := newUploadState()
	if b == nil {
		if size != 0 {
			return nil, fmt.Errorf("%w: no state for %d bytes", errBadUploadState, size)
		}
		return st, nil
	}
	if len(b) < 1 || b[0] != uploadStateVersion {
		return nil, fmt.Errorf("%w: unknown version", errBadUploadState)
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, errBadUploadState
	}
	if err := st.hash.(encoding.BinaryUnmarshaler).UnmarshalBinary(b[k : k+int(n)]); err != nil {
		return nil, fmt.Errorf("%w: %w", errBadUploadState, err)
	}
	b = b[k+int(n):]
	count, k := binary.Uvarint(b)
	if k <= 0 || count > uint64(len(b)) {
		return nil, errBadUploadState
	}
	b = b[k:]
	var off int64
	if count > 0 {
		st.parts = make([]objstore.Part, 0, count)
	}
	for range count {
		sz, k := binary.Uvarint(b)
		if k <= 0 || len(b) < k+8 || sz > 1<<62 {
			return nil, errBadUploadState
		}
		st.parts = append(st.parts, objstore.Part{Offset: off, Size: int64(sz), Nonce: binary.BigEndian.Uint64(b[k:])})
		off += int64(sz)
		b = b[k+8:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: trailing bytes", errBadUploadState)
	}
	if count > 0 && off != size {
		return nil, fmt.Errorf("%w: parts hold %d bytes, session %d", errBadUploadState, off, size)
	}
	return st, nil
}
