package npmpublish

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
)

// MetadataAllowance is what a publish body may carry besides the base64
// tarball (package.json, readme, JSON envelope); a deprecate sends the
// whole packument back.
const MetadataAllowance = 16 << 20

// Document is the document npm PUTs to /<name>: a publish (one version,
// one attachment) or a metadata update (the whole document, no attachment).
// Its members are matched by their exact names, as Split matches
// _attachments and data (encoding/json alone would also take "_ATTACHMENTS").
type Document struct {
	ID          string
	Name        string
	DistTags    map[string]string
	Versions    map[string]json.RawMessage
	Attachments map[string]Attachment
}

// Attachment is a member of _attachments, its data split out.
type Attachment struct {
	Length *int64
}

// ParseDocument decodes the document Split returned.
func ParseDocument(meta []byte) (*Document, error) {
	var top map[string]json.RawMessage
	if err := decodeJSON(meta, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, malformed("the document is not a JSON object")
	}
	doc := &Document{}
	var atts map[string]map[string]json.RawMessage
	for key, v := range map[string]any{"_id": &doc.ID, "name": &doc.Name, "dist-tags": &doc.DistTags,
		"versions": &doc.Versions, "_attachments": &atts} {
		if raw, ok := top[key]; ok {
			if err := json.Unmarshal(raw, v); err != nil {
				return nil, malformed(fmt.Sprintf("%s: %v", key, err))
			}
		}
	}
	if len(atts) > 0 {
		doc.Attachments = make(map[string]Attachment, len(atts))
	}
	for file, a := range atts {
		var att Attachment
		if raw, ok := a["length"]; ok {
			if err := json.Unmarshal(raw, &att.Length); err != nil {
				return nil, malformed(fmt.Sprintf("_attachments[%q].length: %v", file, err))
			}
		}
		doc.Attachments[file] = att
	}
	return doc, nil
}

// CheckName refuses a document that names another package than the
// URL.
func CheckName(name string, doc *Document) error {
	if doc.Name != "" && doc.Name != name {
		return refuse("the document's name %q does not match the URL's %q", doc.Name, name)
	}
	if doc.ID != "" && doc.ID != name {
		return refuse("the document's _id %q does not match the URL's %q", doc.ID, name)
	}
	return nil
}

// Publication is what a publish stores besides its tarball.
type Publication struct {
	Version     string
	PackageJSON []byte // the version's package.json as the registry serves it
	Tags        []string
}

// Validate checks a publish document against its tarball's facts and
// builds what is stored; it has no side effect, so that what a publish
// accepts can be tested (and fuzzed) without a database.
func Validate(name string, doc *Document, tgz Facts, publisher string) (*Publication, error) {
	if err := npmname.Validate(name); err != nil {
		return nil, refuse("invalid package name %q: %v", name, err)
	}
	if doc.Name == "" {
		return nil, refuse("the document has no name")
	}
	if len(doc.Versions) != 1 {
		return nil, refuse("a publish carries exactly one version, this one has %d", len(doc.Versions))
	}
	if len(doc.Attachments) != 1 {
		return nil, refuse("a publish carries exactly one attachment, this one has %d", len(doc.Attachments))
	}
	version, manifest, dist, err := publishedManifest(name, doc)
	if err != nil {
		return nil, err
	}
	if att := onlyAttachment(doc); att.Length != nil && *att.Length != tgz.Size {
		return nil, refuse("the attachment's length is %d but its data has %d bytes", *att.Length, tgz.Size)
	}
	if err := checkDist(version, dist, tgz); err != nil {
		return nil, err
	}
	tags, err := publishTags(doc, version)
	if err != nil {
		return nil, err
	}
	pj, err := storedPackageJSON(name, version, manifest, dist, tgz, publisher)
	if err != nil {
		return nil, err
	}
	return &Publication{Version: version, PackageJSON: pj, Tags: tags}, nil
}

// publishDist is what a publish's dist declares.
type publishDist struct {
	Integrity    string          `json:"integrity"`
	Shasum       string          `json:"shasum"`
	FileCount    json.RawMessage `json:"fileCount"`
	UnpackedSize json.RawMessage `json:"unpackedSize"`
}

// publishedManifest is the one version of a publish, its package.json
// (naming the package and the version) and its dist.
func publishedManifest(name string, doc *Document) (string, map[string]json.RawMessage, publishDist, error) {
	var version string
	var rawManifest json.RawMessage
	for v, m := range doc.Versions {
		version, rawManifest = v, m
	}
	var dist publishDist
	if !npmsemver.ValidVersion(version) {
		return "", nil, dist, refuse("invalid version %q: versions are SemVer 2.0 (x.y.z[-prerelease]) without build metadata", version)
	}
	var manifest map[string]json.RawMessage
	if err := json.Unmarshal(rawManifest, &manifest); err != nil || manifest == nil {
		return "", nil, dist, refuse("versions[%q] is not a JSON object", version)
	}
	var mName, mVersion string
	if err := json.Unmarshal(manifest["name"], &mName); err != nil || mName != name {
		return "", nil, dist, refuse("versions[%q].name must be %q", version, name)
	}
	if err := json.Unmarshal(manifest["version"], &mVersion); err != nil || mVersion != version {
		return "", nil, dist, refuse("versions[%q].version must be %q", version, version)
	}
	if raw, ok := manifest["dist"]; !ok || json.Unmarshal(raw, &dist) != nil {
		return "", nil, dist, refuse("versions[%q].dist is missing or not an object", version)
	}
	return version, manifest, dist, nil
}

