package npm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// Virtual repositories (docs/virtual-repositories.md): the registry URL
// /npm/<namespace>/<virtual>/ serves a package from the virtual's
// upstreams, flattened in order (a nested virtual's upstreams take its
// place, each repository reached once, with the rules of every level on
// the way):
//
//   - Candidates for a name: the hosted upstreams that hold the package
//     and whose NAME and SCOPE rules admit it, then the remote upstreams
//     whose rules admit it, unless a hosted upstream holds the name
//     (whatever its rules) or the name matches a reserved pattern of a
//     virtual on the way: then no remote upstream is asked for it at all
//     (dependency confusion).
//   - The packument is the merge of the candidates' documents: the first
//     candidate wins per version and per dist-tag, versions its VERSION
//     rules deny are dropped, latest is recomputed when absent or pointing
//     at a dropped version, time merged, every dist.tarball pointing at
//     the virtual. Its ETag hashes the candidates' document digests and
//     the settings' change times, so a 304 costs no merge.
//   - A tarball comes from the first candidate that has its version (its
//     VERSION rules admitting it), counted on that upstream.
//   - A remote whose upstream cannot answer is skipped (its stale cache is
//     used as the remote's own URL would); its error is the answer when no
//     other candidate has the package.
//   - Writes need WRITE on the virtual and go to its deploy target on its
//     behalf (publish, deprecate, dist-tags); without one, and for every
//     unpublish, 405.
//   - Search covers the hosted upstreams only: the search text is never
//     sent to a remote's upstream.

// vmember is a flattened upstream of a virtual, resolved.
type vmember struct {
	m    *store.VirtualMember
	repo *npmstore.Repository
}

// virtualView is what one request through a virtual reads: its settings
// tree (for the ETag), its flattened upstreams and its deploy target.
type virtualView struct {
	repo     *npmstore.Repository
	tree     map[uuid.UUID]*store.VirtualSettings
	members  []vmember
	deployTo *npmstore.Repository
}

// loadVirtual reads the settings of the virtual of the request (already
// authorized) and resolves its upstreams: one statement per nesting level,
// then one for the upstreams.
func (h *handler) loadVirtual(ctx context.Context, vrepo *npmstore.Repository) (*virtualView, error) {
	tree, err := h.st.VirtualTree(ctx, enum.FormatNpm, vrepo.NamespaceID, vrepo.RepositoryID)
	if store.KindOf(err) == store.KindNotFound {
		return nil, errorf(http.StatusNotFound, "no such registry: %s/%s", vrepo.NamespaceSlug, vrepo.RepositoryName)
	}
	if err != nil {
		return nil, err
	}
	flat := store.FlattenVirtual(tree, vrepo.RepositoryID)
	ids := make([]uuid.UUID, 0, len(flat)+1)
	for _, m := range flat {
		ids = append(ids, m.Repository.ID)
	}
	deployTo := tree[vrepo.RepositoryID].DeployTo
	if deployTo != nil {
		ids = append(ids, *deployTo)
	}
	resolved, err := h.npm.VirtualMembers(ctx, vrepo, ids)
	if err != nil {
		return nil, err
	}
	v := &virtualView{repo: vrepo, tree: tree}
	for _, m := range flat {
		if r := resolved[m.Repository.ID]; r != nil {
			v.members = append(v.members, vmember{m, r})
		}
	}
	if deployTo != nil {
		if r := resolved[*deployTo]; r != nil && r.Remote == nil {
			v.deployTo = r
		}
	}
	return v, nil
}

// candidates are the upstreams that may serve name, in order.
func (h *handler) candidates(ctx context.Context, v *virtualView, name string) ([]vmember, error) {
	var hosted []uuid.UUID
	for _, c := range v.members {
		if c.repo.Remote == nil {
			hosted = append(hosted, c.repo.RepositoryID)
		}
	}
	holding, err := h.npm.HoldingRepositories(ctx, v.repo.NamespaceID, hosted, name)
	if err != nil {
		return nil, err
	}
	flat := make([]*store.VirtualMember, len(v.members))
	for i, c := range v.members {
		flat[i] = c.m
	}
	var out []vmember
	for i, d := range store.DecideVirtual(flat, holding, name,
		store.VirtualValue{Field: int16(enum.NpmTargetFullPackageName), Value: name},
		store.VirtualValue{Field: int16(enum.NpmTargetScope), Value: npmstore.ScopeOf(name)}) {
		if d.Outcome == store.VirtualCandidate {
			out = append(out, v.members[i])
		}
	}
	return out, nil
}

