package importer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/legacy/layout"
	"github.com/artifact-registry/artifact-registry/store"
)

// node is one manifest a tag reaches.
type node struct {
	digest  layout.Digest
	payload []byte
	m       *parsed
	// bad is why the manifest is skipped ("" when it imports).
	bad string
}

// importPlan is what a repository's tags reach, validated against the
// legacy tree before anything is written on our side.
type importPlan struct {
	tags  map[string]layout.Digest // importable tags
	nodes map[layout.Digest]*node
	order []layout.Digest // post-order: children before their index
	sizes map[layout.Digest]int64
}

// plan reads the repository's tags and every manifest they reach, deciding
// broken items into rep. Storage errors other than "not found" fail the
// repository (returned).
func plan(ctx context.Context, tree *layout.Tree, repo string, rep *Report) (*importPlan, error) {
	tags, err := tree.Tags(ctx, repo)
	if err != nil {
		return nil, err
	}
	if len(tags) == 0 {
		ok, err := tree.Exists(ctx, repo)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrRepositoryMissing, repo)
		}
	}
	p := &importPlan{tags: map[string]layout.Digest{}, nodes: map[layout.Digest]*node{}, sizes: map[layout.Digest]int64{}}
	rep.TagsSeen = len(tags)
	for _, tg := range tags {
		if tg.Err != nil {
			rep.add("tag", tg.Name, SkipItem, "tag link unreadable: %v", tg.Err)
			continue
		}
		n, err := p.visit(ctx, tree, repo, tg.Digest, 0)
		if err != nil {
			return nil, err
		}
		if n.bad != "" {
			rep.add("tag", tg.Name, SkipItem, "its manifest %s is skipped", tg.Digest)
			continue
		}
		p.tags[tg.Name] = tg.Digest
	}
	for _, d := range p.order {
		if n := p.nodes[d]; n.bad != "" {
			rep.add("manifest", d.String(), SkipManifest, "%s", n.bad)
		}
	}
	if len(tags) > 0 && len(p.tags) == 0 {
		return nil, fmt.Errorf("%w: %d tag(s), all broken", ErrNothingImportable, len(tags))
	}
	rep.TagsImported = len(p.tags)
	return p, nil
}

// visit validates one manifest and what it references (memoized).
func (p *importPlan) visit(ctx context.Context, tree *layout.Tree, repo string, d layout.Digest, depth int) (*node, error) {
	if n, ok := p.nodes[d]; ok {
		return n, nil
	}
	n := &node{digest: d}
	p.nodes[d] = n
	bad, err := p.check(ctx, tree, repo, n, depth)
	if err != nil {
		return nil, err
	}
	n.bad = bad
	p.order = append(p.order, d)
	return n, nil
}

// check returns why n cannot import ("" when it can) or a storage error.
func (p *importPlan) check(ctx context.Context, tree *layout.Tree, repo string, n *node, depth int) (string, error) {
	d := n.digest
	if err := tree.RevisionLinked(ctx, repo, d); err != nil {
		if errors.Is(err, layout.ErrNotFound) {
			return "no revision link in the repository (tag points to a missing revision)", nil
		}
		if errors.Is(err, layout.ErrBadLink) {
			return fmt.Sprintf("revision link broken: %v", err), nil
		}
		return "", err
	}
	payload, err := tree.ReadBlob(ctx, d, maxManifestSize)
	switch {
	case errors.Is(err, layout.ErrNotFound):
		return "revision data missing from the blob store", nil
	case err != nil && strings.Contains(err.Error(), "larger than"):
		return fmt.Sprintf("manifest larger than %d bytes", maxManifestSize), nil
	case err != nil:
		return "", err
	}
	if layout.Digest(sha256.Sum256(payload)) != d {
		return "revision data does not match its digest (corrupted)", nil
	}
	m, err := parseManifest(payload)
	if err != nil {
		var u *errUnsupported
		if errors.As(err, &u) {
			return u.msg, nil
		}
		return "", err
	}
	n.payload, n.m = payload, m
	for _, b := range m.Blobs {
		if err := tree.LayerLinked(ctx, repo, b.Digest); err != nil {
			if errors.Is(err, layout.ErrNotFound) || errors.Is(err, layout.ErrBadLink) {
				return fmt.Sprintf("blob %s not linked to the repository (the legacy registry would not serve it here)", b.Digest), nil
			}
			return "", err
		}
		size, err := tree.BlobSize(ctx, b.Digest)
		if errors.Is(err, layout.ErrNotFound) {
			return fmt.Sprintf("blob %s linked but its data is missing", b.Digest), nil
		}
		if err != nil {
			return "", err
		}
		if size != b.Size {
			return fmt.Sprintf("blob %s is %d bytes, the manifest says %d", b.Digest, size, b.Size), nil
		}
		p.sizes[b.Digest] = size
	}
	if len(m.Children) > 0 && depth > 0 {
		return "nested index (an index listing an index) is not imported", nil
	}
	for _, c := range m.Children {
		cn, err := p.visit(ctx, tree, repo, c, depth+1)
		if err != nil {
			return "", err
		}
		if cn.bad != "" {
			return fmt.Sprintf("index child %s is skipped", c), nil
		}
	}
	return "", nil
}

