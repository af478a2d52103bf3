package oci

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sort"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Virtual repositories (docs/virtual-repositories.md): a name
// /v2/<namespace>/<virtual>/<image> resolves through the virtual's
// upstreams, in order, nested virtuals flattened in place (each upstream
// reached once, at its first place):
//
//   - An upstream serves an image only when the rules on the way to it
//     admit the image name (and, for a manifest by tag or a tag list, the
//     tag). The first one that has the manifest wins; blobs come from any
//     admitting upstream (the cached or stored copies first, then the
//     remote upstreams); tags/list is the union.
//   - Dependency confusion: when a hosted upstream has an image of that
//     name, whatever its rules, remote upstreams are not consulted for the
//     name at all; and a name matching a reserved pattern of the virtual
//     (or of a nested virtual on the way) is never asked of a remote
//     upstream, even when no hosted upstream has it.
//   - Authorization: READ on the virtual. Its upstreams are read on its
//     behalf: whoever configured it needed READ on each of them, and a
//     reader of the virtual gets through it exactly what the virtual
//     serves, nothing else of the upstreams (no other name, no listing).
//   - Writes (pushes, uploads) go to the virtual's deploy target, a hosted
//     upstream, with WRITE on the virtual; without a deploy target they
//     are refused, and deletes always are (405 UNSUPPORTED).

// virtualCandidate is an upstream that may serve an image, resolved.
type virtualCandidate struct {
	m *store.VirtualMember
	t *container.Target
}

// virtualCandidates resolves, in order, the upstreams of a virtual that
// may serve its image: hosted ones whose rules admit the name, and remote
// ones too unless a hosted upstream has the name or it is reserved.
func (h *handler) virtualCandidates(ctx context.Context, vt *container.Target) ([]virtualCandidate, error) {
	tree, err := h.st.VirtualTree(ctx, vt.Format, vt.NamespaceID, vt.RepositoryID)
	if err != nil {
		return nil, err
	}
	members := store.FlattenVirtual(tree, vt.RepositoryID)
	resolve := func(m *store.VirtualMember) (*container.Target, error) {
		t, err := h.container.ResolveTargetIn(ctx, vt.NamespaceID, vt.NamespaceSlug, m.Repository.Name, vt.ImageName)
		if store.HasCode(err, container.CodeNameUnknown) {
			return nil, nil // trashed or gone since the tree was read
		}
		return t, err
	}
	// Every hosted upstream is asked whether it has the name, admitting
	// or not: the name is then internal, and no remote may serve it.
	hosted := map[uuid.UUID]*container.Target{}
	holding := map[uuid.UUID]bool{}
	for _, m := range members {
		if m.Repository.Kind != enum.KindHosted {
			continue
		}
		t, err := resolve(m)
		if err != nil {
			return nil, err
		}
		if t == nil || t.Remote != nil || t.Virtual {
			continue
		}
		hosted[m.Repository.ID] = t
		holding[m.Repository.ID] = t.ImageID != uuid.Nil
	}
	var out []virtualCandidate
	for _, d := range store.DecideVirtual(members, holding, vt.ImageName,
		store.VirtualValue{Field: int16(enum.ContainerTargetImage), Value: vt.ImageName}) {
		if d.Outcome != store.VirtualCandidate {
			continue
		}
		if d.Member.Repository.Kind == enum.KindHosted {
			out = append(out, virtualCandidate{d.Member, hosted[d.Member.Repository.ID]})
			continue
		}
		t, err := resolve(d.Member)
		if err != nil {
			return nil, err
		}
		if t != nil && t.Remote != nil {
			out = append(out, virtualCandidate{d.Member, t})
		}
	}
	return out, nil
}

// isNotFound tells an answer that lets resolution go on to the next
// upstream.
func isNotFound(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Status == http.StatusNotFound
	}
	return store.KindOf(err) == store.KindNotFound
}

