package oci

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// FuzzParseManifest checks the manifest parser on arbitrary bodies and
// Content-Types. An accepted manifest
//   - is digested over its exact bytes, has a manifest media type, valid
//     sha256 digests, non-negative sizes and at most 200 references;
//   - parses to the same result when read back with the media type it is
//     stored and served with (referrers re-parse stored manifests that way);
//   - means to the registry what it means to a client that reads JSON keys
//     case-sensitively and keeps the first of duplicate keys: the blobs,
//     children and subject the registry checks and protects are exactly the
//     ones such a client would pull.
//
// A body over the size limit is refused before it is decoded.
func FuzzParseManifest(f *testing.F) {
	for _, s := range manifestSeeds() {
		f.Add(s.ct, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, contentType string, payload []byte) {
		p, aerr := parseManifest(contentType, payload)
		if aerr != nil {
			if p != nil {
				t.Fatalf("parseManifest returned a manifest and an error %v", aerr)
			}
			if aerr.Status != http.StatusBadRequest && aerr.Status != http.StatusUnsupportedMediaType &&
				aerr.Status != http.StatusRequestEntityTooLarge {
				t.Fatalf("refused with status %d (%v): a bad manifest is a client error", aerr.Status, aerr)
			}
			return
		}
		checkParsedManifest(t, payload, p)
		again, aerr := parseManifest(p.MediaType, payload)
		if aerr != nil {
			t.Fatalf("accepted with Content-Type %q, refused when read back as %s: %v", contentType, p.MediaType, aerr)
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("read back as %s, the manifest parses differently:\n%+v\n%+v", p.MediaType, p, again)
		}
		checkStrictView(t, payload, p)
	})
}

func checkParsedManifest(t *testing.T, payload []byte, p *parsedManifest) {
	t.Helper()
	if p.Digest != digest(sha256.Sum256(payload)) || !bytes.Equal(p.Payload, payload) {
		t.Fatalf("the parsed manifest's digest or payload is not that of the body")
	}
	if !isManifestMediaType(p.MediaType) {
		t.Fatalf("accepted media type %q", p.MediaType)
	}
	if len(p.Blobs)+len(p.Children) > maxManifestReferences {
		t.Fatalf("accepted %d blobs and %d children", len(p.Blobs), len(p.Children))
	}
	for _, b := range p.Blobs {
		if b.Size < 0 {
			t.Fatalf("blob %s has size %d", b.Digest, b.Size)
		}
		if d, err := parseDigest(b.Digest.String()); err != nil || d != b.Digest {
			t.Fatalf("blob digest %s does not round-trip: %v", b.Digest, err)
		}
	}
	seen := map[digest]bool{}
	for _, c := range p.Children {
		if seen[c] {
			t.Fatalf("child %s listed twice", c)
		}
		seen[c] = true
	}
}

// strictRefs is what a case-sensitive, first-key-wins reader sees as the
// references of a manifest.
type strictRefs struct {
	Blobs    []blobRef
	Children []digest
	Subject  *digest
}

func checkStrictView(t *testing.T, payload []byte, p *parsedManifest) {
	t.Helper()
	top, ok := firstKeyWins(payload)
	if !ok {
		t.Fatalf("accepted a manifest that is not a JSON object")
	}
	var want strictRefs
	if raw, ok := top["subject"]; ok && string(raw) != "null" {
		d := strictDescriptor(t, raw)
		want.Subject = &d.Digest
	}
	switch p.MediaType {
	case mtOCIManifest, mtDockerManifest:
		want.Blobs = append(want.Blobs, strictDescriptor(t, top["config"]).blobRef)
		for _, raw := range strictArray(t, top["layers"]) {
			if d := strictDescriptor(t, raw); !d.foreign {
				want.Blobs = append(want.Blobs, d.blobRef)
			}
		}
	case mtOCIIndex, mtDockerList:
		for _, raw := range strictArray(t, top["manifests"]) {
			if d := strictDescriptor(t, raw).Digest; !slices.Contains(want.Children, d) {
				want.Children = append(want.Children, d)
			}
		}
	case mtOCIArtifact:
		for _, raw := range strictArray(t, top["blobs"]) {
			if d := strictDescriptor(t, raw); !d.foreign {
				want.Blobs = append(want.Blobs, d.blobRef)
			}
		}
	}
	got := strictRefs{Blobs: p.Blobs, Children: p.Children, Subject: p.Subject}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the registry reads the references\n%v\na case-sensitive, first-key-wins client reads\n%v", got, want)
	}
}

type strictDesc struct {
	blobRef
	foreign bool
}

func strictDescriptor(t *testing.T, raw json.RawMessage) strictDesc {
	t.Helper()
	obj, ok := firstKeyWins(raw)
	if !ok {
		t.Fatalf("accepted descriptor %s is not an object", raw)
	}
	var d strictDesc
	var dg string
	var urls []string
	for k, v := range map[string]any{"digest": &dg, "size": &d.Size, "mediaType": &d.MediaType, "urls": &urls} {
		if r, ok := obj[k]; ok {
			if err := json.Unmarshal(r, v); err != nil {
				t.Fatalf("accepted descriptor %s: %s: %v", raw, k, err)
			}
		}
	}
	pd, err := parseDigest(dg)
	if err != nil {
		t.Fatalf("accepted descriptor %s has digest %q: %v", raw, dg, err)
	}
	d.Digest = pd
	d.foreign = strings.Contains(d.MediaType, "nondistributable") || strings.Contains(d.MediaType, "foreign") || len(urls) > 0
	return d
}

func strictArray(t *testing.T, raw json.RawMessage) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	if raw != nil {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("accepted array %s: %v", raw, err)
		}
	}
	return out
}

