package maven

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/artifact-registry/artifact-registry/internal/mavenlayout"
	"github.com/artifact-registry/artifact-registry/protocol/httpsafe"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	mavenstore "github.com/artifact-registry/artifact-registry/store/maven"
)

// Virtual repositories (docs/virtual-repositories.md, "Maven
// resolution"): /maven/<namespace>/<virtual>/<path> resolves through the
// virtual's upstreams, nested virtuals flattened in place (each upstream
// reached once, at its first place, with the rules of every level on the
// way):
//
//   - An upstream serves a path only when the rules on the way to it
//     admit the groupId (NAME), the artifactId (ARTIFACT_ID) and, for a
//     version's file, the version (VERSION).
//   - Files and their checksums: the first upstream that has the file.
//     maven-metadata.xml of an artifact is merged from every upstream
//     that has one (versions united, <latest>, <release> and
//     <lastUpdated> recomputed, plugin prefixes united); a SNAPSHOT
//     version's is the newest upstream's. Checksums of a merged document
//     are those of the merged bytes.
//   - Dependency confusion: when a hosted upstream holds
//     groupId:artifactId, whatever its rules, remote upstreams are not
//     consulted for it at all; and a name that matches a reserved pattern
//     of the virtual (or of a nested virtual on the way) is never asked of
//     a remote upstream. Reserved patterns are matched against the
//     layout path <group/path>/<artifactId>, so com/acme/** reserves
//     every artifact of groupId com.acme and its subgroups.
//   - Authorization: READ on the virtual; its upstreams are read on its
//     behalf. Deploys (PUT) go to the deploy target with WRITE on the
//     virtual, and are refused (405) without one.

// virtualCandidate is an upstream that may serve a request, resolved.
type virtualCandidate struct {
	m *store.VirtualMember
	t *mavenstore.Target
}

// groupLevel reports a package-level metadata path that may be a group's
// plugin-prefix document: <group/path>/maven-metadata.xml parses as
// groupId <group minus its last part>, artifactId <last part>.
func groupLevel(ref mavenstore.FileRef) bool {
	return ref.Version == "" && ref.FileName == mavenlayout.MetadataFile
}

// admitsArtifact tells whether the rules on the way to m admit the
// artifact (and the version, when ref names one).
func admitsArtifact(m *store.VirtualMember, ref mavenstore.FileRef) bool {
	return m.Admits(int16(enum.MavenTargetGroupID), ref.GroupID) &&
		m.Admits(int16(enum.MavenTargetArtifactID), ref.ArtifactID) &&
		(ref.Version == "" || m.Admits(int16(enum.MavenTargetVersion), ref.Version))
}

// admitsGroup tells whether the rules on the way to m admit the group
// whose plugin-prefix document ref may be.
func admitsGroup(m *store.VirtualMember, ref mavenstore.FileRef) bool {
	return groupLevel(ref) && m.Admits(int16(enum.MavenTargetGroupID), ref.GroupID+"."+ref.ArtifactID)
}

// reserved tells whether a remote member may not be asked for ref: the
// artifact's layout name, or for a plugin-prefix document the group's
// (<group/path>/maven-metadata.xml), matches a reserved pattern on the
// way to it.
func reserved(m *store.VirtualMember, ref mavenstore.FileRef) bool {
	name := mavenstore.LayoutName(ref.GroupID, ref.ArtifactID)
	return m.ReservedName(name) || (groupLevel(ref) && m.ReservedName(name+"/"+mavenlayout.MetadataFile))
}

