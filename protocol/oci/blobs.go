package oci

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/protocol/blobredirect"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// getBlob serves GET and HEAD /v2/<name>/blobs/<digest>, with single byte
// ranges (206, Content-Range; 416 when unsatisfiable).
func (h *handler) getBlob(w http.ResponseWriter, r *http.Request) error {
	d, aerr := parseDigest(mux.Vars(r)["digest"])
	if aerr != nil {
		return aerr
	}
	t, b, err := h.targetBlob(r, d)
	if err != nil {
		return err
	}
	if t.Virtual {
		return h.virtualBlob(w, r, t, d)
	}
	if t.Remote != nil {
		return h.remoteBlob(w, r, t, d)
	}
	if b == nil {
		return container.BlobUnknown(d)
	}
	return h.serveBlob(w, r, d, b)
}

// serveBlob answers a GET or HEAD of a stored blob, with single byte
// ranges.
func (h *handler) serveBlob(w http.ResponseWriter, r *http.Request, d digest, b *store.Blob) error {
	h.blobHeaders(w, d)
	hdr := w.Header()
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, d.String()) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	if r.Method == http.MethodHead {
		hdr.Set("Content-Length", strconv.FormatInt(b.Size, 10))
		w.WriteHeader(http.StatusOK)
		return nil
	}
	br, aerr := parseRange(r.Header.Get("Range"), b.Size)
	if aerr != nil {
		return aerr
	}
	offset, length, status := int64(0), b.Size, http.StatusOK
	if br != nil {
		offset, length, status = br.Start, br.Length, http.StatusPartialContent
		hdr.Set("Content-Range", br.ContentRange(b.Size))
	}
	// The pull was counted by the caller.
	if blobredirect.Redirect(w, r, h.st, h.log, b, mtOctetStream, d.String()) {
		return nil
	}
	rc, err := h.st.OpenBlobObject(r.Context(), b, offset, length)
	if err != nil {
		return err
	}
	defer rc.Close()
	hdr.Set("Content-Length", strconv.FormatInt(length, 10))
	w.WriteHeader(status)
	if _, err := io.Copy(w, rc); err != nil && r.Context().Err() == nil {
		h.log.Warn("oci: blob download interrupted", "path", r.URL.Path, "digest", d.String(), "err", err)
	}
	return nil
}

