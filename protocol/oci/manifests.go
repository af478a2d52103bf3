package oci

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// getManifest serves GET and HEAD /v2/<name>/manifests/<reference>. The
// stored media type is always returned as is (every client accepts what it
// pushed; no schema conversion).
func (h *handler) getManifest(w http.ResponseWriter, r *http.Request) error {
	ref, aerr := parseReference(mux.Vars(r)["reference"])
	if aerr != nil {
		return aerr
	}
	t, m, err := h.targetManifest(r, auth.ActionRead, ref)
	if err != nil {
		return err
	}
	if t.Virtual {
		return h.virtualManifest(w, r, t, ref)
	}
	if t.Remote != nil {
		return h.remoteManifest(w, r, t, ref)
	}
	if m == nil && !ref.IsTag {
		return container.ManifestUnknownDigest(ref.Digest)
	}
	if m == nil {
		return container.ManifestUnknown()
	}
	return h.serveManifest(w, r, t, m)
}

// hostedManifest looks a reference up in a hosted image.
func (h *handler) hostedManifest(r *http.Request, t *container.Target, ref reference) (*container.ManifestRow, error) {
	if ref.IsTag {
		return h.container.ManifestByTag(r.Context(), t, ref.Tag)
	}
	return h.container.ManifestByDigest(r.Context(), t, ref.Digest)
}

// serveManifest answers a GET or HEAD of a manifest of a hosted image.
func (h *handler) serveManifest(w http.ResponseWriter, r *http.Request, t *container.Target, m *container.ManifestRow) error {
	var err error
	dg := digest(m.Digest).String()
	hdr := w.Header()
	hdr.Set("Content-Type", m.MediaType)
	hdr.Set("Docker-Content-Digest", dg)
	hdr.Set("ETag", `"`+dg+`"`)
	httpsafe.Attachment(hdr, dg)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, dg) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	// The payload cache (by digest) spares the blob lookup and the storage
	// read; it is consulted only after the database said the manifest is
	// live in the image.
	payload, cached := h.payloads.get(digest(m.Digest))
	size := int64(len(payload))
	if !cached {
		if err := h.container.ManifestPayload(r.Context(), t, m); err != nil {
			return err
		}
		size = m.Payload.Size
	}
	hdr.Set("Content-Length", strconv.FormatInt(size, 10))
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return nil
	}
	if !cached {
		if payload, err = h.container.ReadManifest(r.Context(), m, maxManifestSize); err != nil {
			return err
		}
		if len(payload) <= payloadCacheMax {
			h.payloads.put(digest(m.Digest), payload)
		}
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(payload)
	// A GET is a pull: its counters are recorded off the request path.
	h.pulls.Add(h.container.Pull(t))
	return nil
}

func etagMatch(header, dg string) bool {
	for _, v := range strings.Split(header, ",") {
		v = strings.TrimSpace(v)
		v = strings.TrimPrefix(v, "W/")
		if v == "*" || strings.Trim(v, `"`) == dg {
			return true
		}
	}
	return false
}

