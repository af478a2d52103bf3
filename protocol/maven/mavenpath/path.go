// Package mavenpath parses the request paths of the Maven surface. It
// depends on the standard library and the layout rules alone, so that
// fuzzing the parser compiles nothing of the registry's store.
package mavenpath

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
)

// Prefix is where the Maven surface lives.
const Prefix = "/maven/"

// ErrBadPath is a request path the Maven layout does not allow (400).
var ErrBadPath = errors.New("invalid Maven repository path")

// ErrDirectory is a path ending in '/': directory listings are not served
// (404).
var ErrDirectory = errors.New("directory listings are not served")

// Request is a parsed /maven/<namespace>/<repository>/<path> request.
type Request struct {
	Namespace, Repository string
	// GroupID, ArtifactID, Version and FileName name the stored file: for
	// a checksum sidecar, the file the sidecar describes. Version is ""
	// for the package-level maven-metadata.xml.
	GroupID, ArtifactID, Version, FileName string
	// Checksum is the sidecar algorithm, "" when the request is for the
	// file itself.
	Checksum mavenlayout.ChecksumAlgorithm
	// Name is the last path segment as requested.
	Name string
}

// Parse parses the escaped request path. It works on the escaped form
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
// where each group path segment is one part of the groupId. A refused
// path is ErrBadPath, ErrDirectory or mavenlayout.ErrInvalid, wrapped
// with the reason.
func Parse(escaped string) (*Request, error) {
	rest, ok := strings.CutPrefix(escaped, Prefix)
	if !ok {
		return nil, fmt.Errorf("%w: not under %s", ErrBadPath, Prefix)
	}
	raw := strings.Split(rest, "/")
	if len(raw) > 0 && raw[len(raw)-1] == "" {
		// A trailing slash: a directory. Check the rest for traversal
		// first, so that ".../../" is still a bad request.
		if _, err := unescapeSegments(raw[:len(raw)-1]); err != nil {
			return nil, err
		}
		return nil, ErrDirectory
	}
	segs, err := unescapeSegments(raw)
	if err != nil {
		return nil, err
	}
	if len(segs) < 2 {
		return nil, fmt.Errorf("%w: expected /maven/<namespace>/<repository>/<path>", ErrBadPath)
	}
	q := &Request{Namespace: segs[0], Repository: segs[1]}
	for _, s := range segs[:2] {
		if len(s) > 255 {
			return nil, fmt.Errorf("%w: namespace or repository name longer than 255 characters", ErrBadPath)
		}
	}
	p := segs[2:]
	if len(p) == 0 {
		return nil, ErrDirectory
	}
	q.Name = p[len(p)-1]
	base, alg, isSum := mavenlayout.SplitChecksumName(q.Name)
	if isSum {
		q.Checksum = alg
	}
	var group []string
	switch {
	case base == mavenlayout.MetadataFile && len(p) >= 4 && mavenlayout.IsSnapshotVersion(p[len(p)-2]):
		group = p[:len(p)-3]
		q.ArtifactID, q.Version, q.FileName = p[len(p)-3], p[len(p)-2], base
	case base == mavenlayout.MetadataFile:
		if len(p) < 3 {
			return nil, fmt.Errorf("%w: expected <group/path>/<artifactId>/%s", ErrBadPath, mavenlayout.MetadataFile)
		}
		group = p[:len(p)-2]
		q.ArtifactID, q.FileName = p[len(p)-2], base
	default:
		if len(p) < 4 {
			return nil, fmt.Errorf("%w: expected <group/path>/<artifactId>/<version>/<file>", ErrBadPath)
		}
		group = p[:len(p)-3]
		q.ArtifactID, q.Version, q.FileName = p[len(p)-3], p[len(p)-2], base
	}
	for _, g := range group {
		if strings.Contains(g, ".") {
			return nil, fmt.Errorf("%w: group path segment %q contains a dot (groupId parts are separated by '/')", ErrBadPath, g)
		}
	}
	q.GroupID = strings.Join(group, ".")
	if err := mavenlayout.ValidateFile(q.GroupID, q.ArtifactID, q.Version, q.FileName); err != nil {
		return nil, err
	}
	return q, nil
}

func unescapeSegments(raw []string) ([]string, error) {
	out := make([]string, len(raw))
	for i, r := range raw {
		s, err := url.PathUnescape(r)
		if err != nil {
			return nil, fmt.Errorf("%w: bad escape in %q", ErrBadPath, r)
		}
		switch {
		case s == "":
			return nil, fmt.Errorf("%w: empty path segment (absolute or doubled slash)", ErrBadPath)
		case s == "." || s == "..":
			return nil, fmt.Errorf("%w: %q segment (path traversal)", ErrBadPath, s)
		case strings.ContainsAny(s, "/\\"):
			return nil, fmt.Errorf("%w: segment %q holds an encoded path separator", ErrBadPath, r)
		}
		for j := 0; j < len(s); j++ {
			if s[j] < 0x20 || s[j] == 0x7f {
				return nil, fmt.Errorf("%w: control character in segment %q", ErrBadPath, r)
			}
		}
		out[i] = s
	}
	return out, nil
}
