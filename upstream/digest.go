package upstream

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"
)

// Algorithm names a digest algorithm as OCI writes it before the colon.
type Algorithm string

// The algorithms a fill can verify: sha256 (OCI blobs and manifests),
// sha512 (npm's dist.integrity), sha1 (npm's shasum, Maven's .sha1).
const (
	SHA256 Algorithm = "sha256"
	SHA512 Algorithm = "sha512"
	SHA1   Algorithm = "sha1"
)

func (a Algorithm) new() (hash.Hash, int, bool) {
	switch a {
	case SHA256:
		return sha256.New(), sha256.Size, true
	case SHA512:
		return sha512.New(), sha512.Size, true
	case SHA1:
		return sha1.New(), sha1.Size, true
	}
	return nil, 0, false
}

// Digest is an expected or computed digest.
type Digest struct {
	Algorithm Algorithm
	Sum       []byte
}

// String is the OCI form, "sha256:<hex>".
func (d Digest) String() string { return string(d.Algorithm) + ":" + hex.EncodeToString(d.Sum) }

// Equal reports whether two digests have the same algorithm and sum.
func (d Digest) Equal(o Digest) bool { return d.Algorithm == o.Algorithm && bytes.Equal(d.Sum, o.Sum) }

func (d Digest) valid() error {
	_, size, ok := d.Algorithm.new()
	if !ok {
		return fmt.Errorf("unsupported digest algorithm %q", d.Algorithm)
	}
	if len(d.Sum) != size {
		return fmt.Errorf("%s digest of %d bytes, want %d", d.Algorithm, len(d.Sum), size)
	}
	return nil
}

// ParseDigest parses "<algorithm>:<lowercase hex>" (OCI's form, which
// Maven's and npm's hex checksums fit once prefixed).
func ParseDigest(s string) (Digest, error) {
	alg, hx, ok := strings.Cut(s, ":")
	if !ok {
		return Digest{}, fmt.Errorf("digest %q has no algorithm", s)
	}
	if strings.ToLower(hx) != hx {
		return Digest{}, fmt.Errorf("digest hex must be lowercase")
	}
	sum, err := hex.DecodeString(hx)
	if err != nil {
		return Digest{}, fmt.Errorf("digest hex: %w", err)
	}
	d := Digest{Algorithm: Algorithm(alg), Sum: sum}
	return d, d.valid()
}

// ParseIntegrity parses a Subresource Integrity value as npm writes
// dist.integrity ("sha512-<base64>"), keeping the strongest supported
// entry when several are listed.
func ParseIntegrity(s string) (Digest, error) {
	var best Digest
	rank := map[Algorithm]int{SHA1: 1, SHA256: 2, SHA512: 3}
	for _, f := range strings.Fields(s) {
		alg, b64, ok := strings.Cut(f, "-")
		if !ok {
			continue
		}
		if i := strings.IndexByte(b64, '?'); i >= 0 {
			b64 = b64[:i] // SRI options
		}
		a := Algorithm(alg)
		if rank[a] == 0 || rank[a] <= rank[best.Algorithm] {
			continue
		}
		sum, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return Digest{}, fmt.Errorf("integrity %s: %w", alg, err)
		}
		d := Digest{Algorithm: a, Sum: sum}
		if err := d.valid(); err != nil {
			return Digest{}, err
		}
		best = d
	}
	if best.Algorithm == "" {
		return Digest{}, fmt.Errorf("integrity value has no supported digest")
	}
	return best, nil
}