// checkDist checks the digests the client declares against the tarball's:
// at least one of them, and all of those the registry can verify.
func checkDist(version string, dist publishDist, tgz Facts) error {
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(tgz.SHA512[:])
	shasum := hex.EncodeToString(tgz.SHA1[:])
	if dist.Integrity == "" && dist.Shasum == "" {
		return refuse("versions[%q].dist has neither integrity nor shasum", version)
	}
	if dist.Shasum != "" && !strings.EqualFold(dist.Shasum, shasum) {
		return refuse("shasum mismatch: the tarball's sha1 is %s, dist.shasum says %s", shasum, dist.Shasum)
	}
	if dist.Integrity == "" {
		return nil
	}
	checked := false
	for _, e := range strings.Fields(dist.Integrity) {
		var want string
		switch algo, _, _ := strings.Cut(e, "-"); algo {
		case "sha512":
			want = integrity
		case "sha1":
			want = "sha1-" + base64.StdEncoding.EncodeToString(tgz.SHA1[:])
		default:
			continue
		}
		if strings.SplitN(e, "?", 2)[0] != want {
			return refuse("integrity mismatch: the tarball is %s, dist.integrity says %s", want, e)
		}
		checked = true
	}
	if !checked && dist.Shasum == "" {
		return refuse("dist.integrity has no sha512 or sha1 entry to verify the tarball against")
	}
	return nil
}

// publishTags are the dist-tags of a publish: every one points at the
// published version.
func publishTags(doc *Document, version string) ([]string, error) {
	var tags []string
	for tag, v := range doc.DistTags {
		if v != version {
			return nil, refuse("dist-tags[%q] is %q; a publish can only tag the version it publishes (%s)", tag, v, version)
		}
		if err := npmsemver.ValidateDistTag(tag); err != nil {
			return nil, refuse("%v", err)
		}
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	return tags, nil
}

// storedPackageJSON is the client's package.json with the registry's
// dist, _id, _npmUser and install hints.
func storedPackageJSON(name, version string, manifest map[string]json.RawMessage, dist publishDist, tgz Facts, publisher string) ([]byte, error) {
	newDist := map[string]json.RawMessage{
		"integrity": jsonString("sha512-" + base64.StdEncoding.EncodeToString(tgz.SHA512[:])),
		"shasum":    jsonString(hex.EncodeToString(tgz.SHA1[:])),
	}
	for k, raw := range map[string]json.RawMessage{"fileCount": dist.FileCount, "unpackedSize": dist.UnpackedSize} {
		var n int64
		if raw != nil && json.Unmarshal(raw, &n) == nil && n >= 0 {
			newDist[k] = raw
		}
	}
	manifest["dist"], _ = json.Marshal(newDist)
	manifest["_id"] = jsonString(name + "@" + version)
	manifest["_npmUser"], _ = json.Marshal(map[string]string{"name": publisher, "email": ""})
	manifest["_hasShrinkwrap"], _ = json.Marshal(tgz.Shrinkwrap)
	if hasInstallScript(manifest["scripts"], tgz.Gyp) {
		manifest["hasInstallScript"] = json.RawMessage("true")
	} else {
		delete(manifest, "hasInstallScript")
	}
	if dep, ok := manifest["deprecated"]; ok {
		var s string
		if json.Unmarshal(dep, &s) != nil || s == "" {
			delete(manifest, "deprecated")
		}
	}
	for _, k := range []string{"_attachments", "_rev", "_resolved", "_integrity", "_from"} {
		delete(manifest, k)
	}
	pj, err := json.Marshal(manifest)
	if err != nil {
		return nil, refuse("versions[%q]: %v", version, err)
	}
	return pj, nil
}

// hasInstallScript mirrors npm: an install, preinstall or postinstall
// script, or a binding.gyp (npm then runs node-gyp rebuild).
func hasInstallScript(scripts json.RawMessage, gyp bool) bool {
	var s map[string]any
	_ = json.Unmarshal(scripts, &s)
	if _, ok := s["install"]; ok {
		return true
	}
	if _, ok := s["preinstall"]; ok {
		return true
	}
	if _, ok := s["postinstall"]; ok {
		return true
	}
	return gyp
}

// onlyAttachment is the attachment of a publish (checked to be one).
func onlyAttachment(doc *Document) Attachment {
	for _, a := range doc.Attachments {
		return a
	}
	return Attachment{}
}

// jsonString encodes a string as JSON.
func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