// virtualManifest serves GET and HEAD of a manifest through a virtual:
// the first candidate (admitting the tag) that has it. An upstream that
// cannot answer (a remote whose upstream is down) is skipped; its error
// is the answer when no later one has the manifest.
func (h *handler) virtualManifest(w http.ResponseWriter, r *http.Request, vt *container.Target, ref reference) error {
	cands, err := h.virtualCandidates(r.Context(), vt)
	if err != nil {
		return err
	}
	var failed error
	for _, c := range cands {
		if ref.IsTag && !c.m.Admits(int16(enum.ContainerTargetTag), ref.Tag) {
			continue
		}
		if c.t.Remote == nil {
			m, err := h.hostedManifest(r, c.t, ref)
			if isNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			return h.serveManifest(w, r, c.t, m)
		}
		res, err := h.resolveRemoteManifest(r.Context(), c.t, ref)
		if err == nil {
			return h.serveRemoteManifest(w, r, c.t, res)
		}
		if r.Context().Err() != nil {
			return err
		}
		if !isNotFound(err) && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		return failed
	}
	return newErr(http.StatusNotFound, codeManifestUnknown, "manifest unknown: no upstream of %s has %s", vt.Name(), ref).
		withDetail(map[string]string{"name": vt.Name()})
}

// virtualBlob serves GET and HEAD of a blob through a virtual: a stored
// or cached copy in any candidate first, then the remote candidates'
// upstreams in order.
func (h *handler) virtualBlob(w http.ResponseWriter, r *http.Request, vt *container.Target, d digest) error {
	ctx := r.Context()
	cands, err := h.virtualCandidates(ctx, vt)
	if err != nil {
		return err
	}
	for _, c := range cands {
		var b *store.Blob
		if c.t.Remote == nil {
			b, err = h.container.Blob(ctx, c.t, d)
		} else if c.t.ImageID != uuid.Nil {
			b, err = h.container.RemoteBlob(ctx, c.t, d)
		} else {
			continue
		}
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		if c.t.Remote != nil {
			p := h.container.Pull(c.t)
			p.CacheOnly = true
			h.pulls.Add(p)
			h.remote.metrics.observe("blob", outcomeHit)
		}
		return h.serveBlob(w, r, d, b)
	}
	var failed error
	for _, c := range cands {
		if c.t.Remote == nil {
			continue
		}
		err := h.remoteBlob(w, r, c.t, d)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if !isNotFound(err) && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		return failed
	}
	return newErr(http.StatusNotFound, codeBlobUnknown, "blob %s is in no upstream of %s", d, vt.Name()).
		withDetail(map[string]string{"digest": d.String()})
}

// virtualTags serves GET tags/list through a virtual: the union of the
// candidates' tags (each filtered by its tag rules), sorted, paged with
// n and last. A page is cut at the smallest last tag of the candidates
// that had more, so that no tag is skipped between pages.
func (h *handler) virtualTags(w http.ResponseWriter, r *http.Request, vt *container.Target) error {
	ctx := r.Context()
	q := r.URL.Query()
	n, aerr := pageSize(q, defaultTagPage, maxTagPage)
	if aerr != nil {
		return aerr
	}
	last := q.Get("last")
	cands, err := h.virtualCandidates(ctx, vt)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	cut, more, found, stale := "", false, false, false
	var failed error
	for _, c := range cands {
		if n == 0 {
			found = true
			break
		}
		var (
			tags    []string
			hasMore bool
		)
		if c.t.Remote == nil {
			tags, err = h.container.Tags(ctx, c.t, last, n+1)
			if err != nil {
				return err
			}
			if len(tags) > n {
				tags, hasMore = tags[:n], true
			}
		} else {
			var st bool
			tags, hasMore, st, err = h.remoteTagList(ctx, c.t, n, last, true)
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				if !isNotFound(err) && failed == nil {
					failed = err
				}
				continue
			}
			stale = stale || st
			sort.Strings(tags)
		}
		found = true
		if hasMore && len(tags) > 0 && (cut == "" || tags[len(tags)-1] < cut) {
			cut, more = tags[len(tags)-1], true
		}
		for _, tg := range tags {
			if tg > last && c.m.Admits(int16(enum.ContainerTargetTag), tg) {
				set[tg] = true
			}
		}
	}
	if !found {
		if failed != nil {
			return failed
		}
		return newErr(http.StatusNotFound, codeNameUnknown, "no upstream of %s has image %q", vt.Name(), vt.ImageName).
			withDetail(map[string]string{"name": vt.Name()})
	}
	tags := make([]string, 0, len(set))
	for tg := range set {
		if cut == "" || tg <= cut {
			tags = append(tags, tg)
		}
	}
	sort.Strings(tags)
	if len(tags) > n {
		tags, more = tags[:n], true
	}
	if more && len(tags) > 0 {
		w.Header().Set("Link", nextLink(h.location(h.v2Path(vt, "/tags/list")), n, tags[len(tags)-1], nil))
	}
	if stale {
		w.Header().Set("Warning", staleWarning)
	}
	return writeJSON(w, r, http.StatusOK, "application/json", struct {
		Name string   `json:"name"`
		Tags []string `json:"tags"`
	}{vt.Name(), tags})
}

