package npm

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/artifact-registry/artifact-registry/auth"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// metadataAllowance is what a publish body may carry besides the base64
// tarball (package.json, readme, JSON envelope); a deprecate sends the
// whole packument back.
const metadataAllowance = 16 << 20

// publishBody is the document npm PUTs to /<name>: a publish (one version,
// one attachment) or a metadata update (the whole document, no attachment).
// Its members are matched by their exact names, as splitPublish matches
// _attachments and data (encoding/json alone would also take "_ATTACHMENTS").
type publishBody struct {
	ID          string
	Name        string
	DistTags    map[string]string
	Versions    map[string]json.RawMessage
	Attachments map[string]attachment
}

type attachment struct {
	Length *int64
}

// parsePublishBody decodes the document splitPublish returned.
func parsePublishBody(meta []byte) (*publishBody, error) {
	var top map[string]json.RawMessage
	if err := decodeJSON(meta, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, malformed("the document is not a JSON object")
	}
	doc := &publishBody{}
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
		doc.Attachments = make(map[string]attachment, len(atts))
	}
	for file, a := range atts {
		var att attachment
		if raw, ok := a["length"]; ok {
			if err := json.Unmarshal(raw, &att.Length); err != nil {
				return nil, malformed(fmt.Sprintf("_attachments[%q].length: %v", file, err))
			}
		}
		doc.Attachments[file] = att
	}
	return doc, nil
}

// putPackage is PUT /<name> (publish, or deprecate/undeprecate when the
// body has no attachment) and PUT /<name>/-rev/<rev> (unpublish of versions:
// the document without them). The body streams: its tarball goes to the
// blob layer while it is read (readPublishBody); then a publish is
// verified and stored (publish), a metadata update applied
// (updateMetadata).
func (h *handler) putPackage(req *request, name, rev string, withRev bool) error {
	// A PUT with a revision is npm's unpublish of versions: a deletion.
	action := auth.ActionWrite
	if withRev {
		action = auth.ActionDelete
	}
	repo, err := h.writeRepo(req, action)
	if err != nil {
		return err
	}
	return h.putPackageIn(req, repo, name, rev, withRev)
}

// putPackageIn is putPackage once authorized, into repo (the registry's
// own, or a virtual's deploy target).
func (h *handler) putPackageIn(req *request, repo *npmstore.Repository, name, rev string, withRev bool) error {
	var tgz *receivedTarball
	defer func() { tgz.discard(req.r.Context()) }()
	doc, err := h.readPublishBody(req, repo, name, withRev, &tgz)
	if err != nil {
		return err
	}
	if len(doc.Attachments) > 0 {
		if withRev {
			return errorf(http.StatusBadRequest, "a publish is a PUT to /%s without a revision", name)
		}
		if tgz == nil {
			return errorf(http.StatusBadRequest, "the attachment is empty")
		}
		// The publish owns the staged tarball from here.
		t := tgz
		tgz = nil
		return h.publish(req, repo, name, doc, t)
	}
	return h.updateMetadata(req, repo, name, rev, withRev, doc)
}

