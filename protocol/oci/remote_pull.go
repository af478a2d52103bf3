package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/upstream"
)

// The pull path of a pull-through cache (docs/remote-repositories.md):
//
//   - A tag is served from the cache while its upstream check is younger
//     than the remote's cache validity; then the upstream is asked with a
//     HEAD carrying the stored ETag (If-None-Match): 304 or the same digest
//     only bumps the check time, a new digest is fetched (by digest) unless
//     the image caches it already. A tag never cached is fetched with one
//     GET.
//   - Manifests by digest and blobs are immutable: cached forever (until
//     evicted). Indexes are stored verbatim, on HEAD and GET alike; their
//     children are fetched when asked for.
//   - Blobs are streamed to the client while the upstream layer's fill
//     writes them to the cache (one upstream GET however many clients ask
//     at once; the fill goes on when they leave, and is committed only when
//     its length and digest match).
//   - When the upstream cannot be asked (down, timing out, 5xx, 429, the
//     breaker open), what is cached is served with a Warning header; what
//     is not answers 502, 503 or 504. An upstream 404 is authoritative: a
//     cached tag the upstream dropped is dropped too.

// manifestAccept is the Accept header of upstream manifest requests:
// every manifest type the cache stores.
var manifestAccept = strings.Join([]string{mtOCIIndex, mtOCIManifest, mtDockerList, mtDockerManifest, mtOCIArtifact}, ", ")

// maxUpstreamList bounds the tag lists and referrer indexes read from an
// upstream.
const maxUpstreamList = 4 << 20

// maxReferrersCached bounds the referrer manifests one referrers request
// caches in the background.
const maxReferrersCached = 32

// Outcomes of a cached request (CacheMetrics, and the hit ratio).
const (
	outcomeHit         = "hit"
	outcomeRevalidated = "revalidated"
	outcomeMiss        = "miss"
	outcomeStale       = "stale"
	outcomeError       = "error"
)

// remoteResult is a resolved manifest of a pull-through cache.
type remoteResult struct {
	manifest *container.ManifestRow
	payload  []byte // the bytes, when they were just fetched
	imageID  uuid.UUID
	outcome  string
}

func (rs *remotes) scopes(t *container.Target) []string {
	return []string{"repository:" + t.Remote.UpstreamImage + ":pull"}
}

// refreshed is a copy of t with the image a concurrent flight cached
// since t was resolved: a target resolved before the image's first pull
// has none, and would look for the flight's result in vain. A copy, since
// the caller may return (its context ended) while the flight goes on.
func (rs *remotes) refreshed(ctx context.Context, t *container.Target) (*container.Target, error) {
	tc := *t
	if err := rs.h.container.RefreshRemoteImage(ctx, &tc); err != nil {
		return nil, err
	}
	return &tc, nil
}

// flight runs fn once for every concurrent caller of key, on a context of
// its own (a caller that leaves does not cancel it for the others), and
// returns to each caller when it is done or the caller's context ends.
func (rs *remotes) flight(ctx context.Context, key string, fn func(ctx context.Context) (*remoteResult, error)) (*remoteResult, error) {
	ch := rs.flights.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), remoteFlightTimeout)
		defer cancel()
		return fn(fctx)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*remoteResult), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// upstreamClient returns the remote's upstream client; a remote whose
// credentials this instance cannot open answers 503.
func (rs *remotes) upstreamClient(ctx context.Context, t *container.Target) (*upstream.Client, error) {
	c, err := rs.client(ctx, t)
	if err == nil {
		return c, nil
	}
	se, ok := store.AsError(err)
	if !ok || (se.Code.Kind != store.KindUnavailable && se.Code.Kind != store.KindConflict) {
		return nil, err
	}
	// No keyring or root key here (UNAVAILABLE), or a unit that does not
	// open (shredded, altered: CONFLICT). The details go to the log only.
	rs.log.Warn("oci: remote credentials cannot be opened", "remote", t.NamespaceSlug+"/"+t.RepositoryName, "code", se.Code.Name)
	e := newErr(http.StatusServiceUnavailable, codeUnavailable,
		"the upstream credentials of this remote repository cannot be read on this instance; ask an administrator")
	e.RetryAfter = 60
	return nil, e
}

