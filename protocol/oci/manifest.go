package oci

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// Manifest media types.
const (
	mtOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mtOCIIndex       = "application/vnd.oci.image.index.v1+json"
	mtOCIArtifact    = "application/vnd.oci.artifact.manifest.v1+json" // OCI 1.1 RC artifact manifest, still pushed by old oras
	mtDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mtDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	mtDockerSchema1  = "application/vnd.docker.distribution.manifest.v1+json"
	mtDockerSigned   = "application/vnd.docker.distribution.manifest.v1+prettyjws"
	mtOctetStream    = "application/octet-stream"
)

const (
	// maxManifestSize is the largest manifest body accepted (4 MiB).
	maxManifestSize = 4 << 20
	// maxManifestReferences bounds the descriptors of one manifest: a
	// manifest can hold 200 references (docs/schema.md "Lengths, names and
	// limits").
	maxManifestReferences = 200
)

// descriptor is an OCI content descriptor as found in manifests.
type descriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	URLs         []string          `json:"urls,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Data         []byte            `json:"data,omitempty"`
	ArtifactType string            `json:"artifactType,omitempty"`
}

type rawManifest struct {
	SchemaVersion *int              `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	ArtifactType  string            `json:"artifactType"`
	Config        *descriptor       `json:"config"`
	Layers        []descriptor      `json:"layers"`
	Manifests     []descriptor      `json:"manifests"`
	Blobs         []descriptor      `json:"blobs"`
	Subject       *descriptor       `json:"subject"`
	Annotations   map[string]string `json:"annotations"`
}

// blobRef is a blob (config or layer) a manifest needs in its image.
type blobRef struct {
	Digest    digest
	Size      int64
	MediaType string
}

// parsedManifest is a validated manifest, ready for the store.
type parsedManifest struct {
	MediaType string
	Digest    digest
	Payload   []byte
	// ArtifactType is what the referrers API reports: artifactType, else the
	// config media type of an image manifest.
	ArtifactType string
	Annotations  map[string]string
	Subject      *digest
	// Blobs are the distributable config and layer blobs that must exist
	// in the image; Children the manifests an index lists.
	Blobs    []blobRef
	Children []digest
}

// isManifestMediaType reports whether mt is a manifest type we store.
func isManifestMediaType(mt string) bool {
	switch mt {
	case mtOCIManifest, mtOCIIndex, mtOCIArtifact, mtDockerManifest, mtDockerList:
		return true
	}
	return false
}

// isForeignLayer reports whether a layer descriptor points outside the
// registry (non-distributable / foreign layers), so it need not be pushed.
func isForeignLayer(d descriptor) bool {
	return strings.Contains(d.MediaType, "nondistributable") ||
		strings.Contains(d.MediaType, "foreign") ||
		len(d.URLs) > 0
}

func manifestInvalid(format string, args ...any) *apiError {
	return newErr(http.StatusBadRequest, codeManifestInvalid, format, args...)
}

