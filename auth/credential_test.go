package auth

import (
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseAuthorization(t *testing.T) {
	t.Parallel()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	ok := []struct {
		name, header           string
		scheme, user, password string
	}{
		{"bearer", "Bearer arp_tok", "bearer", "", "arp_tok"},
		{"bearer lower case", "bearer arp_tok", "bearer", "", "arp_tok"},
		{"bearer extra spaces", "Bearer    arp_tok  ", "bearer", "", "arp_tok"},
		{"basic", "Basic " + b64("ci:arp_tok"), "basic", "ci", "arp_tok"},
		{"basic upper case", "BASIC " + b64("ci:arp_tok"), "basic", "ci", "arp_tok"},
		{"basic any user", "Basic " + b64("anything at all:arp_tok"), "basic", "anything at all", "arp_tok"},
		{"basic empty user", "Basic " + b64(":arp_tok"), "basic", "", "arp_tok"},
		{"basic colon in password", "Basic " + b64("u:a:b"), "basic", "u", "a:b"},
		{"basic space in password", "Basic " + b64("u:an admin token"), "basic", "u", "an admin token"},
		{"basic unpadded", "Basic " + base64.RawStdEncoding.EncodeToString([]byte("u:arp_t")), "basic", "u", "arp_t"},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			cred, err := ParseAuthorization(c.header)
			if err != nil {
				t.Fatalf("ParseAuthorization(%q): %v", c.header, err)
			}
			if cred.Scheme != c.scheme || cred.Username != c.user || cred.Secret != c.password {
				t.Fatalf("got %+v", cred)
			}
		})
	}
	bad := []struct{ name, header string }{
		{"empty", ""},
		{"blank", "   "},
		{"scheme only bearer", "Bearer"},
		{"scheme only bearer space", "Bearer "},
		{"scheme only basic", "Basic"},
		{"bearer with space inside", "Bearer arp_a arp_b"},
		{"basic not base64", "Basic !!!notbase64"},
		{"basic no colon", "Basic " + b64("arp_tok")},
		{"basic token as user, empty password", "Basic " + b64("arp_tok:")},
		{"basic empty", "Basic " + b64(":")},
		{"wrong scheme digest", `Digest username="u"`},
		{"wrong scheme token", "Token arp_tok"},
		{"bare token", "arp_tok"},
		{"too long", "Bearer " + strings.Repeat("a", 9000)},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			cred, err := ParseAuthorization(c.header)
			if !errors.Is(err, ErrUnauthenticated) || cred != nil {
				t.Fatalf("ParseAuthorization(%q) = %+v, %v: want ErrUnauthenticated", c.header, cred, err)
			}
			if HTTPStatus(err) != 401 {
				t.Fatalf("status %d", HTTPStatus(err))
			}
			if strings.Contains(err.Error(), "arp_tok") {
				t.Fatalf("the message repeats the credential: %q", err)
			}
		})
	}
}

func TestCredentialFromRequest(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/", nil)
	if cred, err := CredentialFromRequest(r); cred != nil || err != nil {
		t.Fatalf("no header: %+v %v", cred, err)
	}
	r.Header.Set("Authorization", "Bearer x")
	if cred, err := CredentialFromRequest(r); err != nil || cred.Secret != "x" {
		t.Fatalf("one header: %+v %v", cred, err)
	}
	r.Header.Add("Authorization", "Bearer y")
	if _, err := CredentialFromRequest(r); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("two headers: %v", err)
	}
	r.Header.Del("Authorization")
	r.Header["Authorization"] = []string{""}
	if _, err := CredentialFromRequest(r); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("empty header: %v", err)
	}
}