// resolveTag resolves a tag of a pull-through cache (see the file comment).
// The flight looks in the cache again: a flight of the same tag that ended
// between this caller's look and its own would otherwise be repeated
// upstream.
func (rs *remotes) resolveTag(ctx context.Context, t *container.Target, tag string) (*remoteResult, error) {
	look := func(ctx context.Context, t *container.Target) (*remoteResult, *container.RemoteTag, error) {
		cached, err := rs.h.container.RemoteTagByName(ctx, t, tag)
		if err != nil {
			return nil, nil, err
		}
		if cached != nil && rs.h.st.Options().Clock.Now().Sub(cached.CheckedAt) < t.Remote.CacheValidity {
			return &remoteResult{manifest: cached.Manifest, imageID: t.ImageID, outcome: outcomeHit}, cached, nil
		}
		return nil, cached, nil
	}
	if hit, _, err := look(ctx, t); hit != nil || err != nil {
		return hit, err
	}
	key := t.Remote.ID.String() + "\x00" + t.Remote.UpstreamImage + "\x00tag\x00" + tag
	return rs.flight(ctx, key, func(ctx context.Context) (*remoteResult, error) {
		t, err := rs.refreshed(ctx, t)
		if err != nil {
			return nil, err
		}
		hit, cached, err := look(ctx, t)
		if hit != nil || err != nil {
			return hit, err
		}
		return rs.revalidateTag(ctx, t, tag, cached)
	})
}