// putManifest serves PUT /v2/<name>/manifests/<reference>[?tag=...].
func (h *handler) putManifest(w http.ResponseWriter, r *http.Request) error {
	ref, aerr := parseReference(mux.Vars(r)["reference"])
	if aerr != nil {
		return aerr
	}
	// Credentials first (anonymous callers never write), then the body:
	// every digest in it is checked before the name is resolved.
	n, aerr := parseName(mux.Vars(r)["name"])
	if aerr != nil {
		return aerr
	}
	if err := h.requireCredential(r, n, auth.ActionWrite); err != nil {
		return err
	}
	if r.ContentLength > maxManifestSize {
		return newErr(http.StatusRequestEntityTooLarge, codeSizeInvalid,
			"manifest is %d bytes; the limit is %d bytes (4 MiB)", r.ContentLength, maxManifestSize)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxManifestSize+1))
	if err != nil {
		return newErr(http.StatusBadRequest, codeManifestInvalid, "reading the manifest body: %v", err)
	}
	p, aerr := parseManifest(r.Header.Get("Content-Type"), body)
	if aerr != nil {
		return aerr
	}
	if !ref.IsTag && ref.Digest != p.Digest {
		return newErr(http.StatusBadRequest, codeDigestInvalid,
			"manifest digest %s does not match the reference %s", p.Digest, ref.Digest).
			withDetail(map[string]string{"digest": ref.Digest.String()})
	}
	var tags []string
	if ref.IsTag {
		tags = append(tags, ref.Tag)
	}
	queryTags := r.URL.Query()["tag"]
	for _, tg := range queryTags {
		if !tagPattern.MatchString(tg) {
			return newErr(http.StatusBadRequest, codeManifestInvalid,
				"invalid tag %q: tags must match [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}", tg)
		}
		tags = append(tags, tg)
	}
	t, err := h.target(r, auth.ActionWrite)
	if err != nil {
		return err
	}
	in := container.ManifestPut{Digest: p.Digest, MediaType: p.MediaType, Payload: p.Payload, Tags: tags,
		ArtifactType: subjectArtifactType(p)}
	if p.Subject != nil {
		s := [32]byte(*p.Subject)
		in.Subject = &s
	}
	for _, b := range p.Blobs {
		in.Blobs = append(in.Blobs, container.BlobRef{SHA256: b.Digest, Size: b.Size})
	}
	for _, c := range p.Children {
		in.Children = append(in.Children, c)
	}
	if _, err := h.container.PutManifest(r.Context(), t, in); err != nil {
		return err
	}
	h.referrers.put(p.Digest, referrerInfoOf(p))
	// Bytes that hash to their digest: the first GET after the push (a
	// pull of what was just pushed, the common case) is served from
	// memory too. A copy, as the request's buffer is not ours to keep.
	if len(p.Payload) <= payloadCacheMax {
		h.payloads.put(p.Digest, bytes.Clone(p.Payload))
	}
	hdr := w.Header()
	hdr.Set("Location", h.location(h.v2Path(t, "/manifests/"+p.Digest.String())))
	hdr.Set("Docker-Content-Digest", p.Digest.String())
	if p.Subject != nil {
		hdr.Set("OCI-Subject", p.Subject.String())
	}
	for _, tg := range queryTags {
		hdr.Add("OCI-Tag", tg)
	}
	hdr.Set("Content-Length", "0")
	w.WriteHeader(http.StatusCreated)
	return nil
}

// deleteManifest serves DELETE /v2/<name>/manifests/<reference>: a tag
// deletes the tag, a digest soft-deletes the manifest and its tags.
func (h *handler) deleteManifest(w http.ResponseWriter, r *http.Request) error {
	ref, aerr := parseReference(mux.Vars(r)["reference"])
	if aerr != nil {
		return aerr
	}
	t, err := h.target(r, auth.ActionDelete)
	if err != nil {
		return err
	}
	if ref.IsTag {
		err = h.container.DeleteTagByName(r.Context(), t, ref.Tag)
	} else {
		err = h.container.DeleteManifestByDigest(r.Context(), t, ref.Digest)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusAccepted)
	return nil
}

const (
	defaultTagPage = 1000
	maxTagPage     = 10000
)

