package maven

import (
	"bytes"
	"encoding/xml"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Maven repository layout rules shared by the store and protocol/maven:
// coordinate validation, timestamped SNAPSHOT file names and the
// maven-metadata.xml documents the server generates.

// CodeInvalid: a coordinate, file name or document that the Maven
// layout does not allow. Returned wrapped with the reason.
var CodeInvalid = store.Code{Name: "MAVEN_INVALID", Kind: store.KindInvalidInput}

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
		return errs.New(CodeInvalid, "invalid Maven coordinates: empty %s", what)
	case len(s) > maxField:
		return errs.New(CodeInvalid, "invalid Maven coordinates: %s longer than %d characters", what, maxField)
	case s == "." || s == ".." || s[0] == '.':
		return errs.New(CodeInvalid, "invalid Maven coordinates: %s %q may not start with a dot", what, s)
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return errs.New(CodeInvalid, "invalid Maven coordinates: %s %q contains the character %q", what, s, s[i])
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
			return errs.New(CodeInvalid, "invalid Maven coordinates: groupId %q has an empty part", g)
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
	return errs.New(CodeInvalid, "invalid Maven coordinates: file %q does not belong to %s version %s (expected %s-%s[-classifier].ext)", name, artifactID, version, artifactID, version)
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

// after reports whether f is a later build than g (build number, then
// timestamp).
func (f SnapshotFile) after(g SnapshotFile) bool {
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

// ParseChecksumBody reads a sidecar body: the hex digest, optionally
// followed by whitespace and a file name (sha1sum style), upper or lower
// case, with or without a trailing newline.
func ParseChecksumBody(alg ChecksumAlgorithm, body []byte) (string, error) {
	fields := strings.Fields(string(body))
	if len(fields) == 0 {
		return "", errs.New(CodeInvalid, "invalid Maven coordinates: empty %s checksum", alg)
	}
	h := strings.ToLower(fields[0])
	if len(h) != alg.HexLen() {
		return "", errs.New(CodeInvalid, "invalid Maven coordinates: a %s checksum has %d hex digits, got %d", alg, alg.HexLen(), len(h))
	}
	for i := 0; i < len(h); i++ {
		if !(h[i] >= '0' && h[i] <= '9' || h[i] >= 'a' && h[i] <= 'f') {
			return "", errs.New(CodeInvalid, "invalid Maven coordinates: %s checksum %q is not hex", alg, fields[0])
		}
	}
	return h, nil
}

// ---------------------------------------------------------------------------
// maven-metadata.xml

const timestampLayout = "20060102150405"

// packageMetadata renders the package-level maven-metadata.xml from
// the active versions (any order) and the time of the newest one. Versions
// are sorted in Maven order; <latest> is the highest version, <release>
// the highest non-SNAPSHOT version. The output is a pure function of its
// inputs, so the same stored state always yields the same bytes (and
// checksums).
func packageMetadata(groupID, artifactID string, versions []string, lastUpdated time.Time) []byte {
	sorted := sortVersions(versions)
	var latest, release string
	if len(sorted) > 0 {
		latest = sorted[len(sorted)-1]
	}
	for i := len(sorted) - 1; i >= 0; i-- {
		if !IsSnapshotVersion(sorted[i]) {
			release = sorted[i]
			break
		}
	}
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata>\n")
	xmlElem(&b, "  ", "groupId", groupID)
	xmlElem(&b, "  ", "artifactId", artifactID)
	b.WriteString("  <versioning>\n")
	if latest != "" {
		xmlElem(&b, "    ", "latest", latest)
	}
	if release != "" {
		xmlElem(&b, "    ", "release", release)
	}
	b.WriteString("    <versions>\n")
	for _, v := range sorted {
		xmlElem(&b, "      ", "version", v)
	}
	b.WriteString("    </versions>\n")
	xmlElem(&b, "    ", "lastUpdated", lastUpdated.UTC().Format(timestampLayout))
	b.WriteString("  </versioning>\n</metadata>\n")
	return b.Bytes()
}

// snapshotMetadata renders the version-level maven-metadata.xml of a
// SNAPSHOT version from the names of its files. Only timestamped files
// count; for each (classifier, extension) the latest build wins. It
// returns nil when the version holds no timestamped file.
func snapshotMetadata(groupID, artifactID, version string, fileNames []string) []byte {
	type key struct{ classifier, ext string }
	latest := map[key]SnapshotFile{}
	var newest SnapshotFile
	found := false
	for _, n := range fileNames {
		f, ok := ParseSnapshotFile(artifactID, version, n)
		if !ok {
			continue
		}
		k := key{f.Classifier, f.Extension}
		if cur, ok := latest[k]; !ok || f.after(cur) {
			latest[k] = f
		}
		if !found || f.after(newest) {
			newest, found = f, true
		}
	}
	if !found {
		return nil
	}
	keys := make([]key, 0, len(latest))
	lastUpdated := ""
	for k, f := range latest {
		keys = append(keys, k)
		if f.Updated() > lastUpdated {
			lastUpdated = f.Updated()
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.classifier, b.classifier); c != 0 {
			return c
		}
		return strings.Compare(a.ext, b.ext)
	})
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata modelVersion=\"1.1.0\">\n")
	xmlElem(&b, "  ", "groupId", groupID)
	xmlElem(&b, "  ", "artifactId", artifactID)
	xmlElem(&b, "  ", "version", version)
	b.WriteString("  <versioning>\n    <snapshot>\n")
	xmlElem(&b, "      ", "timestamp", newest.Timestamp)
	xmlElem(&b, "      ", "buildNumber", strconv.Itoa(newest.BuildNumber))
	b.WriteString("    </snapshot>\n")
	xmlElem(&b, "    ", "lastUpdated", lastUpdated)
	b.WriteString("    <snapshotVersions>\n")
	for _, k := range keys {
		f := latest[k]
		b.WriteString("      <snapshotVersion>\n")
		if k.classifier != "" {
			xmlElem(&b, "        ", "classifier", k.classifier)
		}
		xmlElem(&b, "        ", "extension", k.ext)
		xmlElem(&b, "        ", "value", f.Value(version))
		xmlElem(&b, "        ", "updated", f.Updated())
		b.WriteString("      </snapshotVersion>\n")
	}
	b.WriteString("    </snapshotVersions>\n  </versioning>\n</metadata>\n")
	return b.Bytes()
}

