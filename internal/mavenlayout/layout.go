// Package mavenlayout holds the Maven repository layout rules that the
// store and protocol/maven share: coordinate validation, checksum sidecar
// names and timestamped SNAPSHOT file names. It depends on the standard
// library alone, so that the Maven path parser built on it is fuzzed
// without compiling the store; store/maven returns its refusals as the
// store's CodeInvalid errors.
package mavenlayout

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid is a coordinate or file name that the Maven layout does not
// allow. Returned wrapped with the reason.
var ErrInvalid = errors.New("invalid Maven coordinates")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// MetadataFile is the name of the metadata document at package level
// (<group>/<artifactId>/) and at SNAPSHOT version level.
const MetadataFile = "maven-metadata.xml"

// Length limit of group_id, artifact_id, version and file_name: 255
// (docs/schema.md, Lengths, names and limits).
const maxField = 255

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

func versionChar(c byte) bool { return nameChar(c) || c == '+' || c == '~' }

func checkToken(what, s string, ok func(byte) bool) error {
	switch {
	case s == "":
		return invalid("empty %s", what)
	case len(s) > maxField:
		return invalid("%s longer than %d characters", what, maxField)
	case s == "." || s == ".." || s[0] == '.':
		return invalid("%s %q may not start with a dot", what, s)
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return invalid("%s %q contains the character %q", what, s, s[i])
		}
	}
	return nil
}

// ValidateGroupID checks a groupId (dot-separated, each part made of
// letters, digits, '_' and '-').
func ValidateGroupID(g string) error {
	if err := checkToken("groupId", g, nameChar); err != nil {
		return err
	}
	for part := range strings.SplitSeq(g, ".") {
		if part == "" {
			return invalid("groupId %q has an empty part", g)
		}
	}
	return nil
}

// ValidateArtifactID checks an artifactId.
func ValidateArtifactID(a string) error { return checkToken("artifactId", a, nameChar) }

// ValidateVersion checks a version (letters, digits, '_', '-', '.',
// '+', '~'; no leading dot).
func ValidateVersion(v string) error { return checkToken("version", v, versionChar) }

// ValidateFileName checks a file name inside a version directory: it
// must belong to the artifact and version, i.e. start with
// "<artifactId>-<version>" followed by '.' or '-' (classifier), or, in a
// SNAPSHOT version, with the timestamped form
// "<artifactId>-<base>-<yyyyMMdd.HHmmss>-<buildNumber>".
func ValidateFileName(artifactID, version, name string) error {
	if err := checkToken("file name", name, versionChar); err != nil {
		return err
	}
	if name == MetadataFile {
		return nil
	}
	if rest, ok := strings.CutPrefix(name, artifactID+"-"+version); ok && rest != "" && (rest[0] == '.' || rest[0] == '-') {
		if len(rest) > 1 {
			return nil
		}
	}
	if IsSnapshotVersion(version) {
		if _, ok := ParseSnapshotFile(artifactID, version, name); ok {
			return nil
		}
	}
	return invalid("file %q does not belong to %s version %s (expected %s-%s[-classifier].ext)", name, artifactID, version, artifactID, version)
}

// ValidateFile checks the coordinates and the name of a file; version is
// "" for a package-level file (maven-metadata.xml next to the versions).
func ValidateFile(groupID, artifactID, version, fileName string) error {
	if err := ValidateGroupID(groupID); err != nil {
		return err
	}
	if err := ValidateArtifactID(artifactID); err != nil {
		return err
	}
	if version == "" {
		if fileName != MetadataFile {
			return invalid("only %s lives next to the versions of %s:%s", MetadataFile, groupID, artifactID)
		}
		return nil
	}
	if err := ValidateVersion(version); err != nil {
		return err
	}
	return ValidateFileName(artifactID, version, fileName)
}

// IsSnapshotVersion reports whether a version is a SNAPSHOT base
// version ("1.0-SNAPSHOT"; Maven compares the suffix case-sensitively).
func IsSnapshotVersion(v string) bool {
	return strings.HasSuffix(v, "-SNAPSHOT") && len(v) > len("-SNAPSHOT")
}

