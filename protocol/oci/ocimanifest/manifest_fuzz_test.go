package ocimanifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/protocol/oci/ocidigest"
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
		p, err := Parse(contentType, payload)
		if err != nil {
			if p != nil {
				t.Fatalf("Parse returned a manifest and an error %v", err)
			}
			checkRefusal(t, err)
			return
		}
		checkParsedManifest(t, payload, p)
		again, err := Parse(p.MediaType, payload)
		if err != nil {
			t.Fatalf("accepted with Content-Type %q, refused when read back as %s: %v", contentType, p.MediaType, err)
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("read back as %s, the manifest parses differently:\n%+v\n%+v", p.MediaType, p, again)
		}
		checkStrictView(t, payload, p)
	})
}

// checkRefusal fails unless err is one of the refusals the protocol
// answers as a client error: an *Error of a known kind, or a digest of an
// unsupported algorithm.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var me *Error
	var de *ocidigest.Error
	switch {
	case errors.As(err, &me):
		if me.Kind != Invalid && me.Kind != TooLarge && me.Kind != UnsupportedMediaType {
			t.Fatalf("refused with kind %d (%v)", me.Kind, err)
		}
	case errors.As(err, &de):
		if !de.Unsupported {
			t.Fatalf("refused with an invalid digest error %v: a descriptor's bad digest is an invalid manifest", err)
		}
	default:
		t.Fatalf("refused with %T %v: a bad manifest is a client error", err, err)
	}
}

func checkParsedManifest(t *testing.T, payload []byte, p *Manifest) {
	t.Helper()
	if p.Digest != ocidigest.Digest(sha256.Sum256(payload)) || !bytes.Equal(p.Payload, payload) {
		t.Fatalf("the parsed manifest's digest or payload is not that of the body")
	}
	if !isManifestMediaType(p.MediaType) {
		t.Fatalf("accepted media type %q", p.MediaType)
	}
	if len(p.Blobs)+len(p.Children) > maxReferences {
		t.Fatalf("accepted %d blobs and %d children", len(p.Blobs), len(p.Children))
	}
	for _, b := range p.Blobs {
		if b.Size < 0 {
			t.Fatalf("blob %s has size %d", b.Digest, b.Size)
		}
		if d, err := ocidigest.Parse(b.Digest.String()); err != nil || d != b.Digest {
			t.Fatalf("blob digest %s does not round-trip: %v", b.Digest, err)
		}
	}
	seen := map[ocidigest.Digest]bool{}
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
	Blobs    []BlobRef
	Children []ocidigest.Digest
	Subject  *ocidigest.Digest
}

func checkStrictView(t *testing.T, payload []byte, p *Manifest) {
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
	case MediaTypeOCIManifest, MediaTypeDockerManifest:
		want.Blobs = append(want.Blobs, strictDescriptor(t, top["config"]).BlobRef)
		for _, raw := range strictArray(t, top["layers"]) {
			if d := strictDescriptor(t, raw); !d.foreign {
				want.Blobs = append(want.Blobs, d.BlobRef)
			}
		}
	case MediaTypeOCIIndex, MediaTypeDockerList:
		for _, raw := range strictArray(t, top["manifests"]) {
			if d := strictDescriptor(t, raw).Digest; !slices.Contains(want.Children, d) {
				want.Children = append(want.Children, d)
			}
		}
	case MediaTypeOCIArtifact:
		for _, raw := range strictArray(t, top["blobs"]) {
			if d := strictDescriptor(t, raw); !d.foreign {
				want.Blobs = append(want.Blobs, d.BlobRef)
			}
		}
	}
	got := strictRefs{Blobs: p.Blobs, Children: p.Children, Subject: p.Subject}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the registry reads the references\n%v\na case-sensitive, first-key-wins client reads\n%v", got, want)
	}
}