// parseManifest validates a manifest body pushed with the given
// Content-Type. The digest is computed here; callers compare it with a
// digest reference.
func parseManifest(contentType string, payload []byte) (*parsedManifest, *apiError) {
	if len(payload) > maxManifestSize {
		return nil, newErr(http.StatusRequestEntityTooLarge, codeSizeInvalid,
			"manifest is %d bytes; the limit is %d bytes (4 MiB)", len(payload), maxManifestSize)
	}
	ct := ""
	if contentType != "" {
		if mt, _, err := mime.ParseMediaType(contentType); err == nil {
			ct = mt
		} else {
			ct = strings.TrimSpace(contentType)
		}
	}
	if ct == mtDockerSchema1 || ct == mtDockerSigned {
		return nil, newErr(http.StatusBadRequest, codeManifestInvalid,
			"Docker image manifest schema 1 is not supported: push schema 2 or OCI manifests")
	}
	var raw rawManifest
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&raw); err != nil {
		return nil, manifestInvalid("manifest is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, manifestInvalid("manifest has trailing data after the JSON document")
	}
	if err := checkManifestKeys(payload); err != nil {
		return nil, err
	}
	// The media type: the body's mediaType field, the Content-Type header,
	// or (neither being a manifest type) what the body's shape says.
	mt := raw.MediaType
	switch {
	case mt != "":
		if ct != "" && ct != mtOctetStream && ct != "application/json" && ct != mt {
			return nil, manifestInvalid("Content-Type %q does not match the manifest's mediaType %q", ct, mt)
		}
	case isManifestMediaType(ct):
		mt = ct
	case raw.Manifests != nil:
		mt = mtOCIIndex
	case raw.Config != nil:
		mt = mtOCIManifest
	default:
		return nil, manifestInvalid("cannot tell the manifest type: no mediaType and no Content-Type of a manifest")
	}
	if mt == mtDockerSchema1 || mt == mtDockerSigned {
		return nil, manifestInvalid("Docker image manifest schema 1 is not supported: push schema 2 or OCI manifests")
	}
	if !isManifestMediaType(mt) {
		return nil, newErr(http.StatusUnsupportedMediaType, codeManifestInvalid,
			"unsupported manifest media type %q", mt)
	}
	if mt != mtOCIArtifact {
		if raw.SchemaVersion == nil || *raw.SchemaVersion != 2 {
			return nil, manifestInvalid("schemaVersion must be 2")
		}
	}
	if raw.ArtifactType != "" && !validMediaType(raw.ArtifactType) {
		return nil, manifestInvalid("artifactType %q is not a valid media type", raw.ArtifactType)
	}
	p := &parsedManifest{MediaType: mt, Payload: payload, Digest: digest(sha256.Sum256(payload)), Annotations: raw.Annotations}
	refs := 0
	if raw.Subject != nil {
		d, err := validateDescriptor("subject", *raw.Subject)
		if err != nil {
			return nil, err
		}
		if mt == mtDockerManifest || mt == mtDockerList {
			return nil, manifestInvalid("Docker manifests cannot carry a subject")
		}
		p.Subject = &d
	}
	addBlob := func(what string, d descriptor) *apiError {
		dg, err := validateDescriptor(what, d)
		if err != nil {
			return err
		}
		refs++
		if what != "config" && isForeignLayer(d) {
			return nil
		}
		p.Blobs = append(p.Blobs, blobRef{Digest: dg, Size: d.Size, MediaType: d.MediaType})
		return nil
	}
	switch mt {
	case mtOCIManifest, mtDockerManifest:
		if raw.Config == nil {
			return nil, manifestInvalid("image manifest has no config descriptor")
		}
		if raw.Manifests != nil {
			return nil, manifestInvalid("image manifest must not have a manifests field")
		}
		if err := addBlob("config", *raw.Config); err != nil {
			return nil, err
		}
		for _, l := range raw.Layers {
			if err := addBlob("layer", l); err != nil {
				return nil, err
			}
		}
		p.ArtifactType = raw.ArtifactType
		if p.ArtifactType == "" {
			p.ArtifactType = raw.Config.MediaType
		}
	case mtOCIIndex, mtDockerList:
		if raw.Config != nil || raw.Layers != nil {
			return nil, manifestInvalid("index must not have config or layers")
		}
		if raw.Manifests == nil && mt == mtDockerList {
			return nil, manifestInvalid("manifest list has no manifests field")
		}
		seen := map[digest]bool{}
		for _, m := range raw.Manifests {
			d, err := validateDescriptor("manifest", m)
			if err != nil {
				return nil, err
			}
			refs++
			if !seen[d] {
				seen[d] = true
				p.Children = append(p.Children, d)
			}
		}
		p.ArtifactType = raw.ArtifactType
	case mtOCIArtifact:
		for _, b := range raw.Blobs {
			if err := addBlob("blob", b); err != nil {
				return nil, err
			}
		}
		p.ArtifactType = raw.ArtifactType
	}
	if refs > maxManifestReferences {
		return nil, manifestInvalid("manifest has %d references; the limit is %d", refs, maxManifestReferences)
	}
	return p, nil
}

// validateDescriptor checks a descriptor's digest (sha256 only), size and
// embedded data.
func validateDescriptor(what string, d descriptor) (digest, *apiError) {
	if d.Digest == "" {
		return digest{}, manifestInvalid("%s descriptor has no digest", what)
	}
	dg, err := parseDigest(d.Digest)
	if err != nil {
		if err.Code == codeUnsupported {
			return dg, err
		}
		return dg, manifestInvalid("%s descriptor has an invalid digest %q", what, d.Digest)
	}
	if d.Size < 0 {
		return dg, manifestInvalid("%s descriptor %s has a negative size", what, d.Digest)
	}
	if d.MediaType != "" && !validMediaType(d.MediaType) {
		return dg, manifestInvalid("%s descriptor %s has an invalid mediaType %q", what, d.Digest, d.MediaType)
	}
	if d.Data != nil {
		if int64(len(d.Data)) != d.Size || digest(sha256.Sum256(d.Data)) != dg {
			return dg, manifestInvalid("%s descriptor %s: embedded data does not match its digest and size", what, d.Digest)
		}
	}
	return dg, nil
}

// validMediaType accepts RFC 6838 type/subtype names (with parameters).
func validMediaType(mt string) bool {
	if len(mt) > 255 {
		return false
	}
	_, _, err := mime.ParseMediaType(mt)
	return err == nil && strings.Contains(mt, "/")
}

// BlobReferences returns the config and distributable layer digests of a
// stored manifest (what a push checks in the image), parsed like a push
// with its stored media type; an index has none. The backfill of
// container_manifest_blob_references uses it.
func BlobReferences(mediaType string, payload []byte) ([][32]byte, error) {
	p, apiErr := parseManifest(mediaType, payload)
	if apiErr != nil {
		return nil, fmt.Errorf("oci: parse manifest: %s", apiErr.Message)
	}
	out := make([][32]byte, len(p.Blobs))
	for i, b := range p.Blobs {
		out[i] = [32]byte(b.Digest)
	}
	return out, nil
}