// listTags serves GET /v2/<name>/tags/list?n=&last=.
func (h *handler) listTags(w http.ResponseWriter, r *http.Request) error {
	t, err := h.target(r, auth.ActionRead)
	if err != nil {
		return err
	}
	if t.Virtual {
		return h.virtualTags(w, r, t)
	}
	if t.Remote != nil {
		return h.remoteTags(w, r, t)
	}
	q := r.URL.Query()
	n, aerr := pageSize(q, defaultTagPage, maxTagPage)
	if aerr != nil {
		return aerr
	}
	last := q.Get("last")
	if t.ImageID == uuid.Nil {
		return newErr(http.StatusNotFound, codeNameUnknown, "image %q has not been pushed", t.Name()).
			withDetail(map[string]string{"name": t.Name()})
	}
	var tags []string
	if n > 0 {
		if tags, err = h.container.Tags(r.Context(), t, last, n+1); err != nil {
			return err
		}
	}
	if len(tags) > n {
		tags = tags[:n]
		w.Header().Set("Link", nextLink(h.location(h.v2Path(t, "/tags/list")), n, tags[n-1], nil))
	}
	if tags == nil {
		tags = []string{}
	}
	return writeJSON(w, r, http.StatusOK, "application/json", struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}{t.Name(), tags})
}

const (
	defaultCatalogPage = 100
	maxCatalogPage     = 1000
)

// catalog serves GET /v2/_catalog?n=&last=: the images the caller may
// pull (auth.ReadableRepositories: all for the admin token, PUBLIC
// repositories for anonymous callers, and what a token reads).
func (h *handler) catalog(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	n, aerr := pageSize(q, defaultCatalogPage, maxCatalogPage)
	if aerr != nil {
		return aerr
	}
	var after *container.CatalogEntry
	if last := q.Get("last"); last != "" {
		parts := strings.SplitN(last, "/", 3)
		for len(parts) < 3 {
			parts = append(parts, "")
		}
		after = &container.CatalogEntry{Namespace: parts[0], Repository: parts[1], Image: parts[2]}
	}
	names := []string{}
	if n > 0 {
		filter := catalogFilter(principal(r))
		entries, err := h.container.Catalog(r.Context(), filter, after, n+1)
		if err != nil {
			return err
		}
		var cut *container.CatalogEntry
		if len(entries) > n {
			cut = &entries[len(entries)-1]
		}
		virtuals, vcut, err := h.virtualCatalog(r.Context(), filter, after, n)
		if err != nil {
			return err
		}
		if vcut != nil && (cut == nil || catalogLess(*vcut, *cut)) {
			cut = vcut
		}
		entries = mergeCatalog(entries, virtuals, cut)
		for _, e := range entries {
			names = append(names, e.Namespace+"/"+e.Repository+"/"+e.Image)
		}
		if len(names) > n || (cut != nil && len(names) > 0) {
			names = names[:min(n, len(names))]
			w.Header().Set("Link", nextLink(h.location("/v2/_catalog"), n, names[len(names)-1], nil))
		}
	}
	return writeJSON(w, r, http.StatusOK, "application/json", struct {
		Repositories []string `json:"repositories"`
	}{names})
}

