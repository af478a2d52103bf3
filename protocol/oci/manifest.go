package oci

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/artifact-registry/artifact-registry/protocol/oci/ocidigest"
	"github.com/artifact-registry/artifact-registry/protocol/oci/ocimanifest"
)

// Manifest media types.
const (
	mtOCIManifest    = ocimanifest.MediaTypeOCIManifest
	mtOCIIndex       = ocimanifest.MediaTypeOCIIndex
	mtOCIArtifact    = ocimanifest.MediaTypeOCIArtifact
	mtDockerManifest = ocimanifest.MediaTypeDockerManifest
	mtDockerList     = ocimanifest.MediaTypeDockerList
	mtOctetStream    = "application/octet-stream"
)

// maxManifestSize is the largest manifest body accepted (4 MiB).
const maxManifestSize = ocimanifest.MaxSize

// parsedManifest is a validated manifest, ready for the store.
type parsedManifest = ocimanifest.Manifest

// parseManifest validates a manifest body pushed with the given
// Content-Type (see ocimanifest.Parse), refusing it with the spec's error.
func parseManifest(contentType string, payload []byte) (*parsedManifest, *apiError) {
	p, err := ocimanifest.Parse(contentType, payload)
	if err != nil {
		return nil, manifestError(err)
	}
	return p, nil
}

// manifestError is the spec's error for a manifest ocimanifest refused.
func manifestError(err error) *apiError {
	var de *ocidigest.Error
	var me *ocimanifest.Error
	switch {
	case errors.As(err, &de):
		return digestError(de)
	case errors.As(err, &me) && me.Kind == ocimanifest.TooLarge:
		return newErr(http.StatusRequestEntityTooLarge, codeSizeInvalid, "%s", me.Message)
	case errors.As(err, &me) && me.Kind == ocimanifest.UnsupportedMediaType:
		return newErr(http.StatusUnsupportedMediaType, codeManifestInvalid, "%s", me.Message)
	}
	return newErr(http.StatusBadRequest, codeManifestInvalid, "%s", err.Error())
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
