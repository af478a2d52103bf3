package oci

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
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

func TestParseRange(t *testing.T) {
	t.Parallel()
	const size = 2048
	for _, tc := range []struct {
		h          string
		start, len int64
		full       bool
		status     int
	}{
		{h: "", full: true},
		{h: "bytes=500-1499", start: 500, len: 1000},
		{h: "bytes=500-", start: 500, len: 1548},
		{h: "bytes=-500", start: 1548, len: 500},
		{h: "bytes=-5000", start: 0, len: 2048},
		{h: "bytes=2000-5000", start: 2000, len: 48},
		{h: "bytes=500-0", status: 416},
		{h: "bytes=5000-10000", status: 416},
		{h: "bytes=2048-", status: 416},
		{h: "bytes=-0", status: 416},
		{h: "bytes=0-1,5-6", full: true},
		{h: "items=0-1", full: true},
	} {
		br, err := parseRange(tc.h, size)
		switch {
		case tc.status != 0:
			if err == nil || err.Status != tc.status || err.Header.Get("Content-Range") != "bytes */2048" {
				t.Errorf("%q: got %v %v, want %d", tc.h, br, err, tc.status)
			}
		case tc.full:
			if br != nil || err != nil {
				t.Errorf("%q: got %v %v, want full", tc.h, br, err)
			}
		default:
			if err != nil || br == nil || br.Start != tc.start || br.Length != tc.len {
				t.Errorf("%q: got %+v %v, want %d+%d", tc.h, br, err, tc.start, tc.len)
			}
		}
	}
}

func testDesc(mt string, content string) descriptor {
	return descriptor{MediaType: mt, Digest: fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(content))), Size: int64(len(content))}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseManifest(t *testing.T) {
	t.Parallel()
	cfg := testDesc("application/vnd.oci.image.config.v1+json", "{}")
	layer := testDesc("application/vnd.oci.image.layer.v1.tar+gzip", "layer")
	foreign := testDesc("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", "foreign")
	foreign.URLs = []string{"https://example.com/x"}
	subj := testDesc(mtOCIManifest, "subject")
	img := map[string]any{"schemaVersion": 2, "mediaType": mtOCIManifest, "config": cfg,
		"layers": []descriptor{layer, foreign}, "subject": subj, "annotations": map[string]string{"a": "b"}}
	p, err := parseManifest(mtOCIManifest, mustJSON(t, img))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Blobs) != 2 || p.Subject == nil || p.ArtifactType != cfg.MediaType || p.Annotations["a"] != "b" {
		t.Fatalf("parsed: %+v", p)
	}

	docker := map[string]any{"schemaVersion": 2, "mediaType": mtDockerManifest,
		"config": testDesc("application/vnd.docker.container.image.v1+json", "{}"), "layers": []descriptor{layer}}
	if p, err := parseManifest(mtDockerManifest, mustJSON(t, docker)); err != nil || p.MediaType != mtDockerManifest {
		t.Fatalf("docker manifest: %v %v", p, err)
	}
	idx := map[string]any{"schemaVersion": 2, "manifests": []descriptor{subj, subj}, "artifactType": "x/y"}
	if p, err := parseManifest(mtOCIIndex, mustJSON(t, idx)); err != nil || len(p.Children) != 1 || p.ArtifactType != "x/y" {
		t.Fatalf("index: %+v %v", p, err)
	}

	sha512 := cfg
	sha512.Digest = "sha512:" + strings.Repeat("ab", 64)
	tooMany := make([]descriptor, 200)
	for i := range tooMany {
		tooMany[i] = layer
	}
	withData := layer
	withData.Data = []byte("not the layer")
	for name, tc := range map[string]struct {
		ct   string
		body []byte
		code string
	}{
		"not json":       {mtOCIManifest, []byte("{"), codeManifestInvalid},
		"schema1":        {mtDockerSchema1, []byte("{}"), codeManifestInvalid},
		"no schema":      {mtOCIManifest, mustJSON(t, map[string]any{"mediaType": mtOCIManifest, "config": cfg}), codeManifestInvalid},
		"type mismatch":  {mtOCIIndex, mustJSON(t, img), codeManifestInvalid},
		"no config":      {mtOCIManifest, mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtOCIManifest}), codeManifestInvalid},
		"sha512":         {mtOCIManifest, mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtOCIManifest, "config": sha512}), codeUnsupported},
		"too many refs":  {mtOCIManifest, mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtOCIManifest, "config": cfg, "layers": tooMany}), codeManifestInvalid},
		"bad data field": {mtOCIManifest, mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": mtOCIManifest, "config": cfg, "layers": []descriptor{withData}}), codeManifestInvalid},
		"too big":        {mtOCIManifest, make([]byte, maxManifestSize+1), codeSizeInvalid},
		"unknown type":   {"application/x-nope", mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": "application/x-nope"}), codeManifestInvalid},
	} {
		if _, err := parseManifest(tc.ct, tc.body); err == nil || err.Code != tc.code {
			t.Errorf("%s: got %v, want %s", name, err, tc.code)
		}
	}
}

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
