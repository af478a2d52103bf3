package npm

import (
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
	"github.com/artifact-registry/artifact-registry/protocol/blobredirect"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// getTarball is GET/HEAD /<name>/-/<file>.tgz.
func (h *handler) getTarball(req *request, name, file string) error {
	repo, err := h.readRepo(req)
	if err != nil {
		return err
	}
	return h.hostedTarball(req, repo, name, file)
}

// hostedTarball serves a tarball of hosted repository repo (authorized
// by the caller), counted as a download of repo.
func (h *handler) hostedTarball(req *request, repo *npmstore.Repository, name, file string) error {
	version, ok := versionFromFileName(name, file)
	if !npmname.Plausible(name) || !ok {
		return errorf(http.StatusNotFound, "no such tarball: %s", file)
	}
	t, err := h.npm.Tarball(req.r.Context(), repo, name, version, file)
	if err != nil {
		return err
	}
	etag := `"` + hex.EncodeToString(t.Blob.SHA256[:]) + `"`
	w := req.w
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	httpsafe.Attachment(w.Header(), file)
	if inm := req.r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(t.Blob.Size, 10))
	if req.r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	counted := func() {
		h.downloads.Add(npmstore.Download{
			NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID,
			PackageID: t.Package.PackageID, VersionID: t.VersionID, At: time.Now(),
		})
	}
	if blobredirect.Redirect(w, req.r, h.st, h.log, &t.Blob, "application/octet-stream", file) {
		counted()
		return nil
	}
	rc, err := h.st.OpenBlobObject(req.r.Context(), &t.Blob, 0, -1)
	if err != nil {
		w.Header().Del("Content-Length")
		return err
	}
	defer rc.Close()
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rc); err != nil {
		return nil // the client went away; the status is already sent
	}
	counted()
	return nil
}

// putDistTag is PUT /-/package/<name>/dist-tags/<tag>; the body is the
// version as a JSON string.
func (h *handler) putDistTag(req *request, name, tag string) error {
	repo, err := h.writeRepo(req, auth.ActionWrite)
	if err != nil {
		return err
	}
	return h.putDistTagIn(req, repo, name, tag)
}

// putDistTagIn is putDistTag once authorized, in repo.
func (h *handler) putDistTagIn(req *request, repo *npmstore.Repository, name, tag string) error {
	if err := validateTag(tag); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	var version string
	if err := readJSON(req, &version); err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.status == http.StatusBadRequest {
			return errorf(http.StatusBadRequest, "the body must be the version as a JSON string, like \"1.0.0\": %s", ae.message)
		}
		return err
	}
	if !npmsemver.ValidVersion(version) {
		return errorf(http.StatusBadRequest, "invalid version %q", version)
	}
	if !npmname.Plausible(name) {
		return errorf(http.StatusNotFound, "no such package available")
	}
	if _, err := h.npm.SetTag(req.r.Context(), repo, name, tag, version, h.writeHook(repo)); err != nil {
		return err
	}
	writeJSON(req.w, http.StatusCreated, map[string]string{"ok": "package tagged"})
	return nil
}

// deleteDistTag is DELETE /-/package/<name>/dist-tags/<tag>.
func (h *handler) deleteDistTag(req *request, name, tag string) error {
	repo, err := h.writeRepo(req, auth.ActionWrite)
	if err != nil {
		return err
	}
	return h.deleteDistTagIn(req, repo, name, tag)
}

// deleteDistTagIn is deleteDistTag once authorized, in repo.
func (h *handler) deleteDistTagIn(req *request, repo *npmstore.Repository, name, tag string) error {
	if !npmname.Plausible(name) {
		return errorf(http.StatusNotFound, "no such package available")
	}
	if err := h.npm.RemoveTag(req.r.Context(), repo, name, tag, h.writeHook(repo)); err != nil {
		return err
	}
	writeJSON(req.w, http.StatusCreated, map[string]string{"ok": "tag removed"})
	return nil
}