// virtualCandidates resolves, in order, the upstreams of the virtual vt
// that may serve ref: hosted ones that hold the artifact and whose rules
// admit it, and remote ones whose rules admit it unless a hosted upstream
// holds the artifact or its name is reserved.
func (h *handler) virtualCandidates(ctx context.Context, vt *mavenstore.Target, ref mavenstore.FileRef) ([]virtualCandidate, error) {
	tree, err := h.st.VirtualTree(ctx, enum.FormatMaven, vt.NamespaceID, vt.RepositoryID)
	if err != nil {
		return nil, err
	}
	members := store.FlattenVirtual(tree, vt.RepositoryID)
	ids := make([]uuid.UUID, 0, len(members))
	var hostedIDs []uuid.UUID
	for _, m := range members {
		ids = append(ids, m.Repository.ID)
		if m.Repository.Kind == enum.KindHosted {
			hostedIDs = append(hostedIDs, m.Repository.ID)
		}
	}
	// The members' targets and, for every hosted upstream, admitting or
	// not, whether it holds the artifact (the name is then internal, and
	// no remote may serve it): two independent statements, sent at once.
	var (
		targets map[uuid.UUID]*mavenstore.Target
		holding map[uuid.UUID]bool
	)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		targets, err = h.maven.VirtualMemberTargets(gctx, vt, ids)
		return err
	})
	g.Go(func() (err error) {
		holding, err = h.maven.HoldingRepositories(gctx, vt.NamespaceID, hostedIDs, ref.GroupID, ref.ArtifactID)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	shadowed := len(holding) > 0
	var out []virtualCandidate
	for _, m := range members {
		t := targets[m.Repository.ID]
		if t == nil || !(admitsArtifact(m, ref) || admitsGroup(m, ref)) {
			continue
		}
		switch {
		case t.Remote == nil:
			if holding[t.RepositoryID] {
				out = append(out, virtualCandidate{m, t})
			}
		case !shadowed && !reserved(m, ref):
			out = append(out, virtualCandidate{m, t})
		}
	}
	return out, nil
}

// statusOf is the status an upstream's error would answer with.
func statusOf(err error) int { return toHTTP(err).status }

// skippable tells an upstream's answer that lets resolution go on to the
// next upstream: it does not have the file (404), or it cannot be asked
// now (502, 503, 504: a remote whose upstream is down).
func skippable(err error) (notFound, unavailable bool) {
	switch statusOf(err) {
	case http.StatusNotFound:
		return true, false
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return false, true
	}
	return false, false
}

// virtualGet serves GET and HEAD through a virtual.
func (h *handler) virtualGet(w http.ResponseWriter, r *http.Request, vt *mavenstore.Target, q *request) error {
	cands, err := h.virtualCandidates(r.Context(), vt, q.ref)
	if err != nil {
		return err
	}
	switch {
	case q.isMetadata() && q.ref.Version == "":
		return h.virtualMetadata(w, r, vt, q, cands)
	case q.isMetadata():
		return h.virtualSnapshotMetadata(w, r, vt, q, cands)
	}
	return h.virtualFile(w, r, vt, q, cands)
}

// notInVirtual is the 404 of a path no upstream of vt has.
func notInVirtual(vt *mavenstore.Target, ref mavenstore.FileRef) error {
	return newErr(http.StatusNotFound, "not found in any upstream of %s/%s: %s", vt.NamespaceSlug, vt.RepositoryName, ref)
}

// virtualFile serves a file (or its checksum) from the first candidate
// that admits its artifact and version and has it, counted on that
// candidate. A remote whose upstream cannot answer is skipped; its error
// is the answer when no later candidate has the file.
func (h *handler) virtualFile(w http.ResponseWriter, r *http.Request, vt *mavenstore.Target, q *request, cands []virtualCandidate) error {
	ctx := r.Context()
	var failed error
	for _, c := range cands {
		if !admitsArtifact(c.m, q.ref) {
			continue
		}
		var err error
		if c.t.Remote == nil {
			var (
				f       *mavenstore.File
				content []byte
			)
			if f, content, err = h.find(ctx, c.t, q.ref, q.checksum == ""); err == nil {
				return h.serveHosted(w, r, c.t, q, f, content)
			}
		} else if err = h.remoteGet(w, r, c.t, q); err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		notFound, unavailable := skippable(err)
		switch {
		case unavailable && failed == nil:
			failed = err
		case !notFound && !unavailable:
			return err
		}
	}
	if failed != nil {
		return failed
	}
	return notInVirtual(vt, q.ref)
}

// memberDocument is one candidate's maven-metadata.xml, parsed.
type memberDocument struct {
	c   virtualCandidate
	doc *metadataDocument
	raw []byte
}

// memberDocuments fetches the metadata document ref of every candidate
// that has one (hosted: stored or rendered; remote: through the proxy
// path, cached for the proxy's metadata validity). A remote whose
// upstream cannot answer is skipped; failed is its error. A document
// that does not parse is skipped and logged.
func (h *handler) memberDocuments(r *http.Request, q *request, cands []virtualCandidate) (docs []memberDocument, failed error, err error) {
	ctx := r.Context()
	mq := *q
	mq.checksum = ""
	for _, c := range cands {
		raw, err := h.memberMetadata(r, c, &mq)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
			notFound, unavailable := skippable(err)
			switch {
			case unavailable && failed == nil:
				failed = err
			case !notFound && !unavailable:
				return nil, nil, err
			}
			continue
		}
		doc, perr := parseMetadataDocument(raw)
		if perr != nil {
			h.log.Warn("maven: skipping an upstream's unreadable metadata in a virtual", "repository", c.t.RepositoryName,
				"file", q.ref.String(), "err", perr)
			continue
		}
		docs = append(docs, memberDocument{c, doc, raw})
	}
	return docs, failed, nil
}

// memberMetadata reads one candidate's metadata document.
func (h *handler) memberMetadata(r *http.Request, c virtualCandidate, q *request) ([]byte, error) {
	ctx := r.Context()
	if c.t.Remote == nil {
		f, content, err := h.find(ctx, c.t, q.ref, true)
		if err != nil || f == nil {
			return content, err
		}
		return h.readBlob(ctx, &f.Blob)
	}
	a, err := h.remoteLookup(ctx, c.t, q, true)
	if err != nil {
		return nil, err
	}
	if a.file == nil {
		// Not reached: a lookup that waits returns the cached file.
		a.fr.Close()
		return nil, newErr(http.StatusServiceUnavailable, "the upstream's %s is not cached yet, retry", q.ref)
	}
	h.count(h.maven.RemoteAccessCount(c.t, mavenstore.RemoteAccess{File: a.file, Miss: a.miss}))
	return h.readBlob(ctx, &a.file.Blob)
}

