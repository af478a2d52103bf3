package ocimanifest

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/protocol/oci/ocidigest"
)

// isKind reports whether err is an *Error of kind k.
func isKind(err error, k Kind) bool {
	var me *Error
	return errors.As(err, &me) && me.Kind == k
}

// isUnsupportedDigest reports whether err refuses a digest of another
// algorithm than sha256.
func isUnsupportedDigest(err error) bool {
	var de *ocidigest.Error
	return errors.As(err, &de) && de.Unsupported
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
	subj := testDesc(MediaTypeOCIManifest, "subject")
	img := map[string]any{"schemaVersion": 2, "mediaType": MediaTypeOCIManifest, "config": cfg,
		"layers": []descriptor{layer, foreign}, "subject": subj, "annotations": map[string]string{"a": "b"}}
	p, err := Parse(MediaTypeOCIManifest, mustJSON(t, img))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Blobs) != 2 || p.Subject == nil || p.ArtifactType != cfg.MediaType || p.Annotations["a"] != "b" {
		t.Fatalf("parsed: %+v", p)
	}

	docker := map[string]any{"schemaVersion": 2, "mediaType": MediaTypeDockerManifest,
		"config": testDesc("application/vnd.docker.container.image.v1+json", "{}"), "layers": []descriptor{layer}}
	if p, err := Parse(MediaTypeDockerManifest, mustJSON(t, docker)); err != nil || p.MediaType != MediaTypeDockerManifest {
		t.Fatalf("docker manifest: %v %v", p, err)
	}
	idx := map[string]any{"schemaVersion": 2, "manifests": []descriptor{subj, subj}, "artifactType": "x/y"}
	if p, err := Parse(MediaTypeOCIIndex, mustJSON(t, idx)); err != nil || len(p.Children) != 1 || p.ArtifactType != "x/y" {
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
	invalid := func(err error) bool { return isKind(err, Invalid) }
	for name, tc := range map[string]struct {
		ct      string
		body    []byte
		refused func(error) bool
	}{
		"not json":       {MediaTypeOCIManifest, []byte("{"), invalid},
		"schema1":        {MediaTypeDockerSchema1, []byte("{}"), invalid},
		"no schema":      {MediaTypeOCIManifest, mustJSON(t, map[string]any{"mediaType": MediaTypeOCIManifest, "config": cfg}), invalid},
		"type mismatch":  {MediaTypeOCIIndex, mustJSON(t, img), invalid},
		"no config":      {MediaTypeOCIManifest, mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": MediaTypeOCIManifest}), invalid},
		"sha512":         {MediaTypeOCIManifest, mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": MediaTypeOCIManifest, "config": sha512}), isUnsupportedDigest},
		"too many refs":  {MediaTypeOCIManifest, mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": MediaTypeOCIManifest, "config": cfg, "layers": tooMany}), invalid},
		"bad data field": {MediaTypeOCIManifest, mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": MediaTypeOCIManifest, "config": cfg, "layers": []descriptor{withData}}), invalid},
		"too big":        {MediaTypeOCIManifest, make([]byte, MaxSize+1), func(err error) bool { return isKind(err, TooLarge) }},
		"unknown type":   {"application/x-nope", mustJSON(t, map[string]any{"schemaVersion": 2, "mediaType": "application/x-nope"}), func(err error) bool { return isKind(err, UnsupportedMediaType) }},
	} {
		if _, err := Parse(tc.ct, tc.body); !tc.refused(err) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// TestDecodeErrorsNameTypesOfPackageOCI pins the decoder's messages that
// clients read: they name the Go types as they were named in package oci.
func TestDecodeErrorsNameTypesOfPackageOCI(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]string{
		`1`:            "manifest is not valid JSON: json: cannot unmarshal number into Go value of type oci.rawManifest",
		`{"config":1}`: "manifest is not valid JSON: json: cannot unmarshal number into Go struct field rawManifest.config of type oci.descriptor",
		`{"layers":1}`: "manifest is not valid JSON: json: cannot unmarshal number into Go struct field rawManifest.layers of type []oci.descriptor",
	} {
		if _, err := Parse(MediaTypeOCIManifest, []byte(body)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %s", body, err, want)
		}
	}
}
