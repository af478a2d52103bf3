package oci

import (
	"encoding/hex"
	"net/http"
	"regexp"
	"strings"
)

var (
	// pathComponent is one "/"-separated component of a repository name
	// (OCI distribution-spec, "Pulling manifests": <name>).
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$`)
	// tagPattern is the spec's <reference> as a tag.
	tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	// digestPattern is the general digest grammar (algorithm ":" encoded).
	digestPattern = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)
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

// digest is a sha256 digest, the only algorithm this registry stores
// (raw 32-byte columns, docs/schema.md "Digests, hashes and enums").
type digest [32]byte

func (d digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

// Bytes returns the raw 32 bytes as a new slice.
func (d digest) Bytes() []byte { b := d; return b[:] }

// parseDigest parses "sha256:<64 lowercase hex>". Other well-formed
// algorithms (sha512, blake3, ...) are UNSUPPORTED; anything else is
// DIGEST_INVALID. Both errors are decided here, before any database access.
func parseDigest(s string) (digest, *apiError) {
	var d digest
	if !digestPattern.MatchString(s) {
		return d, newErr(http.StatusBadRequest, codeDigestInvalid, "invalid digest %q", s).withDetail(map[string]string{"digest": s})
	}
	algo, enc, _ := strings.Cut(s, ":")
	if algo != "sha256" {
		return d, newErr(http.StatusBadRequest, codeUnsupported,
			"digest algorithm %q is not supported: this registry stores sha256 digests only", algo).withDetail(map[string]string{"digest": s})
	}
	if len(enc) != 64 || strings.ToLower(enc) != enc {
		return d, newErr(http.StatusBadRequest, codeDigestInvalid, "invalid sha256 digest %q: expected 64 lowercase hex characters", s).withDetail(map[string]string{"digest": s})
	}
	if _, err := hex.Decode(d[:], []byte(enc)); err != nil {
		return d, newErr(http.StatusBadRequest, codeDigestInvalid, "invalid sha256 digest %q", s).withDetail(map[string]string{"digest": s})
	}
	return d, nil
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