// --- routing

// routeVirtual serves the paths of a virtual; handled is false for the
// paths a virtual shares with hosted registries (the registry root, ping,
// whoami, login, tokens, audit).
func (h *handler) routeVirtual(req *request) (handled bool, err error) {
	rest, m := req.rest, req.r.Method
	if len(rest) == 0 {
		return false, nil
	}
	read := m == http.MethodGet || m == http.MethodHead
	if rest[0] == "-" {
		switch {
		case len(rest) == 3 && rest[1] == "v1" && rest[2] == "search":
			if m != http.MethodGet {
				return true, methodNotAllowed(req.r)
			}
			return true, h.virtualSearch(req)
		case len(rest) >= 4 && rest[1] == "package":
			name, tail := rest[2], rest[3:]
			if strings.HasPrefix(name, "@") && !strings.Contains(name, "/") && len(tail) > 0 && tail[0] != "dist-tags" {
				name, tail = name+"/"+tail[0], tail[1:]
			}
			switch {
			case len(tail) == 0 || tail[0] != "dist-tags" || len(tail) > 2:
				return true, errorf(http.StatusNotFound, "no such endpoint: %s", req.r.URL.Path)
			case len(tail) == 1 && read:
				return true, h.virtualDistTags(req, name)
			case len(tail) == 2 && (m == http.MethodPut || m == http.MethodPost):
				return true, h.virtualWrite(req, func(repo *npmstore.Repository) error { return h.putDistTagIn(req, repo, name, tail[1]) })
			case len(tail) == 2 && m == http.MethodDelete:
				return true, h.virtualWrite(req, func(repo *npmstore.Repository) error { return h.deleteDistTagIn(req, repo, name, tail[1]) })
			}
			return true, methodNotAllowed(req.r)
		}
		return false, nil
	}
	name, tail := rest[0], rest[1:]
	if strings.HasPrefix(name, "@") && !strings.Contains(name, "/") && len(tail) > 0 {
		name, tail = name+"/"+tail[0], tail[1:]
	}
	switch {
	case len(tail) == 0 && read:
		return true, h.virtualPackument(req, name)
	case len(tail) == 0 && m == http.MethodPut:
		return true, h.virtualWrite(req, func(repo *npmstore.Repository) error { return h.putPackageIn(req, repo, name, "", false) })
	case len(tail) == 2 && tail[0] == "-" && read:
		return true, h.virtualTarball(req, name, tail[1])
	case len(tail) == 1 && read:
		return true, h.virtualVersion(req, name, tail[0])
	case m == http.MethodDelete || (m == http.MethodPut && len(tail) == 2 && tail[0] == "-rev"):
		return true, h.virtualRefuseDelete(req)
	case read:
		return true, errorf(http.StatusNotFound, "no such endpoint: %s", req.r.URL.Path)
	}
	return true, methodNotAllowed(req.r)
}

// virtualWrite authorizes a write on the virtual and runs it in the
// deploy target, on the virtual's behalf.
func (h *handler) virtualWrite(req *request, write func(*npmstore.Repository) error) error {
	vrepo, err := h.writeRepo(req, auth.ActionWrite)
	if err != nil {
		return err
	}
	v, err := h.loadVirtual(req.r.Context(), vrepo)
	if err != nil {
		return err
	}
	if v.deployTo == nil {
		return errorf(http.StatusMethodNotAllowed,
			"%s/%s is a virtual repository without a deploy target: publish to one of its hosted repositories, or set its deployTo",
			vrepo.NamespaceSlug, vrepo.RepositoryName)
	}
	return write(v.deployTo)
}

// virtualRefuseDelete authorizes a deletion like on a hosted repository
// (a caller without the right learns only that), then refuses it.
func (h *handler) virtualRefuseDelete(req *request) error {
	vrepo, err := h.writeRepo(req, auth.ActionDelete)
	if err != nil {
		return err
	}
	return errorf(http.StatusMethodNotAllowed,
		"%s/%s is a virtual repository: unpublish in the repository that holds the package", vrepo.NamespaceSlug, vrepo.RepositoryName)
}

// --- packuments