// firstKeyWins decodes an object keeping the first value of each exact key.
func firstKeyWins(raw []byte) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if k := tok.(string); out[k] == nil {
			out[k] = v
		}
	}
	return out, true
}

type manifestSeed struct{ ct, body string }

func seedDigest(s string) string { return digest(sha256.Sum256([]byte(s))).String() }

func manifestSeeds() []manifestSeed {
	cfg, l1, l2 := seedDigest("config"), seedDigest("layer1"), seedDigest("layer2")
	desc := func(mt, d string, size int) string {
		return fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d}`, mt, d, size)
	}
	img := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"config":%s,"layers":[%s,%s]}`, mtOCIManifest,
		desc("application/vnd.oci.image.config.v1+json", cfg, 6),
		desc("application/vnd.oci.image.layer.v1.tar+gzip", l1, 6),
		desc("application/vnd.oci.image.layer.v1.tar+gzip", l2, 6))
	many := make([]string, maxManifestReferences+1)
	for i := range many {
		many[i] = desc(mtOCIManifest, seedDigest(fmt.Sprint(i)), i)
	}
	return []manifestSeed{
		{mtOCIManifest, img},
		{"", img},
		{mtOCIManifest + "; charset=utf-8", img},
		{mtOctetStream, img},
		{mtOCIIndex, img},
		{mtDockerManifest, strings.Replace(img, mtOCIManifest, mtDockerManifest, 1)},
		{"", fmt.Sprintf(`{"schemaVersion":2,"config":%s}`, desc("x/y", cfg, 6))},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[{"mediaType":"application/vnd.oci.image.layer.nondistributable.v1.tar","digest":%q,"size":1,"urls":["https://example.com/l"]}]}`,
			desc("x/y", cfg, 6), l1)},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":{"mediaType":"x/y","digest":%q,"size":6,"data":"Y29uZmln"},"subject":%s}`,
			cfg, desc(mtOCIManifest, l2, 10))},
		{mtOCIIndex, fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"artifactType":"a/b","manifests":[%s,%s,%s]}`, mtOCIIndex,
			desc(mtOCIManifest, l1, 1), desc(mtOCIManifest, l2, 2), desc(mtOCIManifest, l1, 1))},
		{"", `{"schemaVersion":2,"manifests":[]}`},
		{mtDockerList, fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"manifests":[%s]}`, mtDockerList, desc(mtDockerManifest, l1, 1))},
		{mtOCIArtifact, fmt.Sprintf(`{"mediaType":%q,"artifactType":"a/b","blobs":[%s],"subject":%s}`, mtOCIArtifact,
			desc("a/b", l1, 6), desc(mtOCIManifest, l2, 1))},
		{mtOCIIndex, fmt.Sprintf(`{"schemaVersion":2,"manifests":[%s]}`, strings.Join(many, ","))},
		{mtDockerSchema1, `{"schemaVersion":1,"name":"a","tag":"b","fsLayers":[]}`},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[{"digest":"sha512:%s","size":1}]}`, desc("x/y", cfg, 6), strings.Repeat("ab", 64))},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[{"digest":%q,"size":-1}]}`, desc("x/y", cfg, 6), l1)},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[{"digest":%q,"size":1,"mediaType":"not a type"}]}`, desc("x/y", cfg, 6), l1)},
		// Ambiguous documents: duplicate keys, keys that only match
		// case-insensitively.
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[%s],"layers":[%s]}`, desc("x/y", cfg, 6), desc("a/b", l1, 6), desc("a/b", l2, 6))},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"Layers":[%s]}`, desc("x/y", cfg, 6), desc("a/b", l1, 6))},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":{"digest":%q,"size":6,"digest":%q}}`, cfg, l1)},
		{"", fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"mediaType":%q,"config":%s,"manifests":[%s]}`, mtOCIIndex, mtOCIManifest, desc("x/y", cfg, 6), desc("a/b", l1, 6))},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":{"digest":%q,"size":6,"ſize":7}}`, cfg)},
		{mtOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"annotations":{"a":"1","A":"2"}}`, desc("x/y", cfg, 6))},
		{mtOCIManifest, img + " {}"},
		{mtOCIManifest, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"},
	}
}

// TestParseManifestHugeBodyIsNotDecoded checks that a body over the limit
// costs no allocation proportional to its size: it is refused before the
// JSON decoder sees it.
func TestParseManifestHugeBodyIsNotDecoded(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	huge := bytes.Repeat([]byte("["), 64<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, aerr := parseManifest(mtOCIManifest, huge)
	runtime.ReadMemStats(&after)
	if aerr == nil || aerr.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 64 MiB manifest: %v, want 413", aerr)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing a 64 MiB manifest allocated %d bytes", grew)
	}
}

// TestManifestSeedsAccepted makes sure FuzzParseManifest starts from
// manifests of every type that the parser accepts, so that its properties
// are exercised, and that the ambiguous seeds are refused.
func TestManifestSeedsAccepted(t *testing.T) {
	t.Parallel()
	seeds := manifestSeeds()
	for _, i := range []int{0, 5, 9, 11, 12} {
		if _, aerr := parseManifest(seeds[i].ct, []byte(seeds[i].body)); aerr != nil {
			t.Errorf("seed %d refused: %v", i, aerr)
		}
	}
	for _, s := range seeds[18:23] {
		if _, aerr := parseManifest(s.ct, []byte(s.body)); aerr == nil || aerr.Code != codeManifestInvalid {
			t.Errorf("ambiguous manifest %s: %v, want MANIFEST_INVALID", s.body, aerr)
		}
	}
}