func (rs *remotes) revalidateTag(ctx context.Context, t *container.Target, tag string, cached *container.RemoteTag) (*remoteResult, error) {
	stale := func(why error) (*remoteResult, error) {
		rs.log.Info("oci: serving a cached tag the upstream could not confirm", "remote", t.NamespaceSlug+"/"+t.RepositoryName,
			"image", t.Remote.UpstreamImage, "tag", tag, "err", why)
		return &remoteResult{manifest: cached.Manifest, imageID: t.ImageID, outcome: outcomeStale}, nil
	}
	unknown := func() *apiError {
		return newErr(http.StatusNotFound, codeManifestUnknown, "manifest unknown: the upstream has no tag %q in this image", tag)
	}
	c, err := rs.upstreamClient(ctx, t)
	if err != nil {
		if cached != nil {
			return stale(err)
		}
		return nil, err
	}
	path := "v2/" + t.Remote.UpstreamImage + "/manifests/" + tag
	if cached == nil {
		p, etag, err := rs.fetchManifest(ctx, c, t, path, nil)
		if err != nil {
			return nil, rs.h.upstreamFailure(err, unknown)
		}
		return rs.cache(ctx, t, p, tag, etag)
	}
	inm := cached.ETag
	if inm == "" {
		inm = `"` + digest(cached.Manifest.Digest).String() + `"`
	}
	resp, err := c.Do(ctx, &upstream.Request{Method: http.MethodHead, Path: path, Scopes: rs.scopes(t),
		Header: http.Header{"Accept": {manifestAccept}, "If-None-Match": {inm}}})
	if err != nil {
		if upstream.IsKind(err, upstream.KindNotFound) {
			if derr := rs.h.container.DropRemoteTag(ctx, t, tag); derr != nil {
				return nil, derr
			}
			return nil, unknown()
		}
		return stale(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	current, dgErr := parseDigest(resp.Header.Get("Docker-Content-Digest"))
	if resp.StatusCode == http.StatusNotModified || (dgErr == nil && current == digest(cached.Manifest.Digest)) {
		if err := rs.h.container.ConfirmRemoteTag(ctx, t, tag, cached.Manifest.ID, etag); err != nil {
			return nil, err
		}
		return &remoteResult{manifest: cached.Manifest, imageID: t.ImageID, outcome: outcomeRevalidated}, nil
	}
	if dgErr == nil {
		// The tag moved; the image may hold the new manifest already.
		_, err := rs.h.container.RemoteManifestByDigest(ctx, t, current)
		switch {
		case err == nil:
			m, err := rs.h.container.PointRemoteTag(ctx, t, tag, current, etag)
			if err != nil {
				return nil, err
			}
			return &remoteResult{manifest: m, imageID: t.ImageID, outcome: outcomeRevalidated}, nil
		case !store.HasCode(err, container.CodeManifestUnknown):
			return nil, err
		}
		path = "v2/" + t.Remote.UpstreamImage + "/manifests/" + current.String()
	}
	var want *digest
	if dgErr == nil {
		want = &current
	}
	p, getETag, err := rs.fetchManifest(ctx, c, t, path, want)
	switch {
	case upstream.IsKind(err, upstream.KindNotFound):
		return nil, unknown()
	case err != nil:
		var ae *apiError
		if errors.As(err, &ae) {
			return nil, err
		}
		// The tag moved but the new manifest cannot be had now: the
		// cached one is what there is.
		return stale(err)
	}
	if etag == "" {
		etag = getETag
	}
	return rs.cache(ctx, t, p, tag, etag)
}

// resolveDigest resolves a manifest by digest: from the cache, else one
// upstream GET (shared by concurrent callers), verified against the digest.
func (rs *remotes) resolveDigest(ctx context.Context, t *container.Target, d digest) (*remoteResult, error) {
	// Looked up again in the flight, as in resolveTag.
	look := func(ctx context.Context, t *container.Target) (*remoteResult, error) {
		m, err := rs.h.container.RemoteManifestByDigest(ctx, t, d)
		switch {
		case err == nil:
			return &remoteResult{manifest: m, imageID: t.ImageID, outcome: outcomeHit}, nil
		case store.HasCode(err, container.CodeManifestUnknown):
			return nil, nil
		}
		return nil, err
	}
	if hit, err := look(ctx, t); hit != nil || err != nil {
		return hit, err
	}
	key := t.Remote.ID.String() + "\x00" + t.Remote.UpstreamImage + "\x00digest\x00" + d.String()
	return rs.flight(ctx, key, func(ctx context.Context) (*remoteResult, error) {
		t, err := rs.refreshed(ctx, t)
		if err != nil {
			return nil, err
		}
		if hit, err := look(ctx, t); hit != nil || err != nil {
			return hit, err
		}
		c, err := rs.upstreamClient(ctx, t)
		if err != nil {
			return nil, err
		}
		p, _, err := rs.fetchManifest(ctx, c, t, "v2/"+t.Remote.UpstreamImage+"/manifests/"+d.String(), &d)
		if err != nil {
			return nil, rs.h.upstreamFailure(err, func() *apiError {
				return newErr(http.StatusNotFound, codeManifestUnknown, "manifest %s is not in this image upstream", d).
					withDetail(map[string]string{"digest": d.String()})
			})
		}
		return rs.cache(ctx, t, p, "", "")
	})
}

// fetchManifest GETs a manifest from the upstream and checks it: at most
// 4 MiB, its sha256 the expected digest (want, or the upstream's
// Docker-Content-Digest), a manifest the cache can store. A body that
// fails is a 502.
func (rs *remotes) fetchManifest(ctx context.Context, c *upstream.Client, t *container.Target, path string, want *digest) (*parsedManifest, string, error) {
	resp, err := c.Do(ctx, &upstream.Request{Path: path, Scopes: rs.scopes(t), Header: http.Header{"Accept": {manifestAccept}}})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	bad := func(format string, args ...any) error {
		return newErr(http.StatusBadGateway, codeUnavailable, "upstream "+format, args...)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", bad("answered %d where a manifest was expected", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestSize+1))
	if err != nil {
		return nil, "", err
	}
	if len(body) > maxManifestSize {
		return nil, "", bad("sent a manifest larger than %d bytes", maxManifestSize)
	}
	dg := digest(sha256.Sum256(body))
	if want != nil && dg != *want {
		return nil, "", bad("sent a manifest that does not match its digest %s", want)
	}
	if h := resp.Header.Get("Docker-Content-Digest"); h != "" {
		if hd, aerr := parseDigest(h); aerr == nil && hd != dg {
			return nil, "", bad("sent a manifest that does not match the digest it announced")
		}
	}
	p, aerr := parseManifest(resp.Header.Get("Content-Type"), body)
	if aerr != nil {
		return nil, "", bad("sent a manifest this registry cannot cache: %s", aerr.Message)
	}
	return p, resp.Header.Get("ETag"), nil
}

// cache stores a fetched manifest (and the tag, when given).
func (rs *remotes) cache(ctx context.Context, t *container.Target, p *parsedManifest, tag, etag string) (*remoteResult, error) {
	in := container.RemoteManifestPut{Digest: p.Digest, MediaType: p.MediaType, Payload: p.Payload, Tag: tag, ETag: etag}
	for _, b := range p.Blobs {
		in.BlobsSize += b.Size
	}
	for _, c := range p.Children {
		in.Children = append(in.Children, c)
	}
	m, imageID, err := rs.h.container.CacheRemoteManifest(ctx, t, in)
	if err != nil {
		return nil, err
	}
	rs.h.referrers.put(p.Digest, referrerInfoOf(p))
	return &remoteResult{manifest: m, payload: p.Payload, imageID: imageID, outcome: outcomeMiss}, nil
}

// remoteManifest serves GET and HEAD of a manifest of a pull-through
// cache. A GET is a pull (counted, and the image's last download).
func (h *handler) remoteManifest(w http.ResponseWriter, r *http.Request, t *container.Target, ref reference) error {
	res, err := h.resolveRemoteManifest(r.Context(), t, ref)
	if err != nil {
		return err
	}
	return h.serveRemoteManifest(w, r, t, res)
}

// resolveRemoteManifest resolves a reference of a pull-through cache:
// from the cache, or from the upstream (and cached).
func (h *handler) resolveRemoteManifest(ctx context.Context, t *container.Target, ref reference) (*remoteResult, error) {
	var (
		res *remoteResult
		err error
	)
	if ref.IsTag {
		res, err = h.remote.resolveTag(ctx, t, ref.Tag)
	} else {
		res, err = h.remote.resolveDigest(ctx, t, ref.Digest)
	}
	if err != nil {
		h.remote.metrics.observe("manifest", outcomeError)
		return nil, err
	}
	h.remote.metrics.observe("manifest", res.outcome)
	return res, nil
}

// serveRemoteManifest answers with a resolved manifest of a pull-through
// cache.
func (h *handler) serveRemoteManifest(w http.ResponseWriter, r *http.Request, t *container.Target, res *remoteResult) error {
	ctx := r.Context()
	m := res.manifest
	dg := digest(m.Digest).String()
	hdr := w.Header()
	hdr.Set("Content-Type", m.MediaType)
	hdr.Set("Docker-Content-Digest", dg)
	hdr.Set("ETag", `"`+dg+`"`)
	httpsafe.Attachment(hdr, dg)
	if res.outcome == outcomeStale {
		hdr.Set("Warning", staleWarning)
	}
	pull := h.container.Pull(t)
	pull.ImageID, pull.Miss, pull.CacheOnly = res.imageID, res.outcome == outcomeMiss, r.Method == http.MethodHead
	defer h.pulls.Add(pull)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, dg) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	payload := res.payload
	if payload == nil {
		payload, _ = h.payloads.get(digest(m.Digest))
	}
	if payload == nil {
		if err := h.container.ManifestPayload(ctx, t, m); err != nil {
			return err
		}
		if r.Method != http.MethodHead {
			var err error
			if payload, err = h.container.ReadManifest(ctx, m, maxManifestSize); err != nil {
				return err
			}
		}
	}
	if len(payload) > 0 && len(payload) <= payloadCacheMax {
		h.payloads.put(digest(m.Digest), payload)
	}
	size := int64(len(payload))
	if payload == nil {
		size = m.Payload.Size
	}
	hdr.Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(payload)
	}
	return nil
}

// remoteBlob serves GET and HEAD of a blob of a pull-through cache.
func (h *handler) remoteBlob(w http.ResponseWriter, r *http.Request, t *container.Target, d digest) error {
	ctx := r.Context()
	record := func(miss bool) {
		p := h.container.Pull(t)
		p.CacheOnly, p.Miss = true, miss
		h.pulls.Add(p)
		outcome := outcomeHit
		if miss {
			outcome = outcomeMiss
		}
		h.remote.metrics.observe("blob", outcome)
	}
	b, err := h.container.RemoteBlob(ctx, t, d)
	if err == nil {
		record(false)
		return h.serveBlob(w, r, d, b)
	}
	if !store.HasCode(err, container.CodeBlobUnknown) {
		return err
	}
	// Another image of this remote caches the bytes: they came from the
	// same upstream, so the image links them without a transfer.
	if in, err := h.container.RemoteBlobInRepository(ctx, t, d); err != nil {
		return err
	} else if in {
		if b, err := h.linkCached(ctx, t, d); err != nil || b != nil {
			if err == nil {
				record(false)
				return h.serveBlob(w, r, d, b)
			}
			return err
		}
	}
	blobUnknown := func() *apiError {
		return newErr(http.StatusNotFound, codeBlobUnknown, "blob %s is not in this image upstream", d).
			withDetail(map[string]string{"digest": d.String()})
	}
	fail := func(err error) error {
		h.remote.metrics.observe("blob", outcomeError)
		return h.upstreamFailure(err, blobUnknown)
	}
	c, err := h.remote.upstreamClient(ctx, t)
	if err != nil {
		return fail(err)
	}
	path := "v2/" + t.Remote.UpstreamImage + "/blobs/" + d.String()
	existing, statErr := h.st.StatBlob(ctx, t.NamespaceID, d)
	if r.Method == http.MethodHead || statErr == nil {
		// A HEAD asks the upstream whether it has the blob (nothing is
		// cached); bytes the namespace holds from elsewhere are linked
		// once the upstream confirmed it has them in this image.
		resp, err := c.Do(ctx, &upstream.Request{Method: http.MethodHead, Path: path, Scopes: h.remote.scopes(t)})
		if err != nil {
			return fail(err)
		}
		resp.Body.Close()
		if r.Method == http.MethodHead {
			h.blobHeaders(w, d)
			if resp.ContentLength >= 0 {
				w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
			}
			w.WriteHeader(http.StatusOK)
			return nil
		}
		if resp.ContentLength < 0 || resp.ContentLength == existing.Size {
			if b, err := h.linkCached(ctx, t, d); err != nil || b != nil {
				if err == nil {
					record(false)
					return h.serveBlob(w, r, d, b)
				}
				return err
			}
		}
	}
	return h.fillBlob(w, r, t, c, d, path, record, fail)
}

// linkCached links a blob stored in the namespace to the target's image
// and returns its row; nil (no error) when its object turned out missing
// (the fill then stores it again).
func (h *handler) linkCached(ctx context.Context, t *container.Target, d digest) (*store.Blob, error) {
	err := h.container.LinkRemoteBlob(ctx, t, d, "")
	if store.HasCode(err, store.CodeBlobMustReupload) || store.HasCode(err, store.CodeBlobUnknown) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return h.st.StatBlob(ctx, t.NamespaceID, d)
}

// fillBlob streams a blob from the upstream layer's fill while the fill
// caches it (remoteStaged).
func (h *handler) fillBlob(w http.ResponseWriter, r *http.Request, t *container.Target, c *upstream.Client, d digest, path string,
	record func(miss bool), fail func(error) error) error {
	ctx := r.Context()
	tc := *t
	stage := func(fctx context.Context, body io.Reader) (upstream.Staged, error) {
		sb, err := h.container.StageRemoteBlob(fctx, &tc, body)
		if err != nil {
			return nil, err
		}
		return &remoteStaged{h: h, t: &tc, sb: sb, d: d}, nil
	}
	fr, err := c.Fill(ctx, upstream.FillRequest{Key: "blob:" + d.String(),
		Request: upstream.Request{Path: path, Scopes: h.remote.scopes(t)},
		Expect:  upstream.Expect{Size: -1, Digests: []upstream.Digest{{Algorithm: upstream.SHA256, Sum: d.Bytes()}}},
		Stage:   stage})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fail(err)
	}
	defer fr.Close()
	record(true)
	size := fr.Size()
	h.blobHeaders(w, d)
	hdr := w.Header()
	offset, length, status := int64(0), size, http.StatusOK
	if size >= 0 {
		br, aerr := parseRange(r.Header.Get("Range"), size)
		if aerr != nil {
			return aerr
		}
		if br != nil {
			offset, length, status = br.Start, br.Length, http.StatusPartialContent
			hdr.Set("Content-Range", br.ContentRange(size))
		}
		hdr.Set("Content-Length", strconv.FormatInt(length, 10))
	} else {
		hdr.Del("Accept-Ranges")
	}
	if offset > 0 {
		if _, err := io.CopyN(io.Discard, fr, offset); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fail(err)
		}
	}
	w.WriteHeader(status)
	var n int64
	if status == http.StatusPartialContent {
		n, err = io.CopyN(w, fr, length)
	} else {
		// To EOF, which the fill reports only once the bytes matched
		// their digest.
		n, err = io.Copy(w, fr)
	}
	if err != nil && ctx.Err() == nil {
		// The upstream failed mid-body or sent bytes that do not match
		// the digest: cut the connection so that the client cannot take
		// a short or wrong body for a whole one.
		h.log.Warn("oci: upstream blob fill failed while streaming", "remote", t.NamespaceSlug+"/"+t.RepositoryName,
			"digest", d.String(), "bytes", n, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// remoteStaged is a fill's staged upload (upstream.Staged): committed
// into the target's cached image once the fill verified the bytes.
type remoteStaged struct {
	h  *handler
	t  *container.Target
	sb *store.StagedBlob
	d  digest
}

func (s *remoteStaged) Commit(ctx context.Context, res *upstream.FillResult) error {
	// The store hashed the bytes too: both must agree.
	if s.sb.SHA256() != [32]byte(s.d) || s.sb.Size() != res.Size {
		s.sb.Close(ctx, false)
		return fmt.Errorf("staged blob %s does not match the verified fill", s.d)
	}
	return s.h.container.CommitRemoteBlob(ctx, s.t, s.sb, "")
}

func (s *remoteStaged) Discard(ctx context.Context) { s.sb.Close(ctx, false) }

// blobHeaders sets the headers of a blob answer.
func (h *handler) blobHeaders(w http.ResponseWriter, d digest) {
	hdr := w.Header()
	hdr.Set("Docker-Content-Digest", d.String())
	hdr.Set("ETag", `"`+d.String()+`"`)
	hdr.Set("Accept-Ranges", "bytes")
	hdr.Set("Content-Type", mtOctetStream)
	hdr.Set("Cache-Control", "max-age=31536000")
	httpsafe.Attachment(hdr, d.String())
}

// remoteTags serves GET tags/list of a pull-through cache: the upstream's
// list (under this registry's name), or, when the upstream cannot be
// asked, the cached tags with a Warning.
func (h *handler) remoteTags(w http.ResponseWriter, r *http.Request, t *container.Target) error {
	q := r.URL.Query()
	n, aerr := pageSize(q, defaultTagPage, maxTagPage)
	if aerr != nil {
		return aerr
	}
	tags, more, stale, err := h.remoteTagList(r.Context(), t, n, q.Get("last"), q.Get("n") != "")
	if err != nil {
		return err
	}
	if more && len(tags) > 0 {
		w.Header().Set("Link", nextLink(h.location(h.v2Path(t, "/tags/list")), max(n, len(tags)), tags[len(tags)-1], nil))
	}
	if stale {
		w.Header().Set("Warning", staleWarning)
	}
	return writeJSON(w, r, http.StatusOK, "application/json", struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}{t.Name(), tags})
}

// remoteTagList lists up to n tags of a pull-through cache's image after
// last: the upstream's (asked for n when sized), or the cached ones when
// the upstream cannot be asked (stale). more: a next page follows.
func (h *handler) remoteTagList(ctx context.Context, t *container.Target, n int, last string, sized bool) (tags []string, more, stale bool, err error) {
	var upErr error
	c, err := h.remote.upstreamClient(ctx, t)
	if err == nil {
		uq := url.Values{}
		if sized {
			uq.Set("n", strconv.Itoa(n))
		}
		if last != "" {
			uq.Set("last", last)
		}
		path := "v2/" + t.Remote.UpstreamImage + "/tags/list"
		if len(uq) > 0 {
			path += "?" + uq.Encode()
		}
		var resp *http.Response
		if resp, upErr = c.Do(ctx, &upstream.Request{Path: path, Scopes: h.remote.scopes(t)}); upErr == nil {
			var list struct {
				Tags []string `json:"tags"`
			}
			body, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamList+1))
			more := resp.Header.Get("Link") != ""
			resp.Body.Close()
			switch {
			case err != nil:
				upErr = err
			case len(body) > maxUpstreamList || json.Unmarshal(body, &list) != nil:
				h.remote.metrics.observe("tags", outcomeError)
				return nil, false, false, newErr(http.StatusBadGateway, codeUnavailable, "upstream sent a tag list this registry cannot read")
			default:
				h.remote.metrics.observe("tags", outcomeMiss)
				tags := list.Tags
				if tags == nil {
					tags = []string{}
				}
				if len(tags) > n {
					tags, more = tags[:n], true
				}
				return tags, more, false, nil
			}
		}
		if upstream.IsKind(upErr, upstream.KindNotFound) {
			h.remote.metrics.observe("tags", outcomeError)
			return nil, false, false, newErr(http.StatusNotFound, codeNameUnknown, "the upstream has no image %q", t.ImageName).
				withDetail(map[string]string{"name": t.Name()})
		}
	} else {
		upErr = err
	}
	if t.ImageID == uuid.Nil {
		h.remote.metrics.observe("tags", outcomeError)
		return nil, false, false, h.upstreamFailure(upErr, func() *apiError { return newErr(http.StatusNotFound, codeNameUnknown, "image unknown") })
	}
	tags, err = h.container.RemoteTags(ctx, t, last, n+1)
	if err != nil {
		return nil, false, false, err
	}
	h.remote.metrics.observe("tags", outcomeStale)
	if len(tags) > n {
		tags, more = tags[:n], true
	}
	if tags == nil {
		tags = []string{}
	}
	return tags, more, true, nil
}