// memberDoc is one candidate's packument as the merge takes it.
type memberDoc struct {
	c vmember
	// digest names the document (its blob's sha256) and body reads it.
	digest [32]byte
	body   func(context.Context) ([]byte, error)
	// keep narrows a stale remote copy to its cached tarballs (nil: all).
	keep  map[string]bool
	stale bool
}

// memberDocs loads the packument of name of every candidate that has one.
// A remote that cannot answer is skipped; failed is then its error (the
// first such), for when no candidate has the package.
func (h *handler) memberDocs(req *request, cands []vmember, name string) (docs []memberDoc, failed error, err error) {
	ctx := req.r.Context()
	for _, c := range cands {
		if c.repo.Remote == nil {
			d, err := h.hostedDoc(ctx, req.r, c, name)
			if store.HasCode(err, npmstore.CodePackageUnknown) {
				continue // unpublished since HoldingRepositories
			}
			if err != nil {
				return nil, nil, err
			}
			docs = append(docs, d)
			continue
		}
		rd, err := h.remote.packument(ctx, c.repo, name)
		if err != nil {
			h.remote.metrics.observe("packument", outcomeError)
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			var ae *apiError
			mapped := remoteError(err, "no such package available")
			if !errors.As(mapped, &ae) {
				return nil, nil, mapped
			}
			if ae.status != http.StatusNotFound && failed == nil {
				failed = ae
			}
			continue
		}
		h.remote.metrics.observe("packument", rd.outcome)
		d := memberDoc{c: c, digest: rd.cached.Blob.SHA256, stale: rd.stale,
			body: func(context.Context) ([]byte, error) { return rd.body, nil }}
		if rd.stale {
			if d.keep, err = h.npm.CachedRemoteVersions(ctx, c.repo, name); err != nil {
				return nil, nil, err
			}
		}
		docs = append(docs, d)
	}
	return docs, failed, nil
}

// hostedDoc is a hosted candidate's full packument: the stored one, or
// rebuilt as a direct read would.
func (h *handler) hostedDoc(ctx context.Context, r *http.Request, c vmember, name string) (memberDoc, error) {
	cached, err := h.npm.CachedMetadata(ctx, c.repo, name, enum.NpmMetadataFull)
	if err != nil {
		return memberDoc{}, err
	}
	b := cached.Blob
	if b == nil {
		res, err := h.rebuild(ctx, r, c.repo, cached.Package, false)
		if err != nil {
			return memberDoc{}, err
		}
		f := res.Files[enum.NpmMetadataFull]
		if f.Blob == nil {
			data := f.Data
			return memberDoc{c: c, digest: f.SHA256, body: func(context.Context) ([]byte, error) { return data, nil }}, nil
		}
		b = f.Blob
	}
	return memberDoc{c: c, digest: b.SHA256, body: func(ctx context.Context) ([]byte, error) {
		rc, err := h.st.OpenBlobObject(ctx, b, 0, -1)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}}, nil
}