type strictDesc struct {
	BlobRef
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
	pd, err := ocidigest.Parse(dg)
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

func seedDigest(s string) string { return ocidigest.Digest(sha256.Sum256([]byte(s))).String() }

func manifestSeeds() []manifestSeed {
	cfg, l1, l2 := seedDigest("config"), seedDigest("layer1"), seedDigest("layer2")
	desc := func(mt, d string, size int) string {
		return fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d}`, mt, d, size)
	}
	img := fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"config":%s,"layers":[%s,%s]}`, MediaTypeOCIManifest,
		desc("application/vnd.oci.image.config.v1+json", cfg, 6),
		desc("application/vnd.oci.image.layer.v1.tar+gzip", l1, 6),
		desc("application/vnd.oci.image.layer.v1.tar+gzip", l2, 6))
	many := make([]string, maxReferences+1)
	for i := range many {
		many[i] = desc(MediaTypeOCIManifest, seedDigest(fmt.Sprint(i)), i)
	}
	return []manifestSeed{
		{MediaTypeOCIManifest, img},
		{"", img},
		{MediaTypeOCIManifest + "; charset=utf-8", img},
		{mtOctetStream, img},
		{MediaTypeOCIIndex, img},
		{MediaTypeDockerManifest, strings.Replace(img, MediaTypeOCIManifest, MediaTypeDockerManifest, 1)},
		{"", fmt.Sprintf(`{"schemaVersion":2,"config":%s}`, desc("x/y", cfg, 6))},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[{"mediaType":"application/vnd.oci.image.layer.nondistributable.v1.tar","digest":%q,"size":1,"urls":["https://example.com/l"]}]}`,
			desc("x/y", cfg, 6), l1)},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":{"mediaType":"x/y","digest":%q,"size":6,"data":"Y29uZmln"},"subject":%s}`,
			cfg, desc(MediaTypeOCIManifest, l2, 10))},
		{MediaTypeOCIIndex, fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"artifactType":"a/b","manifests":[%s,%s,%s]}`, MediaTypeOCIIndex,
			desc(MediaTypeOCIManifest, l1, 1), desc(MediaTypeOCIManifest, l2, 2), desc(MediaTypeOCIManifest, l1, 1))},
		{"", `{"schemaVersion":2,"manifests":[]}`},
		{MediaTypeDockerList, fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"manifests":[%s]}`, MediaTypeDockerList, desc(MediaTypeDockerManifest, l1, 1))},
		{MediaTypeOCIArtifact, fmt.Sprintf(`{"mediaType":%q,"artifactType":"a/b","blobs":[%s],"subject":%s}`, MediaTypeOCIArtifact,
			desc("a/b", l1, 6), desc(MediaTypeOCIManifest, l2, 1))},
		{MediaTypeOCIIndex, fmt.Sprintf(`{"schemaVersion":2,"manifests":[%s]}`, strings.Join(many, ","))},
		{MediaTypeDockerSchema1, `{"schemaVersion":1,"name":"a","tag":"b","fsLayers":[]}`},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[{"digest":"sha512:%s","size":1}]}`, desc("x/y", cfg, 6), strings.Repeat("ab", 64))},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[{"digest":%q,"size":-1}]}`, desc("x/y", cfg, 6), l1)},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[{"digest":%q,"size":1,"mediaType":"not a type"}]}`, desc("x/y", cfg, 6), l1)},
		// Ambiguous documents: duplicate keys, keys that only match
		// case-insensitively.
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"layers":[%s],"layers":[%s]}`, desc("x/y", cfg, 6), desc("a/b", l1, 6), desc("a/b", l2, 6))},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"Layers":[%s]}`, desc("x/y", cfg, 6), desc("a/b", l1, 6))},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":{"digest":%q,"size":6,"digest":%q}}`, cfg, l1)},
		{"", fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"mediaType":%q,"config":%s,"manifests":[%s]}`, MediaTypeOCIIndex, MediaTypeOCIManifest, desc("x/y", cfg, 6), desc("a/b", l1, 6))},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":{"digest":%q,"size":6,"ſize":7}}`, cfg)},
		{MediaTypeOCIManifest, fmt.Sprintf(`{"schemaVersion":2,"config":%s,"annotations":{"a":"1","A":"2"}}`, desc("x/y", cfg, 6))},
		{MediaTypeOCIManifest, img + " {}"},
		{MediaTypeOCIManifest, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"},
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
	_, err := Parse(MediaTypeOCIManifest, huge)
	runtime.ReadMemStats(&after)
	if me := (*Error)(nil); !errors.As(err, &me) || me.Kind != TooLarge {
		t.Fatalf("a 64 MiB manifest: %v, want TooLarge", err)
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
		if _, err := Parse(seeds[i].ct, []byte(seeds[i].body)); err != nil {
			t.Errorf("seed %d refused: %v", i, err)
		}
	}
	for _, s := range seeds[18:23] {
		if _, err := Parse(s.ct, []byte(s.body)); !isKind(err, Invalid) {
			t.Errorf("ambiguous manifest %s: %v, want Invalid", s.body, err)
		}
	}
}