// virtualReferrers serves GET referrers through a virtual: the answer of
// the first candidate whose image has the subject manifest.
func (h *handler) virtualReferrers(w http.ResponseWriter, r *http.Request, vt *container.Target, subject digest) error {
	cands, err := h.virtualCandidates(r.Context(), vt)
	if err != nil {
		return err
	}
	ref := reference{Digest: subject}
	for _, c := range cands {
		if c.t.Remote == nil {
			if _, err := h.hostedManifest(r, c.t, ref); isNotFound(err) {
				continue
			} else if err != nil {
				return err
			}
			return h.serveReferrers(w, r, c.t, vt, subject)
		}
		if _, err := h.resolveRemoteManifest(r.Context(), c.t, ref); err != nil {
			if r.Context().Err() != nil || !isNotFound(err) {
				return err
			}
			continue
		}
		return h.remoteReferrers(w, r, c.t, subject, r.URL.Query().Get("artifactType"))
	}
	// The subject need not exist: its referrers are then none.
	httpsafe.Attachment(w.Header(), subject.String()+"-referrers.json")
	return writeJSON(w, r, http.StatusOK, mtOCIIndex, referrersIndex{2, mtOCIIndex, []referrerDescriptor{}})
}

// virtualWriteTarget is the target of a write sent to a virtual: its
// deploy target, under the virtual's name; refused without one, and for
// deletes.
func (h *handler) virtualWriteTarget(ctx context.Context, vt *container.Target, action auth.Action) (*container.Target, error) {
	if action == auth.ActionDelete {
		return nil, newErr(http.StatusMethodNotAllowed, codeUnsupported,
			"repository %s/%s is a virtual repository: delete through the upstream repository that holds the content",
			vt.NamespaceSlug, vt.RepositoryName)
	}
	tree, err := h.st.VirtualTree(ctx, vt.Format, vt.NamespaceID, vt.RepositoryID)
	if err != nil {
		return nil, err
	}
	vs := tree[vt.RepositoryID]
	var deploy *store.Repository
	if vs.DeployTo != nil {
		for _, u := range vs.Upstreams {
			if u.Repository.ID == *vs.DeployTo {
				deploy = u.Repository
			}
		}
	}
	if deploy == nil {
		return nil, newErr(http.StatusMethodNotAllowed, codeUnsupported,
			"repository %s/%s is a virtual repository without a deploy target: push to a hosted repository, or set the virtual's deployTo",
			vt.NamespaceSlug, vt.RepositoryName)
	}
	t, err := h.container.ResolveTargetIn(ctx, vt.NamespaceID, vt.NamespaceSlug, deploy.Name, vt.ImageName)
	if err != nil {
		return nil, err
	}
	if t.Remote != nil || t.Virtual {
		return nil, newErr(http.StatusMethodNotAllowed, codeUnsupported, "the deploy target of %s/%s is not a hosted repository", vt.NamespaceSlug, vt.RepositoryName)
	}
	t.Via = vt.RepositoryName
	// The namespace's conditions were read with the virtual's target and
	// authorized there; the deploy target is in the same namespace.
	return t, nil
}