func xmlElem(b *bytes.Buffer, indent, name, value string) {
	b.WriteString(indent)
	b.WriteString("<" + name + ">")
	_ = xml.EscapeText(b, []byte(value))
	b.WriteString("</" + name + ">\n")
}

// MetadataDoc is what the server reads from a client-uploaded
// maven-metadata.xml: enough to check that it describes the path it was
// uploaded to. The server never stores the client's document; it
// regenerates its own from the stored versions and files.
type MetadataDoc struct {
	XMLName    xml.Name `xml:"metadata"`
	GroupID    string   `xml:"groupId"`
	ArtifactID string   `xml:"artifactId"`
	Version    string   `xml:"version"`
	Versioning *struct {
		Versions []string `xml:"versions>version"`
	} `xml:"versioning"`
	Plugins *struct {
		Plugin []struct {
			ArtifactID string `xml:"artifactId"`
		} `xml:"plugin"`
	} `xml:"plugins"`
}

// ParseMetadata parses a client-uploaded maven-metadata.xml.
func ParseMetadata(r io.Reader) (*MetadataDoc, error) {
	var doc MetadataDoc
	dec := xml.NewDecoder(r)
	dec.Strict = true
	if err := dec.Decode(&doc); err != nil {
		return nil, errs.New(CodeInvalid, "invalid Maven coordinates: maven-metadata.xml is not a metadata document: %v", err)
	}
	return &doc, nil
}

// IsGroupLevel reports a group-level (plugin prefix) document: plugins and
// no artifactId.
func (d *MetadataDoc) IsGroupLevel() bool { return d.ArtifactID == "" && d.Plugins != nil }