// readPublishBody reads a PUT /<name> body: the document without its
// tarball, parsed and checked against the URL's name. The tarball is
// staged while it is read and set in *tgz as soon as it is received
// (left nil when the body has none), whatever happens next: the caller
// discards it unless a publish takes it over.
func (h *handler) readPublishBody(req *request, repo *npmstore.Repository, name string, withRev bool, tgz **receivedTarball) (*publishBody, error) {
	limit := h.opts.MaxPublishSize
	if req.r.ContentLength > limit {
		return nil, tooLarge(limit, "the publish body")
	}
	body := newLimitedBody(req, limit)
	meta, err := splitPublish(body, metadataAllowance, func(_ string, data io.Reader) error {
		if withRev {
			return errorf(http.StatusBadRequest, "a publish is a PUT to /%s without a revision", name)
		}
		var err error
		*tgz, err = h.receiveTarball(req, repo, data)
		return err
	})
	switch {
	case body.over:
		return nil, tooLarge(limit, "the publish body")
	case body.err != nil:
		return nil, errorf(http.StatusBadRequest, "reading the request body: %v", body.err)
	}
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return nil, ae
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, malformed("unexpected end of the body")
	case err != nil:
		return nil, err
	}
	doc, err := parsePublishBody(meta)
	if err != nil {
		return nil, err
	}
	if err := checkDocumentName(name, doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// checkDocumentName refuses a document that names another package than
// the URL.
func checkDocumentName(name string, doc *publishBody) error {
	if doc.Name != "" && doc.Name != name {
		return errorf(http.StatusBadRequest, "the document's name %q does not match the URL's %q", doc.Name, name)
	}
	if doc.ID != "" && doc.ID != name {
		return errorf(http.StatusBadRequest, "the document's _id %q does not match the URL's %q", doc.ID, name)
	}
	return nil
}

// publish handles the publish of one version with its tarball: verify
// the document against the tarball (validatePublication), then store it
// (storePublication). It owns tgz: a refused publish discards it.
func (h *handler) publish(req *request, repo *npmstore.Repository, name string, doc *publishBody, tgz *receivedTarball) error {
	stored := false
	defer func() {
		if !stored {
			tgz.discard(req.r.Context())
		}
	}()
	pub, err := validatePublication(name, doc, tgz.tarballFacts, h.publisher(req))
	if err != nil {
		return err
	}
	stored = true // the store owns the staged tarball
	return h.storePublication(req, repo, name, pub, tgz)
}

// storePublication stores a verified publish (the store owns the staged
// tarball from here, whatever the outcome) and answers 201.
func (h *handler) storePublication(req *request, repo *npmstore.Repository, name string, pub *publication, tgz *receivedTarball) error {
	res, err := h.npm.Publish(req.r.Context(), repo, npmstore.PublishRequest{
		Name:        name,
		Version:     pub.version,
		PackageJSON: pub.packageJSON,
		FileName:    tarballFileName(name, pub.version),
		Staged:      tgz.blob,
		Tags:        pub.tags,
		Hook:        h.writeHook(repo),
	})
	if err != nil {
		return err
	}
	h.log.Debug("npm publish", "namespace", repo.NamespaceSlug, "repository", repo.RepositoryName,
		"package", name, "version", pub.version, "size", tgz.size, "tags", res.Tags)
	msg := "created new package"
	if !res.PackageCreated {
		msg = "published " + name + "@" + pub.version
	}
	writeJSON(req.w, http.StatusCreated, map[string]any{"ok": msg, "success": true})
	return nil
}

// publication is what a publish stores besides its tarball.
type publication struct {
	version     string
	packageJSON []byte // the version's package.json as the registry serves it
	tags        []string
}

// validatePublication checks a publish document against its tarball's
// facts and builds what is stored; it has no side effect, so that what a
// publish accepts can be tested (and fuzzed) without a database.
func validatePublication(name string, doc *publishBody, tgz tarballFacts, publisher string) (*publication, error) {
	if err := validateName(name); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid package name %q: %v", name, err)
	}
	if doc.Name == "" {
		return nil, errorf(http.StatusBadRequest, "the document has no name")
	}
	if len(doc.Versions) != 1 {
		return nil, errorf(http.StatusBadRequest, "a publish carries exactly one version, this one has %d", len(doc.Versions))
	}
	if len(doc.Attachments) != 1 {
		return nil, errorf(http.StatusBadRequest, "a publish carries exactly one attachment, this one has %d", len(doc.Attachments))
	}
	version, manifest, dist, err := publishedManifest(name, doc)
	if err != nil {
		return nil, err
	}
	if att := onlyAttachment(doc); att.Length != nil && *att.Length != tgz.size {
		return nil, errorf(http.StatusBadRequest, "the attachment's length is %d but its data has %d bytes", *att.Length, tgz.size)
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
	return &publication{version: version, packageJSON: pj, tags: tags}, nil
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
func publishedManifest(name string, doc *publishBody) (string, map[string]json.RawMessage, publishDist, error) {
	var version string
	var rawManifest json.RawMessage
	for v, m := range doc.Versions {
		version, rawManifest = v, m
	}
	var dist publishDist
	if !npmstore.ValidVersion(version) {
		return "", nil, dist, errorf(http.StatusBadRequest, "invalid version %q: versions are SemVer 2.0 (x.y.z[-prerelease]) without build metadata", version)
	}
	var manifest map[string]json.RawMessage
	if err := json.Unmarshal(rawManifest, &manifest); err != nil || manifest == nil {
		return "", nil, dist, errorf(http.StatusBadRequest, "versions[%q] is not a JSON object", version)
	}
	var mName, mVersion string
	if err := json.Unmarshal(manifest["name"], &mName); err != nil || mName != name {
		return "", nil, dist, errorf(http.StatusBadRequest, "versions[%q].name must be %q", version, name)
	}
	if err := json.Unmarshal(manifest["version"], &mVersion); err != nil || mVersion != version {
		return "", nil, dist, errorf(http.StatusBadRequest, "versions[%q].version must be %q", version, version)
	}
	if raw, ok := manifest["dist"]; !ok || json.Unmarshal(raw, &dist) != nil {
		return "", nil, dist, errorf(http.StatusBadRequest, "versions[%q].dist is missing or not an object", version)
	}
	return version, manifest, dist, nil
}

// checkDist checks the digests the client declares against the tarball's:
// at least one of them, and all of those the registry can verify.
func checkDist(version string, dist publishDist, tgz tarballFacts) error {
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(tgz.sha512[:])
	shasum := hex.EncodeToString(tgz.sha1[:])
	if dist.Integrity == "" && dist.Shasum == "" {
		return errorf(http.StatusBadRequest, "versions[%q].dist has neither integrity nor shasum", version)
	}
	if dist.Shasum != "" && !strings.EqualFold(dist.Shasum, shasum) {
		return errorf(http.StatusBadRequest, "shasum mismatch: the tarball's sha1 is %s, dist.shasum says %s", shasum, dist.Shasum)
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
			want = "sha1-" + base64.StdEncoding.EncodeToString(tgz.sha1[:])
		default:
			continue
		}
		if strings.SplitN(e, "?", 2)[0] != want {
			return errorf(http.StatusBadRequest, "integrity mismatch: the tarball is %s, dist.integrity says %s", want, e)
		}
		checked = true
	}
	if !checked && dist.Shasum == "" {
		return errorf(http.StatusBadRequest, "dist.integrity has no sha512 or sha1 entry to verify the tarball against")
	}
	return nil
}

// publishTags are the dist-tags of a publish: every one points at the
// published version.
func publishTags(doc *publishBody, version string) ([]string, error) {
	var tags []string
	for tag, v := range doc.DistTags {
		if v != version {
			return nil, errorf(http.StatusBadRequest, "dist-tags[%q] is %q; a publish can only tag the version it publishes (%s)", tag, v, version)
		}
		if err := validateTag(tag); err != nil {
			return nil, errorf(http.StatusBadRequest, "%v", err)
		}
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	return tags, nil
}

// storedPackageJSON is the client's package.json with the registry's
// dist, _id, _npmUser and install hints.
func storedPackageJSON(name, version string, manifest map[string]json.RawMessage, dist publishDist, tgz tarballFacts, publisher string) ([]byte, error) {
	newDist := map[string]json.RawMessage{
		"integrity": jsonString("sha512-" + base64.StdEncoding.EncodeToString(tgz.sha512[:])),
		"shasum":    jsonString(hex.EncodeToString(tgz.sha1[:])),
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
	manifest["_hasShrinkwrap"], _ = json.Marshal(tgz.shrinkwrap)
	if hasInstallScript(manifest["scripts"], tgz.gyp) {
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
		return nil, errorf(http.StatusBadRequest, "versions[%q]: %v", version, err)
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
func onlyAttachment(doc *publishBody) attachment {
	for _, a := range doc.Attachments {
		return a
	}
	return attachment{}
}

// updateMetadata handles a PUT without attachments: deprecate/undeprecate
// (PUT /<name>: the whole document with "deprecated" set, or "" to clear)
// and unpublish of versions (PUT /<name>/-rev/<rev>: the document without
// them). dist-tags in the body are ignored: tags change through the
// dist-tag endpoints, and latest is recomputed by the server.
func (h *handler) updateMetadata(req *request, repo *npmstore.Repository, name, rev string, withRev bool, doc *publishBody) error {
	if !plausibleName(name) {
		return errorf(http.StatusNotFound, "no such package available")
	}
	upd := npmstore.PackageUpdate{Name: name, Deprecations: map[string]string{}, Hook: h.writeHook(repo)}
	for v, raw := range doc.Versions {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return errorf(http.StatusBadRequest, "versions[%q] is not a JSON object", v)
		}
		dep, ok := m["deprecated"]
		if !ok {
			continue // unchanged
		}
		var msg string
		switch {
		case string(dep) == "null" || string(dep) == "false":
		case json.Unmarshal(dep, &msg) != nil:
			return errorf(http.StatusBadRequest, "versions[%q].deprecated must be a string", v)
		}
		upd.Deprecations[v] = msg
	}
	if withRev {
		if doc.Versions == nil {
			return errorf(http.StatusBadRequest, "the document has no versions: to unpublish the whole package, DELETE /%s/-rev/<rev>", name)
		}
		upd.Rev = rev
		upd.Keep = []string{}
		for v := range doc.Versions {
			upd.Keep = append(upd.Keep, v)
		}
	}
	res, err := h.npm.UpdatePackage(req.r.Context(), repo, upd)
	if err != nil {
		return err
	}
	h.log.Debug("npm package changed", "namespace", repo.NamespaceSlug, "repository", repo.RepositoryName, "package", name,
		"deprecated", res.Deprecated, "undeprecated", res.Undeprecated, "unpublished", res.Unpublished,
		"latest", res.Latest, "package_deleted", res.PackageDeleted)
	writeJSON(req.w, http.StatusCreated, map[string]any{"ok": "package changed", "success": true})
	return nil
}

// deletePackage is DELETE /<name>/-rev/<rev>: unpublish the whole package.
func (h *handler) deletePackage(req *request, name, rev string) error {
	repo, err := h.writeRepo(req, auth.ActionDelete)
	if err != nil {
		return err
	}
	if !plausibleName(name) {
		return errorf(http.StatusNotFound, "no such package available")
	}
	if err := h.npm.DeletePackage(req.r.Context(), repo, name, rev, h.writeHook(repo)); err != nil {
		return err
	}
	writeJSON(req.w, http.StatusCreated, map[string]any{"ok": "package removed"})
	return nil
}

// deleteTarball is DELETE /<name>/-/<file>/-rev/<rev>, sent by npm after
// the PUT that removed the version (then nothing is left to do); a DELETE
// of an active version's tarball unpublishes that version.
func (h *handler) deleteTarball(req *request, name, file, rev string) error {
	repo, err := h.writeRepo(req, auth.ActionDelete)
	if err != nil {
		return err
	}
	version, ok := versionFromFileName(name, file)
	if !plausibleName(name) || !ok {
		return errorf(http.StatusNotFound, "no such tarball: %s", file)
	}
	if err := h.npm.UnpublishFile(req.r.Context(), repo, name, version, file, rev, h.writeHook(repo)); err != nil {
		return err
	}
	writeJSON(req.w, http.StatusCreated, map[string]any{"ok": "tarball removed"})
	return nil
}
