package oci

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// referrerInfo is what the referrers API reads from a manifest's payload.
// It is a pure function of the manifest bytes, so it is cached by digest
// forever (content-addressed: the same digest always has the same info, in
// any namespace and on any replica).
type referrerInfo struct {
	Subject      *digest
	ArtifactType string
	Annotations  map[string]string // kept only for manifests with a subject
}

func referrerInfoOf(p *parsedManifest) referrerInfo {
	ri := referrerInfo{Subject: p.Subject}
	if p.Subject != nil {
		ri.ArtifactType, ri.Annotations = subjectArtifactType(p), p.Annotations
	}
	return ri
}

// subjectArtifactType is the artifact type recorded with a manifest:
// artifactType, else an image manifest's config media type. Docker
// manifests carry neither a subject nor an artifact type of their own, so
// they record none (the backfill records them without a read).
func subjectArtifactType(p *parsedManifest) string {
	if p.MediaType == mtDockerManifest || p.MediaType == mtDockerList {
		return ""
	}
	return p.ArtifactType
}

// ManifestSubject returns the subject (nil: none) and artifact type of a
// stored manifest, parsed like a push with its stored media type: what
// the push records in container_manifests. The backfill of rows stored
// before the columns existed (gc:record-manifest-subjects) uses it.
func ManifestSubject(mediaType string, payload []byte) (*[32]byte, string, error) {
	p, apiErr := parseManifest(mediaType, payload)
	if apiErr != nil {
		return nil, "", fmt.Errorf("oci: parse manifest: %s", apiErr.Message)
	}
	if p.Subject == nil {
		return nil, subjectArtifactType(p), nil
	}
	s := [32]byte(*p.Subject)
	return &s, subjectArtifactType(p), nil
}

// referrerCacheEntries bounds the referrer cache (entries without a
// subject cost a few dozen bytes; with one, their annotations).
const referrerCacheEntries = 100_000

type referrerCache = lru[digest, referrerInfo]

func newReferrerCache(max int) *referrerCache {
	return newLRU[digest, referrerInfo](int64(max), func(referrerInfo) int64 { return 1 })
}

// subjectMediaTypes are the manifest types that can carry a subject.
var subjectMediaTypes = []string{mtOCIManifest, mtOCIIndex, mtOCIArtifact}

// Referrer pages: the spec lets a registry page the index with a Link
// header; a page is bounded because each referrer's annotations come from
// its payload (cached by digest).
const (
	defaultReferrersPage = 1000
	maxReferrersPage     = 1000
)

type referrerDescriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`

	raw digest
}

// listReferrers serves GET /v2/<name>/referrers/<digest>?artifactType=:
// an OCI index of the image's manifests whose subject is the digest (the
// subject itself need not exist), by digest, in pages of n (default and
// at most 1000) continued after last. Always 200.
func (h *handler) listReferrers(w http.ResponseWriter, r *http.Request) error {
	subject, aerr := parseDigest(mux.Vars(r)["digest"])
	if aerr != nil {
		return aerr
	}
	t, err := h.target(r, auth.ActionRead)
	if err != nil {
		return err
	}
	if t.Virtual {
		return h.virtualReferrers(w, r, t, subject)
	}
	if t.Remote != nil {
		return h.remoteReferrers(w, r, t, subject, r.URL.Query().Get("artifactType"))
	}
	return h.serveReferrers(w, r, t, t, subject)
}

// serveReferrers answers with the referrers of subject in a hosted
// image; named is the target whose name the next-page link carries (a
// virtual's, when resolved through one).
func (h *handler) serveReferrers(w http.ResponseWriter, r *http.Request, t, named *container.Target, subject digest) error {
	q := r.URL.Query()
	filter := q.Get("artifactType")
	n, aerr := pageSize(q, defaultReferrersPage, maxReferrersPage)
	if aerr != nil {
		return aerr
	}
	var after *digest
	if last := q.Get("last"); last != "" {
		d, aerr := parseDigest(last)
		if aerr != nil {
			return aerr
		}
		after = &d
	}
	descs, more, err := h.referrersOf(r.Context(), t, subject, filter, after, n)
	if err != nil {
		return err
	}
	if filter != "" {
		w.Header().Set("OCI-Filters-Applied", "artifactType")
	}
	if more {
		var extra url.Values
		if filter != "" {
			extra = url.Values{"artifactType": {filter}}
		}
		w.Header().Set("Link", nextLink(h.location(h.v2Path(named, "/referrers/"+subject.String())), n, descs[len(descs)-1].Digest, extra))
	}
	// Annotations and artifact types are the pushers' words.
	httpsafe.Attachment(w.Header(), subject.String()+"-referrers.json")
	return writeJSON(w, r, http.StatusOK, mtOCIIndex, struct {
		SchemaVersion int                  `json:"schemaVersion"`
		MediaType     string               `json:"mediaType"`
		Manifests     []referrerDescriptor `json:"manifests"`
	}{2, mtOCIIndex, descs})
}

// referrersOf finds up to n referrers of subject in the image after the
// digest after (nil: from the start), of one artifact type unless filter is
// "", and whether more follow. Recorded subjects are an index lookup; rows
// stored before subjects were recorded, until the backfill reaches them,
// are found by reading their payloads (info cached by digest).
func (h *handler) referrersOf(ctx context.Context, t *container.Target, subject digest, filter string, after *digest, n int) ([]referrerDescriptor, bool, error) {
	out := []referrerDescriptor{}
	if n == 0 {
		return out, false, nil
	}
	var afterBytes []byte
	if after != nil {
		afterBytes = after.Bytes()
	}
	recorded, err := h.container.Referrers(ctx, t, subject, filter, afterBytes, n+1)
	if err != nil {
		return nil, false, err
	}
	for _, m := range recorded {
		info, err := h.referrerInfo(ctx, &m.ManifestRow)
		if err != nil {
			return nil, false, err
		}
		out = append(out, referrerDescriptor{MediaType: m.MediaType, Digest: digest(m.Digest).String(), Size: m.Payload.Size,
			ArtifactType: m.ArtifactType, Annotations: info.Annotations, raw: digest(m.Digest)})
	}
	unrecorded, err := h.container.UnrecordedReferrerCandidates(ctx, t, subjectMediaTypes)
	if err != nil {
		return nil, false, err
	}
	for _, m := range unrecorded {
		if after != nil && bytes.Compare(m.Digest[:], after[:]) <= 0 {
			continue
		}
		info, err := h.referrerInfo(ctx, m)
		if err != nil {
			return nil, false, err
		}
		if info.Subject == nil || *info.Subject != subject || (filter != "" && info.ArtifactType != filter) {
			continue
		}
		out = append(out, referrerDescriptor{MediaType: m.MediaType, Digest: digest(m.Digest).String(), Size: m.Payload.Size,
			ArtifactType: info.ArtifactType, Annotations: info.Annotations, raw: digest(m.Digest)})
	}
	if len(unrecorded) > 0 {
		slices.SortFunc(out, func(a, b referrerDescriptor) int { return bytes.Compare(a.raw[:], b.raw[:]) })
	}
	if len(out) > n {
		return out[:n], true, nil
	}
	return out, false, nil
}

// referrerInfo reads (once per digest: cached) what the referrers API
// needs from a manifest's payload.
func (h *handler) referrerInfo(ctx context.Context, m *container.ManifestRow) (referrerInfo, error) {
	d := digest(m.Digest)
	if info, ok := h.referrers.get(d); ok {
		return info, nil
	}
	payload, err := h.container.ReadManifest(ctx, m, maxManifestSize)
	if err != nil {
		return referrerInfo{}, err
	}
	info := parseReferrerInfo(m.MediaType, payload)
	h.referrers.put(d, info)
	return info, nil
}

// cachedRemoteReferrers finds the referrers of subject among a
// pull-through cache's cached manifests: its answer while the upstream
// cannot be asked. Cached manifests record no subject, so each payload is
// read once (its info cached by digest).
func (h *handler) cachedRemoteReferrers(ctx context.Context, t *container.Target, subject digest) ([]referrerDescriptor, error) {
	cands, err := h.container.RemoteReferrerCandidates(ctx, t, subjectMediaTypes)
	if err != nil {
		return nil, err
	}
	out := []referrerDescriptor{}
	for _, m := range cands {
		info, err := h.referrerInfo(ctx, m)
		if err != nil {
			return nil, err
		}
		if info.Subject == nil || *info.Subject != subject {
			continue
		}
		out = append(out, referrerDescriptor{MediaType: m.MediaType, Digest: digest(m.Digest).String(), Size: m.Payload.Size,
			ArtifactType: info.ArtifactType, Annotations: info.Annotations, raw: digest(m.Digest)})
	}
	return out, nil
}

// parseReferrerInfo extracts the referrer info of a stored manifest (it was
// validated when pushed; a payload that does not parse has no subject).
func parseReferrerInfo(mediaType string, payload []byte) referrerInfo {
	if p, aerr := parseManifest(mediaType, payload); aerr == nil {
		return referrerInfoOf(p)
	}
	return referrerInfo{}
}