// SnapshotFile is a timestamped SNAPSHOT file name taken apart:
// <artifactId>-<base>-<Timestamp>-<BuildNumber>[-<Classifier>].<Extension>.
type SnapshotFile struct {
	Timestamp   string // yyyyMMdd.HHmmss (UTC)
	BuildNumber int
	Classifier  string
	Extension   string // everything after the first dot: jar, pom, jar.asc, tar.gz
}

// Value is the timestamped version ("1.1.0-20261129.210811-2").
func (f SnapshotFile) Value(version string) string {
	return strings.TrimSuffix(version, "-SNAPSHOT") + "-" + f.Timestamp + "-" + strconv.Itoa(f.BuildNumber)
}

// Updated is the timestamp as yyyyMMddHHmmss (the <updated> form).
func (f SnapshotFile) Updated() string { return strings.Replace(f.Timestamp, ".", "", 1) }

// After reports whether f is a later build than g (build number, then
// timestamp).
func (f SnapshotFile) After(g SnapshotFile) bool {
	if f.BuildNumber != g.BuildNumber {
		return f.BuildNumber > g.BuildNumber
	}
	return f.Timestamp > g.Timestamp
}

// ParseSnapshotFile parses a timestamped file name of a SNAPSHOT
// version; ok is false for any other name.
func ParseSnapshotFile(artifactID, version, name string) (SnapshotFile, bool) {
	var f SnapshotFile
	base, isSnap := strings.CutSuffix(version, "-SNAPSHOT")
	if !isSnap {
		return f, false
	}
	rest, ok := strings.CutPrefix(name, artifactID+"-"+base+"-")
	if !ok || len(rest) < len("20060102.150405-1.x") {
		return f, false
	}
	ts := rest[:15]
	if _, err := time.Parse("20060102.150405", ts); err != nil {
		return f, false
	}
	rest = rest[15:]
	if rest[0] != '-' {
		return f, false
	}
	rest = rest[1:]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || i > 9 || i == len(rest) {
		return f, false
	}
	build, _ := strconv.Atoi(rest[:i])
	rest = rest[i:]
	f.Timestamp, f.BuildNumber = ts, build
	switch rest[0] {
	case '.':
		f.Extension = rest[1:]
	case '-':
		classifier, ext, ok := strings.Cut(rest[1:], ".")
		if !ok || classifier == "" {
			return f, false
		}
		f.Classifier, f.Extension = classifier, ext
	default:
		return f, false
	}
	if f.Extension == "" || strings.HasPrefix(f.Extension, ".") || strings.HasSuffix(f.Extension, ".") {
		return f, false
	}
	return f, true
}

// ChecksumAlgorithm is a checksum sidecar kind (.md5, .sha1, .sha256,
// .sha512).
type ChecksumAlgorithm string

const (
	MD5    ChecksumAlgorithm = "md5"
	SHA1   ChecksumAlgorithm = "sha1"
	SHA256 ChecksumAlgorithm = "sha256"
	SHA512 ChecksumAlgorithm = "sha512"
)

// ChecksumAlgorithms lists the sidecar kinds.
var ChecksumAlgorithms = []ChecksumAlgorithm{MD5, SHA1, SHA256, SHA512}

// HexLen is the length of the algorithm's lowercase hex digest.
func (a ChecksumAlgorithm) HexLen() int {
	switch a {
	case MD5:
		return 32
	case SHA1:
		return 40
	case SHA256:
		return 64
	case SHA512:
		return 128
	}
	return 0
}

// SplitChecksumName splits "x.jar.sha1" into ("x.jar", sha1); ok is
// false when the name is not a checksum sidecar.
func SplitChecksumName(name string) (base string, alg ChecksumAlgorithm, ok bool) {
	for _, a := range ChecksumAlgorithms {
		if b, found := strings.CutSuffix(name, "."+string(a)); found && b != "" {
			return b, a, true
		}
	}
	return name, "", false
}
