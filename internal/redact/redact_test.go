package redact

import (
	"bytes"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"testing"
)

const testAccessToken = "arp_01J9ZK3V8W6Q0T5N2M4B7X1C3D5F7H9KaBcDeFgHiJkLmNoPqRsTuVwXyZ0123"

func TestPath(t *testing.T) {
	Secret("admin-secret-for-redact-tests")
	cases := []struct{ in, want string }{
		{"/npm/acme/js/-/user/token/" + testAccessToken, "/npm/acme/js/-/user/token/" + Mask},
		{"/npm/acme/js/-/user/token/admin-secret-for-redact-tests", "/npm/acme/js/-/user/token/" + Mask},
		{"/npm/acme/js/-/user/token/not-a-known-secret", "/npm/acme/js/-/user/token/" + Mask},
		{"/npm/acme/js/-/npm/v1/tokens/token/0192f3a4-0000-7000-8000-000000000000", "/npm/acme/js/-/npm/v1/tokens/token/" + Mask},
		{"/npm/acme/js/-/npm/v1/tokens", "/npm/acme/js/-/npm/v1/tokens"},
		{"/npm/acme/js/" + testAccessToken, "/npm/acme/js/" + Mask},
		{"/npm/acme/js/x-admin-secret-for-redact-tests-y", "/npm/acme/js/x-" + Mask + "-y"},
		{"/npm/acme/js/x-admin-secret-for-redact-tests-y", "/npm/acme/js/x-" + Mask + "-y"},
		{"/v2/acme/app/manifests/sha256:abc", "/v2/acme/app/manifests/sha256:abc"},
		{"/npm/acme/js/@scope%2flib", "/npm/acme/js/@scope%2flib"},
		{"/npm/acme/js/lib/-/lib-1.0.0.tgz", "/npm/acme/js/lib/-/lib-1.0.0.tgz"},
	}
	for _, c := range cases {
		if got := Path(c.in); got != c.want {
			t.Errorf("Path(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestQueryAndURL(t *testing.T) {
	u, _ := url.Parse("/v2/token?service=artifact-registry&scope=repository:acme/app:pull&_authToken=s3cr3t&password=hunter2&PASSWORD=x&text=" + testAccessToken)
	got := URL(u)
	for _, secret := range []string{"s3cr3t", "hunter2", "=x", testAccessToken} {
		if strings.Contains(got, secret) {
			t.Errorf("URL kept %q: %s", secret, got)
		}
	}
	if !strings.Contains(got, "scope=repository:acme/app:pull") || !strings.Contains(got, "service=artifact-registry") {
		t.Errorf("URL dropped harmless parameters: %s", got)
	}
	if got := Query(""); got != "" {
		t.Errorf("empty query: %q", got)
	}
}

func TestText(t *testing.T) {
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl"
	for _, in := range []string{
		"Authorization: Bearer " + jwt,
		"token " + testAccessToken + " refused",
		"//registry/npm/acme/js/:_authToken=npm_abcdef",
		`{"password":"hunter2"}`,
		"GET https://user:hunter2@legacy.example/v2/",
		"Authorization: Basic dXNlcjpodW50ZXIy",
		"redirect to http://s3.internal/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=5d672d79c15b13162d9279b0855cfba6",
		"get https://gcs.internal/b/k?X-Goog-Credential=signer%40p.iam&X-Goog-Signature=5d672d79c15b13162d9279b0855cfba6 failed",
		// No b in it: the header pattern used to be skipped for text without one.
		"Authorization: Digest 5d672d79c15c13162d9279c0855cfca6",
		"PASSWORD=hunter2",
		// Case folding reaches letters outside ASCII (s to long s).
		"paſsword=hunter2",
	} {
		got := Text(in)
		for _, secret := range []string{jwt, testAccessToken, "npm_abcdef", "hunter2", "dXNlcjpodW50ZXIy", "5d672d79c15b13162d9279b0855cfba6", "5d672d79c15c13162d9279c0855cfca6", "AKIDEXAMPLE", "signer%40p.iam"} {
			if strings.Contains(got, secret) {
				t.Errorf("Text(%q) = %q keeps a secret", in, got)
			}
		}
	}
	for _, keep := range []string{"store: npm version unknown: a@1.0.0", "sha256:0123abcd", "npm token list", "basic validation failed", "a bearer token is required",
		"/v2/acme/images/app/blobs/sha256:0a4d55a8d778e5022fab701977c5d840bbc486d00a4d55a8d778e5022fab7019"} {
		if got := Text(keep); got != keep {
			t.Errorf("Text(%q) = %q", keep, got)
		}
	}
	Secret("short") // too short to register: ordinary words must survive
	if got := Text("a short word"); got != "a short word" {
		t.Errorf("a short secret masked text: %q", got)
	}
}

func TestHandler(t *testing.T) {
	Secret("handler-admin-token-0123456789")
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewJSONHandler(&buf, nil))).With("token_in_with", testAccessToken)
	log.Info("logout of "+testAccessToken,
		"path", "/npm/acme/js/-/user/token/handler-admin-token-0123456789",
		"url", "/x?password=hunter2",
		"err", errors.New("refused: Bearer handler-admin-token-0123456789"),
		slog.Group("req", "path", "/npm/acme/js/-/npm/v1/tokens/token/secret-id"),
		"list", []string{testAccessToken},
		"n", 3)
	out := buf.String()
	for _, secret := range []string{testAccessToken, "handler-admin-token-0123456789", "hunter2", "secret-id"} {
		if strings.Contains(out, secret) {
			t.Errorf("log kept %q: %s", secret, out)
		}
	}
	if !strings.Contains(out, `"n":3`) {
		t.Errorf("non-string attribute lost: %s", out)
	}
}

// BenchmarkURL is the request log's redaction of typical paths: a
// manifest by tag, a blob by digest, an npm tarball.
func BenchmarkURL(b *testing.B) {
	for _, c := range []struct{ name, path string }{
		{"manifest-by-tag", "/v2/acme/images/app/manifests/v1.2.3"},
		{"blob-by-digest", "/v2/acme/images/app/blobs/sha256:0a4d55a8d778e5022fab701977c5d840bbc486d00a4d55a8d778e5022fab7019"},
		{"npm-tarball", "/acme/js/left-pad/-/left-pad-1.3.0.tgz"},
	} {
		u, err := url.Parse(c.path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				_ = URL(u)
			}
		})
	}
}