// catalogLess orders catalog entries as the catalog lists them.
func catalogLess(a, b container.CatalogEntry) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Repository != b.Repository {
		return a.Repository < b.Repository
	}
	return a.Image < b.Image
}

// mergeCatalog merges the hosted entries and the virtuals' (sorted,
// without duplicates), keeping those up to cut when there is one.
func mergeCatalog(a, b []container.CatalogEntry, cut *container.CatalogEntry) []container.CatalogEntry {
	all := append(slices.Clip(a), b...)
	sort.Slice(all, func(i, j int) bool { return catalogLess(all[i], all[j]) })
	out := all[:0]
	for i, e := range all {
		if cut != nil && catalogLess(*cut, e) {
			break
		}
		if i > 0 && e == all[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}

// maxCatalogName sorts after every image name (names are ASCII).
const maxCatalogName = "\xff"

// virtualCatalog lists the images of the virtual repositories the caller
// may read, after after, for a catalog page of n: per virtual, the names
// its upstreams hold that their rules admit (a remote's only when no
// hosted upstream has the name and it is not reserved). cut, when set,
// is the last entry up to which the list is complete.
func (h *handler) virtualCatalog(ctx context.Context, filter container.CatalogFilter, after *container.CatalogEntry, n int) ([]container.CatalogEntry, *container.CatalogEntry, error) {
	var a container.CatalogEntry
	if after != nil {
		a = *after
	}
	refs, err := h.container.VirtualCatalogRepositories(ctx, filter, a.Namespace, a.Repository, n+1)
	if err != nil {
		return nil, nil, err
	}
	var (
		out []container.CatalogEntry
		cut *container.CatalogEntry
	)
	lower := func(c container.CatalogEntry) {
		if cut == nil || catalogLess(c, *cut) {
			cut = &c
		}
	}
	if len(refs) > n {
		refs = refs[:n]
		last := refs[n-1]
		lower(container.CatalogEntry{Namespace: last.NamespaceSlug, Repository: last.Name, Image: maxCatalogName})
	}
	for _, v := range refs {
		afterImage := ""
		if v.NamespaceSlug == a.Namespace && v.Name == a.Repository {
			afterImage = a.Image
		}
		tree, err := h.st.VirtualTree(ctx, enum.FormatOCI, v.NamespaceID, v.RepositoryID)
		if err != nil {
			return nil, nil, err
		}
		members := store.FlattenVirtual(tree, v.RepositoryID)
		var hosted, remote []uuid.UUID
		for _, m := range members {
			if m.Repository.Kind == enum.KindHosted {
				hosted = append(hosted, m.Repository.ID)
			} else {
				remote = append(remote, m.Repository.ID)
			}
		}
		names, err := h.container.ImageNamesOfRepositories(ctx, v.NamespaceID, hosted, remote, afterImage, n+1)
		if err != nil {
			return nil, nil, err
		}
		internal := map[string]bool{}
		for _, id := range hosted {
			for _, name := range names[id] {
				internal[name] = true
			}
		}
		seen := map[string]bool{}
		for _, m := range members {
			list := names[m.Repository.ID]
			if len(list) > n {
				lower(container.CatalogEntry{Namespace: v.NamespaceSlug, Repository: v.Name, Image: list[len(list)-1]})
			}
			for _, name := range list {
				if seen[name] || !m.Admits(int16(enum.ContainerTargetImage), name) {
					continue
				}
				if m.Repository.Kind != enum.KindHosted && (internal[name] || m.ReservedName(name)) {
					continue
				}
				seen[name] = true
				out = append(out, container.CatalogEntry{Namespace: v.NamespaceSlug, Repository: v.Name, Image: name})
			}
		}
	}
	return out, cut, nil
}