// reportLeftBehind reports what pass 1 deliberately does not migrate:
// untagged manifests (referrers among them) and uploads.
func (p *importPlan) reportLeftBehind(ctx context.Context, tree *layout.Tree, repo string, rep *Report) error {
	revs, err := tree.Revisions(ctx, repo)
	if err != nil {
		return err
	}
	for _, d := range revs {
		if _, reached := p.nodes[d]; reached {
			continue
		}
		reason := "untagged manifest: only tagged images migrate"
		if b, err := tree.ReadBlob(ctx, d, maxManifestSize); err == nil {
			if m, err := parseManifest(b); err == nil && m.Subject != nil {
				reason = fmt.Sprintf("untagged referrer of %s: only tagged images migrate", m.Subject)
			}
		}
		rep.add("manifest", d.String(), SkipItem, "%s", reason)
	}
	uploads, err := tree.Uploads(ctx, repo)
	if err != nil {
		return err
	}
	for _, u := range uploads {
		rep.add("upload", u, SkipItem, "upload session of the legacy registry (abandoned or in progress): not imported")
	}
	return nil
}

// reach returns the manifests and blobs the importable tags reach.
func (p *importPlan) reach() (manifests, blobs map[layout.Digest]bool) {
	manifests, blobs = map[layout.Digest]bool{}, map[layout.Digest]bool{}
	var walk func(d layout.Digest)
	walk = func(d layout.Digest) {
		if manifests[d] {
			return
		}
		manifests[d] = true
		n := p.nodes[d]
		for _, b := range n.m.Blobs {
			blobs[b.Digest] = true
		}
		for _, c := range n.m.Children {
			walk(c)
		}
	}
	for _, d := range p.tags {
		walk(d)
	}
	return manifests, blobs
}

// execute copies what the tags reach into the image (blobs first, then
// manifests children first), skipping what is already there, and returns
// the pass-2 transaction's input.
func (p *importPlan) execute(ctx context.Context, st *store.Store, tree *layout.Tree, repo *store.LegacyRepository,
	t *store.ContainerTarget, rep *Report) (*store.LegacyFinal, error) {
	manifests, blobs := p.reach()
	blobList := make([]layout.Digest, 0, len(blobs))
	for d := range blobs {
		blobList = append(blobList, d)
	}
	slices.SortFunc(blobList, func(a, b layout.Digest) int { return strings.Compare(a.String(), b.String()) })
	for _, d := range blobList {
		if err := copyBlob(ctx, st, tree, t, d, p.sizes[d], rep); err != nil {
			return nil, err
		}
	}
	fin := &store.LegacyFinal{LegacyID: repo.ID, Target: t, Tags: map[string][32]byte{}}
	for _, d := range p.order {
		if !manifests[d] {
			continue
		}
		if err := putManifest(ctx, st, repo.ID, t, p.nodes[d], rep); err != nil {
			return nil, err
		}
		fin.KeepManifests = append(fin.KeepManifests, d)
	}
	for _, d := range blobList {
		fin.KeepBlobs = append(fin.KeepBlobs, d)
	}
	for name, d := range p.tags {
		fin.Tags[name] = d
	}
	return fin, nil
}

func copyBlob(ctx context.Context, st *store.Store, tree *layout.Tree, t *store.ContainerTarget, d layout.Digest, size int64, rep *Report) error {
	_, err := st.ContainerBlob(ctx, t, d)
	if err == nil {
		rep.BlobsPresent++
		return nil
	}
	if !errors.Is(err, store.ErrContainerBlobUnknown) {
		return err
	}
	r, err := tree.OpenBlob(ctx, d)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := st.PutContainerBlob(ctx, t, r, store.Expected{SHA256: d, Size: size}); err != nil {
		if errors.Is(err, store.ErrDigestMismatch) || errors.Is(err, store.ErrSizeMismatch) {
			// The planned size matched; the bytes do not hash to the
			// digest: the legacy blob store is corrupted under a tagged
			// image. Importing the image would serve a broken pull.
			return fmt.Errorf("blob %s in the legacy blob store is corrupted: %w", d, err)
		}
		return fmt.Errorf("copy blob %s: %w", d, err)
	}
	rep.BlobsCopied++
	rep.BytesCopied += size
	return nil
}

func putManifest(ctx context.Context, st *store.Store, legacyID uuid.UUID, t *store.ContainerTarget, n *node, rep *Report) error {
	if t.ImageID != uuid.Nil {
		if _, err := st.ContainerManifestByDigest(ctx, t, n.digest); err == nil {
			rep.ManifestsPresent++
			return st.RecordLegacyImportedManifest(ctx, legacyID, n.digest, n.m.MediaType)
		} else if !errors.Is(err, store.ErrContainerManifestUnknown) {
			return err
		}
	}
	// Recorded before it is stored: a crash in between leaves a record
	// without a manifest (harmless), never a manifest pass 2 cannot detach.
	if err := st.RecordLegacyImportedManifest(ctx, legacyID, n.digest, n.m.MediaType); err != nil {
		return err
	}
	in := store.ContainerManifestPut{Digest: n.digest, MediaType: n.m.MediaType, Payload: n.payload}
	for _, b := range n.m.Blobs {
		in.Blobs = append(in.Blobs, store.ContainerBlobRef{SHA256: b.Digest, Size: b.Size})
	}
	for _, c := range n.m.Children {
		in.Children = append(in.Children, c)
	}
	for _, f := range n.m.Foreign {
		rep.add("blob", f, SkipItem, "foreign layer of %s (bytes outside the registry): manifest imported, layer not copied", n.digest)
	}
	if _, err := st.PutContainerManifest(ctx, t, in); err != nil {
		return fmt.Errorf("store manifest %s: %w", n.digest, err)
	}
	rep.ManifestsImported++
	return nil
}