// deleteBlob serves DELETE /v2/<name>/blobs/<digest>.
func (h *handler) deleteBlob(w http.ResponseWriter, r *http.Request) error {
	d, aerr := parseDigest(mux.Vars(r)["digest"])
	if aerr != nil {
		return aerr
	}
	t, err := h.target(r, auth.ActionDelete)
	if err != nil {
		return err
	}
	if err := h.container.DeleteBlob(r.Context(), t, d); err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// blobCreated answers a completed upload or mount.
func (h *handler) blobCreated(w http.ResponseWriter, t *container.Target, d digest) error {
	hdr := w.Header()
	hdr.Set("Location", h.location(h.v2Path(t, "/blobs/"+d.String())))
	hdr.Set("Docker-Content-Digest", d.String())
	hdr.Set("Content-Length", "0")
	w.WriteHeader(http.StatusCreated)
	return nil
}

// uploadAccepted answers an open upload session with its progress.
func (h *handler) uploadAccepted(w http.ResponseWriter, t *container.Target, u *store.Upload, status int) error {
	hdr := w.Header()
	hdr.Set("Location", h.location(h.v2Path(t, "/blobs/uploads/"+u.UploadID.String())))
	hdr.Set("Range", uploadRange(u.Size))
	hdr.Set("Docker-Upload-UUID", u.UploadID.String())
	hdr.Set("Content-Length", "0")
	w.WriteHeader(status)
	return nil
}

// uploadRange is the Range header of an upload holding size bytes
// ("0-0" when empty, as the reference registry answers).
func uploadRange(size int64) string {
	return fmt.Sprintf("0-%d", max(size-1, 0))
}

func rangeMismatch(size int64) *apiError {
	return newErr(http.StatusRequestedRangeNotSatisfiable, codeBlobUploadInvalid,
		"chunk is out of order: the upload holds %d bytes, send the next chunk from offset %d", size, size).
		withHeader("Range", uploadRange(size))
}

// startUpload serves POST /v2/<name>/blobs/uploads/: a cross-repository
// mount (?mount=&from=), a monolithic upload (?digest= with the body), or
// a new resumable session.
func (h *handler) startUpload(w http.ResponseWriter, r *http.Request) error {
	// Digests are checked before anything reaches the database.
	q := r.URL.Query()
	var mount, dg *digest
	if m := q.Get("mount"); m != "" {
		d, aerr := parseDigest(m)
		if aerr != nil {
			return aerr
		}
		mount = &d
	}
	if s := q.Get("digest"); s != "" {
		d, aerr := parseDigest(s)
		if aerr != nil {
			return aerr
		}
		dg = &d
	}
	t, err := h.target(r, auth.ActionWrite)
	if err != nil {
		return err
	}
	if mount != nil {
		ok, err := h.mount(r, t, *mount, q.Get("from"))
		if err != nil {
			return err
		}
		if ok {
			return h.blobCreated(w, t, *mount)
		}
		// Nothing to mount: fall back to a normal upload session.
	}
	if dg != nil {
		if _, err := h.container.PutBlob(r.Context(), t, r.Body, store.Expected{SHA256: *dg, Size: r.ContentLength}); err != nil {
			return err
		}
		return h.blobCreated(w, t, *dg)
	}
	u, err := h.st.StartUpload(r.Context(), t.NamespaceID, t.RepositoryID, store.UploadResumable)
	if err != nil {
		return err
	}
	return h.uploadAccepted(w, t, u, http.StatusAccepted)
}

// mount links an existing blob of the namespace into the target's image.
// from names the source image; empty mounts from an image of a repository
// of the namespace the caller may read. Either way the caller must be
// allowed to read the source (the same check as a pull of it): a mount is
// a read of the source's bytes. Anything that does not mount (another
// namespace, an unknown or unreadable source, a digest the source lacks)
// answers false, so the client uploads and learns nothing about blobs it
// may not read.
func (h *handler) mount(r *http.Request, t *container.Target, d digest, from string) (bool, error) {
	src, err := h.mountSource(r, t, d, from)
	if err != nil || src == nil {
		return false, err
	}
	if err := auth.Authorize(r.Context(), principal(r), auth.ActionRead, auth.ContainerTarget(src)); err != nil {
		if auth.IsDecision(err) {
			return false, nil
		}
		return false, err
	}
	return h.container.MountBlob(r.Context(), t, src, d)
}

// mountSource resolves the source of a mount: the image from names (in
// the target's namespace only), or, without from, an image holding the
// digest among the repositories the caller may read. nil when none.
func (h *handler) mountSource(r *http.Request, t *container.Target, d digest, from string) (*container.Target, error) {
	if from == "" {
		f := auth.ReadableRepositories(principal(r), auth.Namespace{ID: t.NamespaceID})
		return h.container.BlobSource(r.Context(), t,
			container.ReadFilter{All: f.All, Visibilities: f.Visibilities, IDs: f.IDs}, d)
	}
	n, aerr := parseName(from)
	if aerr != nil || n.Namespace != t.NamespaceSlug {
		return nil, nil
	}
	src, err := h.container.ResolveTargetIn(r.Context(), t.NamespaceID, n.Namespace, n.Repository, n.Image)
	if store.HasCode(err, container.CodeNameUnknown) || (err == nil && (src.Remote != nil || src.Virtual)) {
		// A pull-through cache or a virtual repository is no mount
		// source: the client uploads.
		return nil, nil
	}
	return src, err
}

// uploadRef parses the {upload} path variable.
func uploadID(r *http.Request) (uuid.UUID, *apiError) {
	id, err := uuid.Parse(mux.Vars(r)["upload"])
	if err != nil {
		return uuid.Nil, newErr(http.StatusNotFound, codeBlobUploadUnknown, "upload unknown")
	}
	return id, nil
}

// patchUpload serves PATCH /v2/<name>/blobs/uploads/<id>: a chunk (with
// Content-Range) or a stream (without).
func (h *handler) patchUpload(w http.ResponseWriter, r *http.Request) error {
	id, aerr := uploadID(r)
	if aerr != nil {
		return aerr
	}
	t, err := h.target(r, auth.ActionWrite)
	if err != nil {
		return err
	}
	ref := t.UploadRef(id)
	offset, err := chunkOffset(r, func() (int64, error) {
		u, err := h.st.UploadStatus(r.Context(), ref)
		if err != nil {
			return 0, err
		}
		return u.Size, nil
	})
	if err != nil {
		return err
	}
	u, err := h.st.AppendUpload(r.Context(), ref, offset, r.Body)
	if err != nil {
		return h.withLocation(err, t, id)
	}
	return h.uploadAccepted(w, t, u, http.StatusAccepted)
}

// withLocation adds the session's Location to a 416, so the client can
// resume from the Range it reports.
func (h *handler) withLocation(err error, t *container.Target, id uuid.UUID) error {
	if rm, ok := store.AsError(err); ok && rm.Code == store.CodeRangeMismatch {
		return rangeMismatch(rm.Size).
			withHeader("Location", h.location(h.v2Path(t, "/blobs/uploads/"+id.String()))).
			withHeader("Docker-Upload-UUID", id.String())
	}
	return err
}

// putUpload serves PUT /v2/<name>/blobs/uploads/<id>?digest=: it appends
// the last chunk (if any) and commits the upload.
func (h *handler) putUpload(w http.ResponseWriter, r *http.Request) error {
	id, aerr := uploadID(r)
	if aerr != nil {
		return aerr
	}
	dg := r.URL.Query().Get("digest")
	if dg == "" {
		return newErr(http.StatusBadRequest, codeDigestInvalid, "the digest query parameter is required to complete an upload")
	}
	d, aerr := parseDigest(dg)
	if aerr != nil {
		return aerr
	}
	t, err := h.target(r, auth.ActionWrite)
	if err != nil {
		return err
	}
	ref := t.UploadRef(id)
	var final io.Reader
	if r.ContentLength != 0 {
		if r.Header.Get("Content-Range") != "" {
			offset, err := chunkOffset(r, nil)
			if err != nil {
				return err
			}
			u, err := h.st.UploadStatus(r.Context(), ref)
			if err != nil {
				return err
			}
			if offset != u.Size {
				return h.withLocation(&store.Error{Code: store.CodeRangeMismatch, Size: u.Size}, t, id)
			}
		}
		final = r.Body
	}
	if _, err := h.container.CommitUpload(r.Context(), t, id, final, store.Expected{SHA256: d, Size: -1}); err != nil {
		return h.withLocation(err, t, id)
	}
	return h.blobCreated(w, t, d)
}

// uploadStatus serves GET /v2/<name>/blobs/uploads/<id>.
func (h *handler) uploadStatus(w http.ResponseWriter, r *http.Request) error {
	id, aerr := uploadID(r)
	if aerr != nil {
		return aerr
	}
	t, err := h.target(r, auth.ActionWrite)
	if err != nil {
		return err
	}
	u, err := h.st.UploadStatus(r.Context(), t.UploadRef(id))
	if err != nil {
		return err
	}
	return h.uploadAccepted(w, t, u, http.StatusNoContent)
}

// cancelUpload serves DELETE /v2/<name>/blobs/uploads/<id>.
func (h *handler) cancelUpload(w http.ResponseWriter, r *http.Request) error {
	id, aerr := uploadID(r)
	if aerr != nil {
		return aerr
	}
	t, err := h.target(r, auth.ActionWrite)
	if err != nil {
		return err
	}
	if err := h.st.CancelUpload(r.Context(), t.UploadRef(id)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
