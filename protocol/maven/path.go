package maven

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// Prefix is where the Maven surface lives.
const Prefix = "/maven/"

// errBadPath is a request path the Maven layout does not allow (400).
var errBadPath = errors.New("invalid Maven repository path")

// errDirectory is a path ending in '/': directory listings are not served
// (404).
var errDirectory = errors.New("directory listings are not served")

// request is a parsed /maven/<namespace>/<repository>/<path> request.
type request struct {
	namespace, repository string
	// ref names the stored file: for a checksum sidecar, the file the
	// sidecar describes.
	ref mavenstore.FileRef
	// checksum is the sidecar algorithm, "" when the request is for the
	// file itself.
	checksum mavenstore.ChecksumAlgorithm
	// name is the last path segment as requested.
	name string
}

func (q *request) isMetadata() bool { return q.ref.FileName == mavenstore.MetadataFile }

// parsePath parses the escaped request path. It works on the escaped form
// so that encoded separators and dots are seen for what they are: every
// segment is unescaped on its own and refused when it is empty (a double
// or leading slash: an absolute path), "." or "..", or holds a slash, a
// backslash or a control character after unescaping. The remaining layout
// is
//
//	<group/path>/<artifactId>/<version>/<file>[.md5|.sha1|.sha256|.sha512]
//	<group/path>/<artifactId>/maven-metadata.xml[.sha1|...]            package level
//	<group/path>/<artifactId>/<version>-SNAPSHOT/maven-metadata.xml[...] SNAPSHOT version level
//
// where each group path segment is one part of the groupId.
func parsePath(escaped string) (*request, error) {
	rest, ok := strings.CutPrefix(escaped, Prefix)
	if !ok {
		return nil, fmt.Errorf("%w: not under %s", errBadPath, Prefix)
	}
	raw := strings.Split(rest, "/")
	if len(raw) > 0 && raw[len(raw)-1] == "" {
		// A trailing slash: a directory. Check the rest for traversal
		// first, so that ".../../" is still a bad request.
		if _, err := unescapeSegments(raw[:len(raw)-1]); err != nil {
			return nil, err
		}
		return nil, errDirectory
	}
	segs, err := unescapeSegments(raw)
	if err != nil {
		return nil, err
	}
	if len(segs) < 2 {
		return nil, fmt.Errorf("%w: expected /maven/<namespace>/<repository>/<path>", errBadPath)
	}
	q := &request{namespace: segs[0], repository: segs[1]}
	for _, s := range segs[:2] {
		if len(s) > 255 {
			return nil, fmt.Errorf("%w: namespace or repository name longer than 255 characters", errBadPath)
		}
	}
	p := segs[2:]
	if len(p) == 0 {
		return nil, errDirectory
	}
	q.name = p[len(p)-1]
	base, alg, isSum := mavenstore.SplitChecksumName(q.name)
	if isSum {
		q.checksum = alg
	}
	var group []string
	switch {
	case base == mavenstore.MetadataFile && len(p) >= 4 && mavenstore.IsSnapshotVersion(p[len(p)-2]):
		group = p[:len(p)-3]
		q.ref = mavenstore.FileRef{ArtifactID: p[len(p)-3], Version: p[len(p)-2], FileName: base}
	case base == mavenstore.MetadataFile:
		if len(p) < 3 {
			return nil, fmt.Errorf("%w: expected <group/path>/<artifactId>/%s", errBadPath, mavenstore.MetadataFile)
		}
		group = p[:len(p)-2]
		q.ref = mavenstore.FileRef{ArtifactID: p[len(p)-2], FileName: base}
	default:
		if len(p) < 4 {
			return nil, fmt.Errorf("%w: expected <group/path>/<artifactId>/<version>/<file>", errBadPath)
		}
		group = p[:len(p)-3]
		q.ref = mavenstore.FileRef{ArtifactID: p[len(p)-3], Version: p[len(p)-2], FileName: base}
	}
	for _, g := range group {
		if strings.Contains(g, ".") {
			return nil, fmt.Errorf("%w: group path segment %q contains a dot (groupId parts are separated by '/')", errBadPath, g)
		}
	}
	q.ref.GroupID = strings.Join(group, ".")
	if err := q.ref.Validate(); err != nil {
		return nil, err
	}
	return q, nil
}

func unescapeSegments(raw []string) ([]string, error) {
	out := make([]string, len(raw))
	for i, r := range raw {
		s, err := url.PathUnescape(r)
		if err != nil {
			return nil, fmt.Errorf("%w: bad escape in %q", errBadPath, r)
		}
		switch {
		case s == "":
			return nil, fmt.Errorf("%w: empty path segment (absolute or doubled slash)", errBadPath)
		case s == "." || s == "..":
			return nil, fmt.Errorf("%w: %q segment (path traversal)", errBadPath, s)
		case strings.ContainsAny(s, "/\\"):
			return nil, fmt.Errorf("%w: segment %q holds an encoded path separator", errBadPath, r)
		}
		for j := 0; j < len(s); j++ {
			if s[j] < 0x20 || s[j] == 0x7f {
				return nil, fmt.Errorf("%w: control character in segment %q", errBadPath, r)
			}
		}
		out[i] = s
	}
	return out, nil
}
