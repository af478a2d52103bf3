package oci

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string // "" = error
		code string
	}{
		{"ns/repo/app", "ns|repo|app", ""},
		{"ns/repo/a/b/c", "ns|repo|a/b/c", ""},
		{"my-ns/re.po/a__b/c-d", "my-ns|re.po|a__b/c-d", ""},
		{"ns/repo", "", codeNameUnknown},
		{"ns", "", codeNameUnknown},
		{"NS/repo/app", "", codeNameInvalid},
		{"ns/repo/app/", "", codeNameInvalid},
		{"ns//app", "", codeNameInvalid},
		{"ns/repo/-app", "", codeNameInvalid},
		{"ns/repo/" + strings.Repeat("a", 256), "", codeNameInvalid},
	} {
		n, err := parseName(tc.in)
		if tc.want == "" {
			if err == nil || err.Code != tc.code {
				t.Errorf("parseName(%q) = %v, %v; want %s", tc.in, n, err, tc.code)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseName(%q): %v", tc.in, err)
			continue
		}
		if got := n.Namespace + "|" + n.Repository + "|" + n.Image; got != tc.want {
			t.Errorf("parseName(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestParseDigestAndReference(t *testing.T) {
	t.Parallel()
	good := "sha256:" + strings.Repeat("ab", 32)
	if d, err := parseDigest(good); err != nil || d.String() != good {
		t.Fatalf("parseDigest(%s) = %v, %v", good, d, err)
	}
	for in, code := range map[string]string{
		"sha256:baddigeststring":                   codeDigestInvalid,
		"sha256:" + strings.Repeat("AB", 32):       codeDigestInvalid,
		"sha256:" + strings.Repeat("a", 63):        codeDigestInvalid,
		"sha512:" + strings.Repeat("ab", 64):       codeUnsupported,
		"blake3:" + strings.Repeat("ab", 32):       codeUnsupported,
		"nonsense":                                 codeDigestInvalid,
		"sha256:" + strings.Repeat("ab", 32) + "/": codeDigestInvalid,
	} {
		if _, err := parseDigest(in); err == nil || err.Code != code || err.Status != http.StatusBadRequest {
			t.Errorf("parseDigest(%q) = %v, want %s", in, err, code)
		}
	}
	if r, err := parseReference("v1.2.3_latest"); err != nil || !r.IsTag {
		t.Errorf("tag reference: %v %v", r, err)
	}
	if _, err := parseReference(strings.Repeat("a", 129)); err == nil {
		t.Error("129-character tag accepted")
	}
	if _, err := parseReference(".hidden"); err == nil {
		t.Error("tag starting with . accepted")
	}
}

// TestRefusalsAsSpecErrors pins the spec's errors for what the leaf
// parsers refuse: status, code, message, detail and headers.
func TestRefusalsAsSpecErrors(t *testing.T) {
	t.Parallel()
	img := `{"schemaVersion":2,"config":{"digest":"sha512:` + strings.Repeat("ab", 64) + `","size":1}}`
	for _, tc := range []struct {
		name string
		got  *apiError
		want apiError
	}{
		{"range", second(parseRange("bytes=10-", 10)), apiError{Status: http.StatusRequestedRangeNotSatisfiable, Code: codeBlobUnknown,
			Message: `range "bytes=10-" cannot be satisfied for a blob of 10 bytes`, Header: http.Header{"Content-Range": {"bytes */10"}}}},
		{"manifest too large", second(parseManifest(mtOCIManifest, make([]byte, maxManifestSize+1))), apiError{Status: http.StatusRequestEntityTooLarge,
			Code: codeSizeInvalid, Message: "manifest is 4194305 bytes; the limit is 4194304 bytes (4 MiB)"}},
		{"manifest type", second(parseManifest("application/x-nope", []byte(`{"schemaVersion":2,"mediaType":"application/x-nope"}`))), apiError{Status: http.StatusUnsupportedMediaType,
			Code: codeManifestInvalid, Message: `unsupported manifest media type "application/x-nope"`}},
		{"manifest", second(parseManifest(mtOCIManifest, []byte("{}"))), apiError{Status: http.StatusBadRequest,
			Code: codeManifestInvalid, Message: "schemaVersion must be 2"}},
		{"manifest digest", second(parseManifest(mtOCIManifest, []byte(img))), apiError{Status: http.StatusBadRequest, Code: codeUnsupported,
			Message: `digest algorithm "sha512" is not supported: this registry stores sha256 digests only`,
			Detail:  map[string]string{"digest": "sha512:" + strings.Repeat("ab", 64)}}},
		{"digest", second(parseDigest("sha256:x")), apiError{Status: http.StatusBadRequest, Code: codeDigestInvalid,
			Message: `invalid sha256 digest "sha256:x": expected 64 lowercase hex characters`, Detail: map[string]string{"digest": "sha256:x"}}},
	} {
		if tc.got == nil || fmt.Sprintf("%#v", *tc.got) != fmt.Sprintf("%#v", tc.want) {
			t.Errorf("%s: got %#v\nwant %#v", tc.name, tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		contentRange  string
		contentLength int64
		want          apiError
	}{
		{"0-9/x", 10, apiError{Status: http.StatusRequestedRangeNotSatisfiable, Code: codeBlobUploadInvalid, Message: `invalid Content-Range "0-9/x"`}},
		{"0-9", 5, apiError{Status: http.StatusBadRequest, Code: codeSizeInvalid, Message: `Content-Range "0-9" does not match Content-Length 5`}},
	} {
		r := httptest.NewRequest(http.MethodPatch, "/upload", nil)
		r.Header.Set("Content-Range", tc.contentRange)
		r.ContentLength = tc.contentLength
		_, err := chunkOffset(r, nil)
		if ae, ok := err.(*apiError); !ok || fmt.Sprintf("%#v", *ae) != fmt.Sprintf("%#v", tc.want) {
			t.Errorf("Content-Range %q: got %#v\nwant %#v", tc.contentRange, err, tc.want)
		}
	}
	r := httptest.NewRequest(http.MethodPatch, "/upload", nil)
	if start, err := chunkOffset(r, func() (int64, error) { return 7, nil }); start != 7 || err != nil {
		t.Errorf("no Content-Range: %d %v, want the current size 7", start, err)
	}
}

func second[T any](_ T, e *apiError) *apiError { return e }

func TestLRU(t *testing.T) {
	t.Parallel()
	c := newLRU[int, string](10, func(s string) int64 { return int64(len(s)) })
	c.put(1, "aaaa")
	c.put(2, "bbbb")
	if _, ok := c.get(1); !ok { // 1 is now the most recent
		t.Fatal("1 missing")
	}
	c.put(3, "cccc") // 12 > 10: evicts 2, the least recent
	if _, ok := c.get(2); ok {
		t.Fatal("2 not evicted")
	}
	if v, ok := c.get(1); !ok || v != "aaaa" {
		t.Fatal("1 evicted")
	}
	c.put(4, "way too large for the cache")
	if _, ok := c.get(4); ok {
		t.Fatal("oversized entry cached")
	}
}
