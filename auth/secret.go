package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"math/big"
	"strings"

	"github.com/google/uuid"
)

// Access-token secrets look like
//
//	arp_<namespace id: 22 base62><random: 43 base62><checksum: 6 base62>
//
// 75 characters in all. The random part is 32 bytes from crypto/rand (256
// bits), so a fast hash is the right storage: the database keeps only
// SHA-256 of the whole string, and the request path costs one SHA-256, no
// bcrypt-style work factor. The namespace id in clear text lets the lookup
// name the partition (access_tokens is partitioned by namespace_id) and
// lets a token be used outside its own namespace (INTERNAL repositories).
// It is not a secret: knowing it does not help guess the random part. The
// CRC-32 checksum lets a typo or a truncated paste be refused without a
// database round trip, and lets secret scanners recognise leaked tokens
// (the same idea as GitHub's ghp_ tokens).
const (
	// SecretPrefix starts every access-token secret.
	SecretPrefix = "arp_"
	nsChars      = 22 // base62 of 16 bytes
	randomChars  = 43 // base62 of 32 bytes
	sumChars     = 6  // base62 of a CRC-32
	// SecretLength is the length of every access-token secret.
	SecretLength = len(SecretPrefix) + nsChars + randomChars + sumChars
)

const base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var big62 = big.NewInt(62)

// base62 encodes b as a big-endian number in exactly width digits.
func base62(b []byte, width int) string {
	n := new(big.Int).SetBytes(b)
	out := make([]byte, width)
	mod := new(big.Int)
	for i := width - 1; i >= 0; i-- {
		n.DivMod(n, big62, mod)
		out[i] = base62Alphabet[mod.Int64()]
	}
	if n.Sign() != 0 {
		panic("auth: base62 width too small")
	}
	return string(out)
}

// unbase62 decodes digits into exactly size bytes; false when a digit is
// not base62 or the number does not fit.
func unbase62(s string, size int) ([]byte, bool) {
	n := new(big.Int)
	d := new(big.Int)
	for i := 0; i < len(s); i++ {
		v := strings.IndexByte(base62Alphabet, s[i])
		if v < 0 {
			return nil, false
		}
		n.Mul(n, big62)
		n.Add(n, d.SetInt64(int64(v)))
	}
	if n.BitLen() > size*8 {
		return nil, false
	}
	return n.FillBytes(make([]byte, size)), true
}

func checksum(body string) string {
	var b [4]byte
	sum := crc32.ChecksumIEEE([]byte(body))
	b[0], b[1], b[2], b[3] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	return base62(b[:], sumChars)
}

// NewSecret mints a new access-token secret for a namespace. It is shown
// to the user once; only HashSecret(secret) is stored.
func NewSecret(namespaceID uuid.UUID) (string, error) {
	var random [32]byte
	if _, err := rand.Read(random[:]); err != nil {
		return "", fmt.Errorf("auth: read random bytes: %w", err)
	}
	return secretFrom(namespaceID, random), nil
}

func secretFrom(namespaceID uuid.UUID, random [32]byte) string {
	body := SecretPrefix + base62(namespaceID[:], nsChars) + base62(random[:], randomChars)
	return body + checksum(body)
}

// ParseSecret checks the shape of an access-token secret (prefix, length,
// alphabet, checksum) and returns the namespace id it names. It does not
// tell whether the token exists: that takes the database.
func ParseSecret(secret string) (namespaceID uuid.UUID, ok bool) {
	if len(secret) != SecretLength || !strings.HasPrefix(secret, SecretPrefix) {
		return uuid.Nil, false
	}
	body, sum := secret[:SecretLength-sumChars], secret[SecretLength-sumChars:]
	if checksum(body) != sum {
		return uuid.Nil, false
	}
	rest := body[len(SecretPrefix):]
	// The random part is not decoded: its alphabet is enough, the
	// checksum catches typos.
	for i := nsChars; i < len(rest); i++ {
		if strings.IndexByte(base62Alphabet, rest[i]) < 0 {
			return uuid.Nil, false
		}
	}
	b, ok := unbase62(rest[:nsChars], 16)
	if !ok {
		return uuid.Nil, false
	}
	id, err := uuid.FromBytes(b)
	if err != nil || id.Version() != 7 {
		return uuid.Nil, false
	}
	return id, true
}

// HashSecret is what access_tokens.token_sha256 holds for a secret.
func HashSecret(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// hintRandomChars is how many random characters SecretHint shows.
const hintRandomChars = 4

// SecretHint is the start of a secret that lists may show to tell tokens
// apart: the prefix, the namespace part and 4 of the 43 random characters
// (about 24 of 256 bits). A person can match it against the secret they
// keep; it does not help anyone guess the rest.
func SecretHint(secret string) string {
	n := len(SecretPrefix) + nsChars + hintRandomChars
	if len(secret) < n {
		return ""
	}
	return secret[:n]
}

// SecretNamespacePrefix is the public start of every secret of a
// namespace ("arp_" + its id): what token listings show for tokens minted
// before SecretHint was kept.
func SecretNamespacePrefix(namespaceID uuid.UUID) string {
	return SecretPrefix + base62(namespaceID[:], nsChars)
}