// referrersIndex is the OCI index of a referrers answer.
type referrersIndex struct {
	SchemaVersion int                  `json:"schemaVersion"`
	MediaType     string               `json:"mediaType"`
	Manifests     []referrerDescriptor `json:"manifests"`
}

// remoteReferrers serves GET referrers/<digest> of a pull-through cache:
// the upstream's answer (or, for an upstream without the referrers API,
// its referrers tag sha256-<hex>), whose manifests are then cached in the
// background; when the upstream cannot be asked, the referrers among the
// cached manifests, with a Warning.
func (h *handler) remoteReferrers(w http.ResponseWriter, r *http.Request, t *container.Target, subject digest, filter string) error {
	ctx := r.Context()
	serve := func(list []referrerDescriptor, filtered bool, outcome string) error {
		out := make([]referrerDescriptor, 0, len(list))
		for _, d := range list {
			if filtered || filter == "" || d.ArtifactType == filter {
				out = append(out, d)
			}
		}
		if filter != "" {
			w.Header().Set("OCI-Filters-Applied", "artifactType")
		}
		if outcome == outcomeStale {
			w.Header().Set("Warning", staleWarning)
		}
		h.remote.metrics.observe("referrers", outcome)
		httpsafe.Attachment(w.Header(), subject.String()+"-referrers.json")
		return writeJSON(w, r, http.StatusOK, mtOCIIndex, referrersIndex{2, mtOCIIndex, out})
	}
	c, err := h.remote.upstreamClient(ctx, t)
	if err == nil {
		path := "v2/" + t.Remote.UpstreamImage + "/referrers/" + subject.String()
		if filter != "" {
			path += "?" + url.Values{"artifactType": {filter}}.Encode()
		}
		idx, filtered, err := h.remote.fetchIndex(ctx, c, t, path)
		if upstream.IsKind(err, upstream.KindNotFound) {
			// No referrers API upstream: the referrers tag schema.
			idx, err = nil, nil
			tagIdx, _, terr := h.remote.fetchIndex(ctx, c, t, "v2/"+t.Remote.UpstreamImage+"/manifests/sha256-"+hex.EncodeToString(subject[:]))
			switch {
			case terr == nil:
				idx = tagIdx
			case upstream.IsKind(terr, upstream.KindNotFound):
				idx = &referrersIndex{}
			default:
				err = terr
			}
			filtered = false
		}
		if err == nil {
			h.remote.cacheReferrers(ctx, t, idx.Manifests)
			return serve(idx.Manifests, filtered, outcomeMiss)
		}
		var ae *apiError
		if errors.As(err, &ae) {
			h.remote.metrics.observe("referrers", outcomeError)
			return err
		}
	}
	descs, err := h.cachedRemoteReferrers(ctx, t, subject)
	if err != nil {
		return err
	}
	return serve(descs, false, outcomeStale)
}

