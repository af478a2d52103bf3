package auth

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestSecretFormat(t *testing.T) {
	t.Parallel()
	ns := uuid.Must(uuid.NewV7())
	seen := map[string]bool{}
	for range 200 {
		s, err := NewSecret(ns)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != SecretLength || !strings.HasPrefix(s, SecretPrefix) {
			t.Fatalf("secret %q: want %d characters starting %q", s, SecretLength, SecretPrefix)
		}
		for _, c := range s[len(SecretPrefix):] {
			if !strings.ContainsRune(base62Alphabet, c) {
				t.Fatalf("secret %q has %q outside base62", s, c)
			}
		}
		got, ok := ParseSecret(s)
		if !ok || got != ns {
			t.Fatalf("ParseSecret(%q) = %v %v, want %v", s, got, ok, ns)
		}
		if seen[s] {
			t.Fatalf("secret %q minted twice", s)
		}
		seen[s] = true
		if HashSecret(s) != sha256.Sum256([]byte(s)) {
			t.Fatal("HashSecret is not SHA-256 of the secret")
		}
	}
}

func TestSecretExtremes(t *testing.T) {
	t.Parallel()
	// The widest values still fit the fixed widths.
	var max32 [32]byte
	for i := range max32 {
		max32[i] = 0xff
	}
	ns := uuid.Must(uuid.NewV7())
	for _, random := range [][32]byte{{}, max32} {
		s := secretFrom(ns, random)
		if len(s) != SecretLength {
			t.Fatalf("secret %q has length %d", s, len(s))
		}
		if got, ok := ParseSecret(s); !ok || got != ns {
			t.Fatalf("ParseSecret(%q) = %v %v", s, got, ok)
		}
	}
}

func TestParseSecretRefuses(t *testing.T) {
	t.Parallel()
	ns := uuid.Must(uuid.NewV7())
	good := secretFrom(ns, [32]byte{1, 2, 3})
	flip := func(i int) string {
		b := []byte(good)
		if b[i] == 'a' {
			b[i] = 'b'
		} else {
			b[i] = 'a'
		}
		return string(b)
	}
	v4 := uuid.New()
	cases := map[string]string{
		"empty":              "",
		"admin-looking":      "not-a-token",
		"wrong prefix":       "arx_" + good[4:],
		"truncated":          good[:len(good)-1],
		"extended":           good + "0",
		"typo in namespace":  flip(len(SecretPrefix) + 3),
		"typo in random":     flip(len(SecretPrefix) + nsChars + 10),
		"typo in checksum":   flip(SecretLength - 1),
		"not base62":         good[:10] + "-" + good[11:],
		"uuid v4 namespace":  secretFrom(v4, [32]byte{1}),
		"namespace overflow": overflowSecret(),
	}
	for name, s := range cases {
		if id, ok := ParseSecret(s); ok {
			t.Errorf("%s: ParseSecret(%q) accepted (%v)", name, s, id)
		}
	}
}

// overflowSecret has a namespace part above 2^128 and a valid checksum.
func overflowSecret() string {
	body := SecretPrefix + strings.Repeat("z", nsChars) + strings.Repeat("0", randomChars)
	return body + checksum(body)
}
