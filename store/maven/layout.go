package maven

import (
	"bytes"
	"encoding/xml"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// The store's side of the Maven repository layout: coordinate validation
// refusing with CodeInvalid, checksum sidecar bodies and the
// maven-metadata.xml documents the server generates. The rules on names
// (SNAPSHOT versions and file names, checksum sidecars, the metadata
// file's name) are internal/mavenlayout's, which callers use directly;
// it depends on the standard library only, so the path parser of
// protocol/maven is fuzzed without compiling the store.

// CodeInvalid: a coordinate, file name or document that the Maven
// layout does not allow. Returned wrapped with the reason.
var CodeInvalid = store.Code{Name: "MAVEN_INVALID", Kind: store.KindInvalidInput}

// invalid is a refusal of package mavenlayout as a CodeInvalid error.
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return errs.New(CodeInvalid, "%s", err)
}

// ValidateGroupID checks a groupId (dot-separated, each part made of
// letters, digits, '_' and '-').
func ValidateGroupID(g string) error { return invalid(mavenlayout.ValidateGroupID(g)) }

// ValidateArtifactID checks an artifactId.
func ValidateArtifactID(a string) error { return invalid(mavenlayout.ValidateArtifactID(a)) }

// ValidateVersion checks a version (letters, digits, '_', '-', '.',
// '+', '~'; no leading dot).
func ValidateVersion(v string) error { return invalid(mavenlayout.ValidateVersion(v)) }

// ValidateFileName checks a file name inside a version directory (see
// mavenlayout.ValidateFileName).
func ValidateFileName(artifactID, version, name string) error {
	return invalid(mavenlayout.ValidateFileName(artifactID, version, name))
}

// ParseChecksumBody reads a sidecar body: the hex digest, optionally
// followed by whitespace and a file name (sha1sum style), upper or lower
// case, with or without a trailing newline.
func ParseChecksumBody(alg mavenlayout.ChecksumAlgorithm, body []byte) (string, error) {
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
		if !mavenlayout.IsSnapshotVersion(sorted[i]) {
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
	latest := map[key]mavenlayout.SnapshotFile{}
	var newest mavenlayout.SnapshotFile
	found := false
	for _, n := range fileNames {
		f, ok := mavenlayout.ParseSnapshotFile(artifactID, version, n)
		if !ok {
			continue
		}
		k := key{f.Classifier, f.Extension}
		if cur, ok := latest[k]; !ok || f.After(cur) {
			latest[k] = f
		}
		if !found || f.After(newest) {
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
