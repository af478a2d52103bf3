package oci

import (
	"context"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// referrerInfo is what the referrers API needs from one manifest. It is a
// pure function of the manifest bytes, so it is cached by digest forever
// (content-addressed: the same digest always has the same info, in any
// namespace and on any replica).
type referrerInfo struct {
	Subject      *digest
	ArtifactType string
	Annotations  map[string]string // kept only for manifests with a subject
}

func referrerInfoOf(p *parsedManifest) referrerInfo {
	ri := referrerInfo{Subject: p.Subject}
	if p.Subject != nil {
		ri.ArtifactType, ri.Annotations = p.ArtifactType, p.Annotations
	}
	return ri
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

type referrerDescriptor struct {
	MediaType    string            `json:"mediaType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// listReferrers serves GET /v2/<name>/referrers/<digest>?artifactType=:
// an OCI index of the image's manifests whose subject is the digest (the
// subject itself need not exist). Always 200.
func (h *handler) listReferrers(w http.ResponseWriter, r *http.Request) error {
	subject, aerr := parseDigest(mux.Vars(r)["digest"])
	if aerr != nil {
		return aerr
	}
	t, err := h.target(r, auth.ActionRead)
	if err != nil {
		return err
	}
	filter := r.URL.Query().Get("artifactType")
	if t.Remote != nil {
		return h.remoteReferrers(w, r, t, subject, filter)
	}
	descs, err := h.referrersOf(r.Context(), t, subject)
	if err != nil {
		return err
	}
	out := make([]referrerDescriptor, 0, len(descs))
	for _, d := range descs {
		if filter == "" || d.ArtifactType == filter {
			out = append(out, d)
		}
	}
	if filter != "" {
		w.Header().Set("OCI-Filters-Applied", "artifactType")
	}
	// Annotations and artifact types are the pushers' words.
	httpsafe.Attachment(w.Header(), subject.String()+"-referrers.json")
	return writeJSON(w, r, http.StatusOK, mtOCIIndex, struct {
		SchemaVersion int                  `json:"schemaVersion"`
		MediaType     string               `json:"mediaType"`
		Manifests     []referrerDescriptor `json:"manifests"`
	}{2, mtOCIIndex, out})
}

// referrersOf finds the referrers of subject among the image's manifests
// (a pull-through cache's: its cached ones). The schema stores no subject
// column, so each candidate manifest's payload is parsed once and its
// referrer info cached by digest.
func (h *handler) referrersOf(ctx context.Context, t *container.Target, subject digest) ([]referrerDescriptor, error) {
	candidates := h.container.ReferrerCandidates
	if t.Remote != nil {
		candidates = h.container.RemoteReferrerCandidates
	}
	cands, err := candidates(ctx, t, subjectMediaTypes)
	if err != nil {
		return nil, err
	}
	var out []referrerDescriptor
	for _, m := range cands {
		d := digest(m.Digest)
		info, ok := h.referrers.get(d)
		if !ok {
			payload, err := h.container.ReadManifest(ctx, m, maxManifestSize)
			if err != nil {
				return nil, err
			}
			info = parseReferrerInfo(m.MediaType, payload)
			h.referrers.put(d, info)
		}
		if info.Subject == nil || *info.Subject != subject {
			continue
		}
		out = append(out, referrerDescriptor{
			MediaType:    m.MediaType,
			Digest:       d.String(),
			Size:         m.Payload.Size,
			ArtifactType: info.ArtifactType,
			Annotations:  info.Annotations,
		})
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
