package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/artifact-registry/artifact-registry/legacy/layout"
)

// Manifest media types the importer recognises; the stored ones are those
// our OCI protocol accepts on push (protocol/oci/manifest.go), so an
// imported manifest is one a client could have pushed to us.
const (
	mtOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mtOCIIndex       = "application/vnd.oci.image.index.v1+json"
	mtOCIArtifact    = "application/vnd.oci.artifact.manifest.v1+json"
	mtDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mtDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	mtDockerSchema1  = "application/vnd.docker.distribution.manifest.v1+json"
	mtDockerSigned   = "application/vnd.docker.distribution.manifest.v1+prettyjws"
)

// maxManifestSize is our push limit (4 MiB).
const maxManifestSize = 4 << 20

type descriptor struct {
	MediaType string   `json:"mediaType"`
	Digest    string   `json:"digest"`
	Size      int64    `json:"size"`
	URLs      []string `json:"urls,omitempty"`
}

type rawManifest struct {
	SchemaVersion *int         `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	ArtifactType  string       `json:"artifactType"`
	Config        *descriptor  `json:"config"`
	Layers        []descriptor `json:"layers"`
	Manifests     []descriptor `json:"manifests"`
	Blobs         []descriptor `json:"blobs"`
	Subject       *descriptor  `json:"subject"`
	// FSLayers / Signatures mark schema 1 (no mediaType in the body).
	FSLayers []json.RawMessage `json:"fsLayers"`
}

type blobRef struct {
	Digest layout.Digest
	Size   int64
}

// parsed is a manifest ready to store.
type parsed struct {
	MediaType string
	Blobs     []blobRef       // config and distributable layers
	Foreign   []string        // foreign / non-distributable layers, not copied
	Children  []layout.Digest // index entries
	Subject   *layout.Digest
	// ArtifactType is what our push records (protocol/oci
	// subjectArtifactType): artifactType, else an OCI image manifest's
	// config media type; none for Docker manifests.
	ArtifactType string
}

// errUnsupported marks manifests we refuse by kind (schema 1, unknown
// media type, not JSON): the manifest is skipped, not the repository.
type errUnsupported struct{ msg string }

func (e *errUnsupported) Error() string { return e.msg }

func unsupported(format string, args ...any) error {
	return &errUnsupported{msg: fmt.Sprintf(format, args...)}
}

// parseManifest validates a stored revision the way our push path would.
func parseManifest(payload []byte) (*parsed, error) {
	var raw rawManifest
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&raw); err != nil {
		return nil, unsupported("not a JSON manifest: %v", err)
	}
	if dec.More() {
		return nil, unsupported("trailing data after the JSON manifest")
	}
	mt := raw.MediaType
	if mt == "" {
		switch {
		case raw.SchemaVersion != nil && *raw.SchemaVersion == 1 || raw.FSLayers != nil:
			mt = mtDockerSchema1
		case raw.Manifests != nil:
			mt = mtOCIIndex
		case raw.Config != nil:
			mt = mtOCIManifest
		default:
			return nil, unsupported("cannot tell the manifest type: no mediaType, config or manifests")
		}
	}
	switch mt {
	case mtDockerSchema1, mtDockerSigned:
		return nil, unsupported("Docker schema 1 manifest: not supported (re-push it as schema 2 or OCI)")
	case mtOCIManifest, mtOCIIndex, mtOCIArtifact, mtDockerManifest, mtDockerList:
	default:
		return nil, unsupported("unknown manifest media type %q", mt)
	}
	if mt != mtOCIArtifact && (raw.SchemaVersion == nil || *raw.SchemaVersion != 2) {
		return nil, unsupported("schemaVersion must be 2")
	}
	p := &parsed{MediaType: mt}
	if len(raw.ArtifactType) > 255 {
		return nil, unsupported("artifactType is %d bytes; our push limit is 255", len(raw.ArtifactType))
	}
	if mt != mtDockerManifest && mt != mtDockerList {
		p.ArtifactType = raw.ArtifactType
		if p.ArtifactType == "" && mt == mtOCIManifest && raw.Config != nil {
			p.ArtifactType = raw.Config.MediaType
		}
	}
	if raw.Subject != nil {
		d, err := layout.ParseDigest(raw.Subject.Digest)
		if err != nil {
			return nil, unsupported("subject: %v", err)
		}
		p.Subject = &d
	}
	add := func(what string, d descriptor, mayBeForeign bool) error {
		dg, err := layout.ParseDigest(d.Digest)
		if err != nil {
			return unsupported("%s: %v", what, err)
		}
		if d.Size < 0 {
			return unsupported("%s %s has a negative size", what, dg)
		}
		if mayBeForeign && isForeign(d) {
			p.Foreign = append(p.Foreign, dg.String())
			return nil
		}
		p.Blobs = append(p.Blobs, blobRef{Digest: dg, Size: d.Size})
		return nil
	}
	switch mt {
	case mtOCIManifest, mtDockerManifest:
		if raw.Config == nil {
			return nil, unsupported("image manifest has no config")
		}
		if err := add("config", *raw.Config, false); err != nil {
			return nil, err
		}
		for _, l := range raw.Layers {
			if err := add("layer", l, true); err != nil {
				return nil, err
			}
		}
	case mtOCIIndex, mtDockerList:
		seen := map[layout.Digest]bool{}
		for _, m := range raw.Manifests {
			d, err := layout.ParseDigest(m.Digest)
			if err != nil {
				return nil, unsupported("index entry: %v", err)
			}
			if !seen[d] {
				seen[d] = true
				p.Children = append(p.Children, d)
			}
		}
	case mtOCIArtifact:
		for _, b := range raw.Blobs {
			if err := add("blob", b, true); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// isForeign: a layer whose bytes live outside the registry (Windows
// foreign layers, OCI non-distributable layers, or any layer with URLs).
// Our push path does not require them either.
func isForeign(d descriptor) bool {
	return strings.Contains(d.MediaType, "nondistributable") || strings.Contains(d.MediaType, "foreign") || len(d.URLs) > 0
}
