// Package ocimanifest validates the manifests clients push and upstream
// registries send. It depends on the standard library and package
// ocidigest alone, so that fuzzing the parser compiles nothing of the
// registry's store; protocol/oci answers its refusals with the spec's
// errors.
package ocimanifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/artifact-registry/artifact-registry/protocol/oci/ocidigest"
)

// Manifest media types.
const (
	MediaTypeOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeOCIIndex       = "application/vnd.oci.image.index.v1+json"
	MediaTypeOCIArtifact    = "application/vnd.oci.artifact.manifest.v1+json" // OCI 1.1 RC artifact manifest, still pushed by old oras
	MediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	MediaTypeDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaTypeDockerSchema1  = "application/vnd.docker.distribution.manifest.v1+json"
	MediaTypeDockerSigned   = "application/vnd.docker.distribution.manifest.v1+prettyjws"
	mtOctetStream           = "application/octet-stream"
)

const (
	// MaxSize is the largest manifest body accepted (4 MiB).
	MaxSize = 4 << 20
	// maxReferences bounds the descriptors of one manifest: a manifest can
	// hold 200 references (docs/schema.md "Lengths, names and limits").
	maxReferences = 200
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

// BlobRef is a blob (config or layer) a manifest needs in its image.
type BlobRef struct {
	Digest    ocidigest.Digest
	Size      int64
	MediaType string
}

// Manifest is a validated manifest, ready for the store.
type Manifest struct {
	MediaType string
	Digest    ocidigest.Digest
	Payload   []byte
	// ArtifactType is what the referrers API reports: artifactType, else the
	// config media type of an image manifest.
	ArtifactType string
	Annotations  map[string]string
	Subject      *ocidigest.Digest
	// Blobs are the distributable config and layer blobs that must exist
	// in the image; Children the manifests an index lists.
	Blobs    []BlobRef
	Children []ocidigest.Digest
}

// Kind is how a refused manifest is answered.
type Kind int

const (
	// Invalid is a manifest the spec does not allow (MANIFEST_INVALID).
	Invalid Kind = iota
	// TooLarge is a body over MaxSize.
	TooLarge
	// UnsupportedMediaType is a manifest of a type the registry does not
	// store.
	UnsupportedMediaType
)

// Error is a refused manifest. A descriptor's digest of an unsupported
// algorithm is refused with the *ocidigest.Error instead.
type Error struct {
	Kind    Kind
	Message string
}

func (e *Error) Error() string { return e.Message }

// isManifestMediaType reports whether mt is a manifest type we store.
func isManifestMediaType(mt string) bool {
	switch mt {
	case MediaTypeOCIManifest, MediaTypeOCIIndex, MediaTypeOCIArtifact, MediaTypeDockerManifest, MediaTypeDockerList:
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

func invalid(format string, args ...any) *Error {
	return &Error{Kind: Invalid, Message: fmt.Sprintf(format, args...)}
}

// Parse validates a manifest body pushed with the given Content-Type. The
// digest is computed here; callers compare it with a digest reference. A
// refusal is an *Error or an unsupported *ocidigest.Error.
func Parse(contentType string, payload []byte) (*Manifest, error) {
	if len(payload) > MaxSize {
		return nil, &Error{Kind: TooLarge,
			Message: fmt.Sprintf("manifest is %d bytes; the limit is %d bytes (4 MiB)", len(payload), MaxSize)}
	}
	ct := ""
	if contentType != "" {
		if mt, _, err := mime.ParseMediaType(contentType); err == nil {
			ct = mt
		} else {
			ct = strings.TrimSpace(contentType)
		}
	}
	if ct == MediaTypeDockerSchema1 || ct == MediaTypeDockerSigned {
		return nil, invalid("Docker image manifest schema 1 is not supported: push schema 2 or OCI manifests")
	}
	var raw rawManifest
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&raw); err != nil {
		return nil, invalid("manifest is not valid JSON: %s", decodeError(err))
	}
	if dec.More() {
		return nil, invalid("manifest has trailing data after the JSON document")
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
			return nil, invalid("Content-Type %q does not match the manifest's mediaType %q", ct, mt)
		}
	case isManifestMediaType(ct):
		mt = ct
	case raw.Manifests != nil:
		mt = MediaTypeOCIIndex
	case raw.Config != nil:
		mt = MediaTypeOCIManifest
	default:
		return nil, invalid("cannot tell the manifest type: no mediaType and no Content-Type of a manifest")
	}
	if mt == MediaTypeDockerSchema1 || mt == MediaTypeDockerSigned {
		return nil, invalid("Docker image manifest schema 1 is not supported: push schema 2 or OCI manifests")
	}
	if !isManifestMediaType(mt) {
		return nil, &Error{Kind: UnsupportedMediaType, Message: fmt.Sprintf("unsupported manifest media type %q", mt)}
	}
	if mt != MediaTypeOCIArtifact {
		if raw.SchemaVersion == nil || *raw.SchemaVersion != 2 {
			return nil, invalid("schemaVersion must be 2")
		}
	}
	if raw.ArtifactType != "" && !validMediaType(raw.ArtifactType) {
		return nil, invalid("artifactType %q is not a valid media type", raw.ArtifactType)
	}
	p := &Manifest{MediaType: mt, Payload: payload, Digest: ocidigest.Digest(sha256.Sum256(payload)), Annotations: raw.Annotations}
	refs := 0
	if raw.Subject != nil {
		d, err := validateDescriptor("subject", *raw.Subject)
		if err != nil {
			return nil, err
		}
		if mt == MediaTypeDockerManifest || mt == MediaTypeDockerList {
			return nil, invalid("Docker manifests cannot carry a subject")
		}
		p.Subject = &d
	}
	addBlob := func(what string, d descriptor) error {
		dg, err := validateDescriptor(what, d)
		if err != nil {
			return err
		}
		refs++
		if what != "config" && isForeignLayer(d) {
			return nil
		}
		p.Blobs = append(p.Blobs, BlobRef{Digest: dg, Size: d.Size, MediaType: d.MediaType})
		return nil
	}
	switch mt {
	case MediaTypeOCIManifest, MediaTypeDockerManifest:
		if raw.Config == nil {
			return nil, invalid("image manifest has no config descriptor")
		}
		if raw.Manifests != nil {
			return nil, invalid("image manifest must not have a manifests field")
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
	case MediaTypeOCIIndex, MediaTypeDockerList:
		if raw.Config != nil || raw.Layers != nil {
			return nil, invalid("index must not have config or layers")
		}
		if raw.Manifests == nil && mt == MediaTypeDockerList {
			return nil, invalid("manifest list has no manifests field")
		}
		seen := map[ocidigest.Digest]bool{}
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
	case MediaTypeOCIArtifact:
		for _, b := range raw.Blobs {
			if err := addBlob("blob", b); err != nil {
				return nil, err
			}
		}
		p.ArtifactType = raw.ArtifactType
	}
	if refs > maxReferences {
		return nil, invalid("manifest has %d references; the limit is %d", refs, maxReferences)
	}
	return p, nil
}

// decodeError is the decoder's message as the registry has always sent
// it: a type error names the Go type it decoded into, and these types were
// declared in package oci before the parser moved here.
func decodeError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return strings.ReplaceAll(err.Error(), "ocimanifest.", "oci.")
	}
	return err.Error()
}

// validateDescriptor checks a descriptor's digest (sha256 only), size and
// embedded data.
func validateDescriptor(what string, d descriptor) (ocidigest.Digest, error) {
	if d.Digest == "" {
		return ocidigest.Digest{}, invalid("%s descriptor has no digest", what)
	}
	dg, err := ocidigest.Parse(d.Digest)
	if err != nil {
		if de := (*ocidigest.Error)(nil); errors.As(err, &de) && de.Unsupported {
			return dg, err
		}
		return dg, invalid("%s descriptor has an invalid digest %q", what, d.Digest)
	}
	if d.Size < 0 {
		return dg, invalid("%s descriptor %s has a negative size", what, d.Digest)
	}
	if d.MediaType != "" && !validMediaType(d.MediaType) {
		return dg, invalid("%s descriptor %s has an invalid mediaType %q", what, d.Digest, d.MediaType)
	}
	if d.Data != nil {
		if int64(len(d.Data)) != d.Size || ocidigest.Digest(sha256.Sum256(d.Data)) != dg {
			return dg, invalid("%s descriptor %s: embedded data does not match its digest and size", what, d.Digest)
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