// virtualETag names a merged document: the kind, the tarball base, the
// change time of every virtual in the tree (rules, order, reserved
// patterns) and each contributing document's digest (and stale narrowing).
func virtualETag(v *virtualView, kind, base string, docs []memberDoc) string {
	hs := sha256.New()
	hs.Write([]byte("npm-virtual\x00" + kind + "\x00" + base + "\x00"))
	ids := make([]uuid.UUID, 0, len(v.tree))
	for id := range v.tree {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	var ts [8]byte
	for _, id := range ids {
		hs.Write(id[:])
		binary.BigEndian.PutUint64(ts[:], uint64(v.tree[id].ChangedAt.UnixNano()))
		hs.Write(ts[:])
	}
	for _, d := range docs {
		hs.Write(d.c.repo.RepositoryID[:])
		hs.Write(d.digest[:])
		if d.keep != nil {
			vs := make([]string, 0, len(d.keep))
			for k := range d.keep {
				vs = append(vs, k)
			}
			slices.Sort(vs)
			hs.Write([]byte("\x00stale\x00" + strings.Join(vs, "\x00") + "\x00"))
		}
	}
	return `"v` + hex.EncodeToString(hs.Sum(nil)[:20]) + `"`
}

// merged is a virtual packument ready to serve.
type merged struct {
	etag  string
	body  []byte // nil when the caller's If-None-Match matched (304 sent)
	stale bool
}

// virtualDocument resolves, loads and merges the packument of name
// through a virtual (authorized for READ): full or abbreviated. With
// conditional, a matching If-None-Match is answered 304 here.
func (h *handler) virtualDocument(req *request, name string, corgi, conditional bool) (*merged, error) {
	vrepo, err := h.readRepo(req)
	if err != nil {
		return nil, err
	}
	if !npmname.Plausible(name) {
		return nil, errorf(http.StatusNotFound, "no such package available")
	}
	ctx := req.r.Context()
	v, err := h.loadVirtual(ctx, vrepo)
	if err != nil {
		return nil, err
	}
	cands, err := h.candidates(ctx, v, name)
	if err != nil {
		return nil, err
	}
	docs, failed, err := h.memberDocs(req, cands, name)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		if failed != nil {
			return nil, failed
		}
		return nil, errorf(http.StatusNotFound, "no such package available")
	}
	kind := "full"
	if corgi {
		kind = "corgi"
	}
	base := h.tarballPrefix(req.r, vrepo, name)
	out := &merged{etag: virtualETag(v, kind, base, docs)}
	for _, d := range docs {
		out.stale = out.stale || d.stale
	}
	req.w.Header().Set("Vary", "Accept")
	if out.stale {
		req.w.Header().Set("Warning", staleWarning)
	}
	if conditional && notModified(req, out.etag) {
		return out, nil
	}
	if b, ok := h.virtualDocs.Get(out.etag); ok {
		out.body = b
		return out, nil
	}
	inputs := make([]mergeInput, 0, len(docs))
	for _, d := range docs {
		body, err := d.body(ctx)
		if err != nil {
			return nil, err
		}
		m := d.c.m
		inputs = append(inputs, mergeInput{body: body, keep: d.keep,
			admits: func(version string) bool { return m.Admits(int16(enum.NpmTargetVersion), version) }})
	}
	if out.body, err = mergePackuments(name, inputs, base, corgi); err != nil {
		return nil, errorf(http.StatusBadGateway, "the packuments of %s cannot be merged: %v", name, err)
	}
	if len(out.body) <= 8<<20 {
		h.virtualDocs.Add(out.etag, out.body)
	}
	return out, nil
}

// virtualPackument is GET/HEAD /<name> of a virtual.
func (h *handler) virtualPackument(req *request, name string) error {
	corgi := wantsCorgi(req.r)
	m, err := h.virtualDocument(req, name, corgi, true)
	if err != nil || m.body == nil {
		return err
	}
	ct := contentTypeJSON
	if corgi {
		ct = contentTypeCorgi
	}
	setMetadataHeaders(req.w, m.etag, ct, len(m.body))
	req.w.WriteHeader(http.StatusOK)
	if req.r.Method != http.MethodHead {
		_, _ = req.w.Write(m.body)
	}
	return nil
}

// virtualDistTags is GET /-/package/<name>/dist-tags of a virtual: the
// merged dist-tags.
func (h *handler) virtualDistTags(req *request, name string) error {
	m, err := h.virtualDocument(req, name, true, false)
	if err != nil {
		return err
	}
	var doc struct {
		DistTags json.RawMessage `json:"dist-tags"`
	}
	if err := json.Unmarshal(m.body, &doc); err != nil {
		return err
	}
	writeJSONBytes(req.w, doc.DistTags)
	return nil
}

// virtualVersion is GET /<name>/<version|tag> of a virtual.
func (h *handler) virtualVersion(req *request, name, spec string) error {
	m, err := h.virtualDocument(req, name, false, false)
	if err != nil {
		return err
	}
	var doc struct {
		DistTags map[string]string          `json:"dist-tags"`
		Versions map[string]json.RawMessage `json:"versions"`
	}
	if err := json.Unmarshal(m.body, &doc); err != nil {
		return err
	}
	if t, ok := doc.DistTags[spec]; ok {
		spec = t
	}
	raw, ok := doc.Versions[spec]
	if !ok {
		return errorf(http.StatusNotFound, "version not found: %s@%s", name, spec)
	}
	writeJSONBytes(req.w, raw)
	return nil
}

// --- tarballs

// isNotFound tells an answer that lets resolution go on to the next
// upstream.
func isNotFound(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status == http.StatusNotFound
	}
	return store.KindOf(err) == store.KindNotFound
}

