package npm

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmpublish"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// publishError answers a refusal of package npmpublish as npm does (400,
// or 413 for a limit) and passes other errors through.
func publishError(err error) error {
	var pe *npmpublish.Error
	switch {
	case !errors.As(err, &pe):
		return err
	case pe.TooLarge:
		return errorf(http.StatusRequestEntityTooLarge, "%s", pe.Message)
	}
	return errorf(http.StatusBadRequest, "%s", pe.Message)
}

// malformed is the 400 of a body that is not JSON.
func malformed(msg string) *apiError {
	return errorf(http.StatusBadRequest, "malformed JSON body: %s", msg)
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
func (h *handler) readPublishBody(req *request, repo *npmstore.Repository, name string, withRev bool, tgz **receivedTarball) (*npmpublish.Document, error) {
	limit := h.opts.MaxPublishSize
	if req.r.ContentLength > limit {
		return nil, tooLarge(limit, "the publish body")
	}
	body := newLimitedBody(req, limit)
	meta, err := npmpublish.Split(body, npmpublish.MetadataAllowance, func(_ string, data io.Reader) error {
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
	err = publishError(err)
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return nil, ae
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, malformed("unexpected end of the body")
	case err != nil:
		return nil, err
	}
	doc, err := npmpublish.ParseDocument(meta)
	if err != nil {
		return nil, publishError(err)
	}
	if err := npmpublish.CheckName(name, doc); err != nil {
		return nil, publishError(err)
	}
	return doc, nil
}

// publish handles the publish of one version with its tarball: verify
// the document against the tarball (npmpublish.Validate), then store it
// (storePublication). It owns tgz: a refused publish discards it.
func (h *handler) publish(req *request, repo *npmstore.Repository, name string, doc *npmpublish.Document, tgz *receivedTarball) error {
	stored := false
	defer func() {
		if !stored {
			tgz.discard(req.r.Context())
		}
	}()
	pub, err := npmpublish.Validate(name, doc, tgz.Facts, h.publisher(req))
	if err != nil {
		return publishError(err)
	}
	stored = true // the store owns the staged tarball
	return h.storePublication(req, repo, name, pub, tgz)
}

// storePublication stores a verified publish (the store owns the staged
// tarball from here, whatever the outcome) and answers 201.
func (h *handler) storePublication(req *request, repo *npmstore.Repository, name string, pub *npmpublish.Publication, tgz *receivedTarball) error {
	res, err := h.npm.Publish(req.r.Context(), repo, npmstore.PublishRequest{
		Name:        name,
		Version:     pub.Version,
		PackageJSON: pub.PackageJSON,
		FileName:    tarballFileName(name, pub.Version),
		Staged:      tgz.blob,
		Tags:        pub.Tags,
		Hook:        h.writeHook(repo),
	})
	if err != nil {
		return err
	}
	h.log.Debug("npm publish", "namespace", repo.NamespaceSlug, "repository", repo.RepositoryName,
		"package", name, "version", pub.Version, "size", tgz.Size, "tags", res.Tags)
	msg := "created new package"
	if !res.PackageCreated {
		msg = "published " + name + "@" + pub.Version
	}
	writeJSON(req.w, http.StatusCreated, map[string]any{"ok": msg, "success": true})
	return nil
}

// updateMetadata handles a PUT without attachments: deprecate/undeprecate
// (PUT /<name>: the whole document with "deprecated" set, or "" to clear)
// and unpublish of versions (PUT /<name>/-rev/<rev>: the document without
// them). dist-tags in the body are ignored: tags change through the
// dist-tag endpoints, and latest is recomputed by the server.
func (h *handler) updateMetadata(req *request, repo *npmstore.Repository, name, rev string, withRev bool, doc *npmpublish.Document) error {
	if !npmname.Plausible(name) {
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
	if !npmname.Plausible(name) {
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
	if !npmname.Plausible(name) || !ok {
		return errorf(http.StatusNotFound, "no such tarball: %s", file)
	}
	if err := h.npm.UnpublishFile(req.r.Context(), repo, name, version, file, rev, h.writeHook(repo)); err != nil {
		return err
	}
	writeJSON(req.w, http.StatusCreated, map[string]any{"ok": "tarball removed"})
	return nil
}