// fetchIndex GETs an OCI index (a referrers answer or a referrers tag)
// from the upstream, bounded; filtered: the upstream applied the
// artifactType filter.
func (rs *remotes) fetchIndex(ctx context.Context, c *upstream.Client, t *container.Target, path string) (*referrersIndex, bool, error) {
	resp, err := c.Do(ctx, &upstream.Request{Path: path, Scopes: rs.scopes(t), Header: http.Header{"Accept": {mtOCIIndex}}})
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUpstreamList+1))
	if err != nil {
		return nil, false, err
	}
	var idx referrersIndex
	if resp.StatusCode != http.StatusOK || len(body) > maxUpstreamList || json.NewDecoder(bytes.NewReader(body)).Decode(&idx) != nil {
		return nil, false, newErr(http.StatusBadGateway, codeUnavailable, "upstream sent a referrers index this registry cannot read")
	}
	for _, m := range idx.Manifests {
		if _, aerr := parseDigest(m.Digest); aerr != nil {
			return nil, false, newErr(http.StatusBadGateway, codeUnavailable, "upstream sent a referrers index with an invalid digest")
		}
	}
	if idx.Manifests == nil {
		idx.Manifests = []referrerDescriptor{}
	}
	return &idx, resp.Header.Get("OCI-Filters-Applied") != "", nil
}