// virtualTarball is GET/HEAD /<name>/-/<file> of a virtual: from the first
// candidate that has the version (its VERSION rules admitting it), as its
// own URL would serve it and counted on it. A remote that cannot answer
// is skipped; its error is the answer when no later candidate has it.
func (h *handler) virtualTarball(req *request, name, file string) error {
	vrepo, err := h.readRepo(req)
	if err != nil {
		return err
	}
	if !npmname.Plausible(name) {
		return errorf(http.StatusNotFound, "no such tarball: %s", file)
	}
	ctx := req.r.Context()
	v, err := h.loadVirtual(ctx, vrepo)
	if err != nil {
		return err
	}
	cands, err := h.candidates(ctx, v, name)
	if err != nil {
		return err
	}
	version, named := versionFromFileName(name, file)
	var failed error
	for _, c := range cands {
		if c.repo.Remote == nil {
			if !named || !c.m.Admits(int16(enum.NpmTargetVersion), version) {
				continue
			}
			err := h.hostedTarball(req, c.repo, name, file)
			if isNotFound(err) {
				continue
			}
			return err
		}
		ver := version
		if !named {
			if ver, err = h.remoteVersionOfFile(ctx, c.repo, name, file); err != nil {
				if isNotFound(err) || ctx.Err() != nil {
					continue
				}
				if failed == nil {
					failed = err
				}
				continue
			}
		}
		if !c.m.Admits(int16(enum.NpmTargetVersion), ver) {
			continue
		}
		err := h.remoteTarballOf(req, c.repo, name, file)
		if err == nil || ctx.Err() != nil {
			return err
		}
		var ae *apiError
		switch {
		case isNotFound(err):
		case errors.As(err, &ae):
			if failed == nil {
				failed = err
			}
		default:
			return err
		}
	}
	if failed != nil {
		return failed
	}
	return errorf(http.StatusNotFound, "no such tarball: %s", file)
}

// remoteVersionOfFile finds the version of a remote's tarball file whose
// name is not the registry's usual one, from its packument.
func (h *handler) remoteVersionOfFile(ctx context.Context, repo *npmstore.Repository, name, file string) (string, error) {
	doc, err := h.remote.packument(ctx, repo, name)
	if err != nil {
		return "", remoteError(err, "no such tarball: "+file)
	}
	p, err := parseRemote(doc.body)
	if err != nil {
		return "", errorf(http.StatusBadGateway, "the cached upstream packument cannot be read")
	}
	v, _, ok := p.versionOfFile(name, file)
	if !ok {
		return "", errorf(http.StatusNotFound, "no such tarball: %s", file)
	}
	return v, nil
}

// --- search

// virtualSearch is GET /-/v1/search of a virtual: the hosted upstreams'
// results whose NAME and SCOPE rules admit them, in upstream order, each
// name once (the first upstream's hit). Remote upstreams are not
// searched: the search text would go to their upstream registries, which
// must never learn internal names.
func (h *handler) virtualSearch(req *request) error {
	vrepo, err := h.readRepo(req)
	if err != nil {
		return err
	}
	q := req.r.URL.Query()
	size := atoiBounded(q.Get("size"), 20, 1, 250)
	from := atoiBounded(q.Get("from"), 0, 0, 10000)
	text := q.Get("text")
	if len(text) > 1024 {
		return errorf(http.StatusBadRequest, "search text is longer than 1024 bytes")
	}
	ctx := req.r.Context()
	v, err := h.loadVirtual(ctx, vrepo)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var hits []npmstore.SearchHit
	total := 0
	for _, c := range v.members {
		if c.repo.Remote != nil {
			continue
		}
		page, n, err := h.npm.Search(ctx, c.repo, text, 0, from+size)
		if err != nil {
			return err
		}
		total += n
		for _, hit := range page {
			if seen[hit.Name] || !c.m.Admits(int16(enum.NpmTargetFullPackageName), hit.Name) ||
				!c.m.Admits(int16(enum.NpmTargetScope), npmstore.ScopeOf(hit.Name)) {
				total--
				continue
			}
			seen[hit.Name] = true
			hits = append(hits, hit)
		}
	}
	total = max(total, len(hits))
	if from >= len(hits) {
		hits = nil
	} else {
		hits = hits[from:min(len(hits), from+size)]
	}
	writeSearch(req, h.registryURL(req.r, vrepo), hits, total)
	return nil
}