// fromStoreError maps a store error to the spec's error response. Client
// mistakes (unknown names, digests, ranges, upload sessions) are 4xx; lock
// timeouts and deadlocks are 503 with Retry-After; anything else is logged
// and answered 500.
func (h *handler) fromStoreError(r *http.Request, err error) *apiError {
	se, _ := store.AsError(err)
	dg := ""
	if se != nil && se.Digest != nil {
		dg = digest(*se.Digest).String()
	}
	detail := func(e *apiError) *apiError {
		if dg != "" {
			e.Detail = map[string]string{"digest": dg}
		}
		return e
	}
	if store.IsUnavailable(err) || store.HasCode(err, store.CodeRetryable) {
		// An operator who sees 503s needs the cause: which service is
		// out, or which lock or deadlock made the write give up.
		h.log.Warn("oci: request unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	switch {
	case store.IsUnavailable(err):
		e := newErr(http.StatusServiceUnavailable, codeUnavailable, "%s", store.UnavailableMessage(err))
		e.RetryAfter = int(store.UnavailableRetryAfter.Seconds())
		return e
	case store.HasCode(err, store.CodeRetryable):
		e := newErr(http.StatusServiceUnavailable, codeTooManyRequests,
			"the registry is busy with a concurrent change of the same content; retry")
		e.RetryAfter = int(store.RetryAfter.Seconds())
		if e.RetryAfter < 1 {
			e.RetryAfter = 1
		}
		return e
	case store.HasCode(err, container.CodeNameUnknown):
		return newErr(http.StatusNotFound, codeNameUnknown, "%v", err)
	case store.HasCode(err, container.CodeManifestUnknown):
		if dg != "" {
			return detail(newErr(http.StatusNotFound, codeManifestUnknown, "manifest %s is not in this image", dg))
		}
		return newErr(http.StatusNotFound, codeManifestUnknown, "manifest unknown: no such tag in this image")
	case store.HasCode(err, container.CodeBlobUnknown):
		return detail(newErr(http.StatusNotFound, codeBlobUnknown, "blob %s is not in this image", dg))
	case store.HasCode(err, container.CodeManifestBlobUnknown):
		return detail(newErr(http.StatusBadRequest, codeManifestBlobUnknown,
			"the manifest references blob %s, which is not in this image: push it first", dg))
	case store.HasCode(err, container.CodeManifestChildUnknown):
		return detail(newErr(http.StatusBadRequest, codeManifestUnknown,
			"the index references manifest %s, which is not in this image: push it first", dg))
	case store.HasCode(err, container.CodeManifestReferenced):
		return detail(newErr(http.StatusConflict, codeDenied,
			"the manifest is listed by index %s: delete that index first", dg))
	case store.HasCode(err, container.CodeTooManyManifests):
		return newErr(http.StatusForbidden, codeDenied, "%v", err)
	case se != nil && se.Code == store.CodeRangeMismatch:
		return rangeMismatch(se.Size)
	case store.HasCode(err, store.CodeUploadUnknown):
		return newErr(http.StatusNotFound, codeBlobUploadUnknown, "upload unknown: it never existed, expired, was cancelled or was already committed")
	case store.HasCode(err, store.CodeUploadConflict), store.HasCode(err, store.CodeUploadPoisoned):
		return newErr(http.StatusConflict, codeBlobUploadInvalid,
			"concurrent writes to this upload: it can no longer be used, start a new upload")
	case store.HasCode(err, store.CodeDigestMismatch):
		return newErr(http.StatusBadRequest, codeDigestInvalid, "%v", err)
	case store.HasCode(err, store.CodeSizeMismatch):
		return newErr(http.StatusBadRequest, codeSizeInvalid, "%v", err)
	case store.HasCode(err, store.CodeBlobTooLarge):
		return newErr(http.StatusRequestEntityTooLarge, codeSizeInvalid, "%v", err)
	case store.HasCode(err, store.CodeTooManyUploads):
		return newErr(http.StatusTooManyRequests, codeTooManyRequests, "%s", strings.TrimPrefix(err.Error(), "store: "))
	case store.HasCode(err, store.CodeBlobMustReupload):
		return detail(newErr(http.StatusBadRequest, codeManifestBlobUnknown,
			"the stored bytes of %s are gone: push the blob again", dg))
	case store.HasCode(err, store.CodeBlobUnknown):
		return detail(newErr(http.StatusNotFound, codeBlobUnknown, "blob %s unknown", dg))
	case store.HasCode(err, store.CodeRangeNotSatisfiable):
		return newErr(http.StatusRequestedRangeNotSatisfiable, codeBlobUnknown, "%v", err)
	}
	if r.Context().Err() != nil {
		// The client went away; nothing useful to say.
		return newErr(499, codeUnknown, "request cancelled")
	}
	h.log.Error("oci: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	return newErr(http.StatusInternalServerError, codeUnknown, "internal error: %s", errorID(err))
}

// errorID is a short stable token to find the logged error.
func errorID(err error) string {
	s := err.Error()
	var h uint32 = 2166136261
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return fmt.Sprintf("%08x", h)
}