// readBlob reads a metadata document's bytes (at most MaxMetadataSize).
func (h *handler) readBlob(ctx context.Context, b *store.Blob) ([]byte, error) {
	if b.Size > h.opts.MaxMetadataSize {
		return nil, newErr(http.StatusBadGateway, "an upstream's maven-metadata.xml is larger than %d bytes", h.opts.MaxMetadataSize)
	}
	rc, err := h.st.OpenBlobObject(ctx, b, 0, -1)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, h.opts.MaxMetadataSize+1))
}

// virtualMetadata serves an artifact's (or a group's plugin-prefix)
// maven-metadata.xml merged from the candidates that have it, or one of
// its checksums (of the merged bytes).
func (h *handler) virtualMetadata(w http.ResponseWriter, r *http.Request, vt *mavenstore.Target, q *request, cands []virtualCandidate) error {
	docs, failed, err := h.memberDocuments(r, q, cands)
	if err != nil {
		return err
	}
	merged, lastUpdated, ok := mergeMetadata(q.ref, docs)
	if !ok {
		if failed != nil {
			return failed
		}
		return notInVirtual(vt, q.ref)
	}
	return serveVirtualBytes(w, r, q, merged, lastUpdated)
}

// virtualSnapshotMetadata serves a SNAPSHOT version's maven-metadata.xml
// (or a checksum of it): the document of the candidate with the newest
// build, as that candidate has it.
func (h *handler) virtualSnapshotMetadata(w http.ResponseWriter, r *http.Request, vt *mavenstore.Target, q *request, cands []virtualCandidate) error {
	var admitted []virtualCandidate
	for _, c := range cands {
		if admitsArtifact(c.m, q.ref) {
			admitted = append(admitted, c)
		}
	}
	docs, failed, err := h.memberDocuments(r, q, admitted)
	if err != nil {
		return err
	}
	best := newestSnapshot(docs)
	if best == nil {
		if failed != nil {
			return failed
		}
		return notInVirtual(vt, q.ref)
	}
	return serveVirtualBytes(w, r, q, best.raw, parseLastUpdated(best.doc.lastUpdated()))
}

// serveVirtualBytes answers with a document a virtual computed, or one
// of its checksums. Its ETag, the SHA-1 of the bytes, is the validator
// (If-None-Match answers 304). Last-Modified is the document's
// lastUpdated (zero: none) for information only: a merged document can
// change without its lastUpdated growing (a version deleted upstream, a
// rule changed), so If-Modified-Since is not answered with 304.
func serveVirtualBytes(w http.ResponseWriter, r *http.Request, q *request, body []byte, modified time.Time) error {
	hdr := w.Header()
	hdr.Set("Cache-Control", cacheControl(q))
	httpsafe.Attachment(hdr, q.name)
	if q.checksum != "" {
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(checksumOf(q.checksum, body)))
		return nil
	}
	sha1hex := checksumOf(mavenlayout.SHA1, body)
	hdr.Set("Content-Type", contentType(q.ref.FileName))
	hdr.Set("ETag", `"`+sha1hex+`"`)
	hdr.Set("X-Checksum-Sha1", sha1hex)
	hdr.Set("X-Checksum-Md5", checksumOf(mavenlayout.MD5, body))
	hdr.Set("X-Checksum-Sha256", checksumOf(mavenlayout.SHA256, body))
	if !modified.IsZero() {
		hdr.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	return nil
}

// virtualDeployTarget is the target of a deploy sent to a virtual: its
// deploy target (a hosted upstream), refused (405) without one.
func (h *handler) virtualDeployTarget(ctx context.Context, vt *mavenstore.Target) (*mavenstore.Target, error) {
	refused := func(why string) error {
		return &httpError{status: http.StatusMethodNotAllowed, header: map[string]string{"Allow": "GET, HEAD"},
			msg: "repository " + vt.NamespaceSlug + "/" + vt.RepositoryName + " is a virtual repository " + why}
	}
	tree, err := h.st.VirtualTree(ctx, enum.FormatMaven, vt.NamespaceID, vt.RepositoryID)
	if err != nil {
		return nil, err
	}
	vs := tree[vt.RepositoryID]
	if vs == nil || vs.DeployTo == nil {
		return nil, refused("without a deploy target: deploy to a hosted repository, or set the virtual's deployTo")
	}
	targets, err := h.maven.VirtualMemberTargets(ctx, vt, []uuid.UUID{*vs.DeployTo})
	if err != nil {
		return nil, err
	}
	t := targets[*vs.DeployTo]
	if t == nil || t.Remote != nil {
		return nil, refused("whose deploy target is not an active hosted repository")
	}
	// The namespace's conditions were read with the virtual's target and
	// authorized there; the deploy target is in the same namespace.
	return t, nil
}
