package oci

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/artifact-registry/artifact-registry/protocol/oci/ocidigest"
)

var (
	// pathComponent is one "/"-separated component of a repository name
	// (OCI distribution-spec, "Pulling manifests": <name>).
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
	// tagPattern is the spec's <reference> as a tag.
	tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
)

const (
	// maxImageNameLength is container_images.name's limit (docs/schema.md
	// "Lengths, names and limits").
	maxImageNameLength = 255
	// maxNameLength bounds the whole <namespace>/<repository>/<image> name.
	maxNameLength = 255 + 255 + 255 + 2
)

// imageName is a parsed /v2/<name>/ path name: the namespace slug, the
// repository name and the image name (which may contain "/").
type imageName struct {
	Namespace  string
	Repository string
	Image      string
}

func (n imageName) String() string { return n.Namespace + "/" + n.Repository + "/" + n.Image }

// parseName splits and validates the <name> part of an OCI URL.
func parseName(name string) (imageName, *apiError) {
	if name == "" || len(name) > maxNameLength {
		return imageName{}, newErr(http.StatusBadRequest, codeNameInvalid, "invalid repository name")
	}
	parts := strings.Split(name, "/")
	for _, p := range parts {
		if !pathComponent.MatchString(p) {
			return imageName{}, newErr(http.StatusBadRequest, codeNameInvalid,
				"invalid repository name %q: every path component must match [a-z0-9]+((.|_|__|-+)[a-z0-9]+)*", name)
		}
	}
	if len(parts) < 3 {
		return imageName{}, newErr(http.StatusNotFound, codeNameUnknown,
			"repository name %q must be <namespace>/<repository>/<image>", name)
	}
	n := imageName{Namespace: parts[0], Repository: parts[1], Image: strings.Join(parts[2:], "/")}
	if len(n.Image) > maxImageNameLength {
		return imageName{}, newErr(http.StatusBadRequest, codeNameInvalid,
			"image name %q is longer than %d characters", n.Image, maxImageNameLength)
	}
	return n, nil
}

// digest is a sha256 digest, the only algorithm this registry stores.
type digest = ocidigest.Digest

// parseDigest parses "sha256:<64 lowercase hex>". Other well-formed
// algorithms (sha512, blake3, ...) are UNSUPPORTED; anything else is
// DIGEST_INVALID. Both errors are decided here, before any database access.
func parseDigest(s string) (digest, *apiError) {
	d, err := ocidigest.Parse(s)
	if err != nil {
		return d, digestError(err.(*ocidigest.Error))
	}
	return d, nil
}

// digestError is the spec's error for a refused digest.
func digestError(e *ocidigest.Error) *apiError {
	code := codeDigestInvalid
	if e.Unsupported {
		code = codeUnsupported
	}
	return newErr(http.StatusBadRequest, code, "%s", e.Error()).withDetail(map[string]string{"digest": e.Input})
}

// reference is a manifest reference: a tag or a digest.
type reference struct {
	Tag    string
	Digest digest
	IsTag  bool
}

func (r reference) String() string {
	if r.IsTag {
		return r.Tag
	}
	return r.Digest.String()
}

// parseReference parses a manifest <reference>. A reference containing ":"
// is a digest (tags cannot contain ":").
func parseReference(s string) (reference, *apiError) {
	if strings.Contains(s, ":") {
		d, err := parseDigest(s)
		if err != nil {
			return reference{}, err
		}
		return reference{Digest: d}, nil
	}
	if !tagPattern.MatchString(s) {
		return reference{}, newErr(http.StatusBadRequest, codeManifestInvalid,
			"invalid tag %q: tags must match [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}", s)
	}
	return reference{Tag: s, IsTag: true}, nil
}
