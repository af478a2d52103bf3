package upstream

import (
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"testing"
)

func TestParseDigest(t *testing.T) {
	body := []byte("hello")
	want := sha256Digest(body)
	d, err := ParseDigest(want.String())
	if err != nil || !d.Equal(want) {
		t.Fatalf("%v %v", d, err)
	}
	s1 := sha1.Sum(body)
	if d, err := ParseDigest("sha1:" + hex.EncodeToString(s1[:])); err != nil || d.Algorithm != SHA1 {
		t.Fatalf("sha1: %v %v", d, err)
	}
	for _, bad := range []string{
		"", "sha256", "md5:" + hex.EncodeToString(make([]byte, 16)), "sha256:abc",
		"sha256:" + hex.EncodeToString(make([]byte, 31)), "SHA256:" + hex.EncodeToString(make([]byte, 32)),
		"sha256:" + "AB" + hex.EncodeToString(make([]byte, 31)),
	} {
		if _, err := ParseDigest(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseIntegrity(t *testing.T) {
	body := []byte("tarball")
	s512 := sha512.Sum512(body)
	s1 := sha1.Sum(body)
	sri512 := "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
	sri1 := "sha1-" + base64.StdEncoding.EncodeToString(s1[:])
	for in, alg := range map[string]Algorithm{
		sri512:                  SHA512,
		sri1 + " " + sri512:     SHA512, // the strongest wins
		sri512 + "?opt " + sri1: SHA512,
		"md5-AAAA " + sri1:      SHA1,
		"  " + sri1 + "\t":      SHA1,
	} {
		d, err := ParseIntegrity(in)
		if err != nil || d.Algorithm != alg {
			t.Fatalf("%q: %v %v", in, d, err)
		}
	}
	if d, _ := ParseIntegrity(sri512); !d.Equal(Digest{Algorithm: SHA512, Sum: s512[:]}) {
		t.Fatal("sum differs")
	}
	for _, bad := range []string{"", "md5-AAAA", "sha512-!!!", "sha512-" + base64.StdEncoding.EncodeToString(s1[:])} {
		if _, err := ParseIntegrity(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