// cacheReferrers fetches and caches, in the background, the referrer
// manifests an upstream listed that the image does not cache yet (at most
// maxReferrersCached), so that the referrers answer survives an upstream
// outage.
func (rs *remotes) cacheReferrers(ctx context.Context, t *container.Target, list []referrerDescriptor) {
	if len(list) == 0 {
		return
	}
	tc := *t
	go func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), remoteFlightTimeout)
		defer cancel()
		for i, d := range list {
			if i >= maxReferrersCached {
				return
			}
			dg, aerr := parseDigest(d.Digest)
			if aerr != nil {
				continue
			}
			if _, err := rs.resolveDigest(fctx, &tc, dg); err != nil {
				rs.log.Debug("oci: referrer not cached", "digest", d.Digest, "err", err)
				continue
			}
			if tc.ImageID == uuid.Nil {
				if nt, err := rs.h.resolve(fctx, imageName{Namespace: tc.NamespaceSlug, Repository: tc.RepositoryName, Image: tc.ImageName}); err == nil {
					tc = *nt
				}
			}
		}
	}()
}

// remoteRefused is the answer to a push, a delete or an upload through a
// pull-through cache.
func remoteRefused(t *container.Target) *apiError {
	return newErr(http.StatusMethodNotAllowed, codeUnsupported,
		"repository %s/%s is a remote repository (a pull-through cache of an upstream registry): pushes, uploads and deletes are not supported; push to a hosted repository",
		t.NamespaceSlug, t.RepositoryName)
}
