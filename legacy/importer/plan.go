package importer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/artifact-registry/artifact-registry/legacy/layout"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// readConcurrency bounds the concurrent reads of the legacy tree (link
// files and manifests are small objects: on S3 their latency, not the
// bandwidth, is what a pass waits for).
const readConcurrency = 16

// node is one manifest a tag reaches.
type node struct {
	digest  layout.Digest
	payload []byte
	m       *parsed
	sizes   map[layout.Digest]int64 // sizes of its blobs in the tree
	// bad is why the manifest is skipped ("" when it imports).
	bad string
}

// importPlan is what a repository's tags reach, validated against the
// legacy tree before anything is written on our side.
type importPlan struct {
	tags  map[string]layout.Digest // importable tags
	nodes map[layout.Digest]*node
	order []layout.Digest // children before their index
	sizes map[layout.Digest]int64
}

// plan reads the repository's tags and every manifest they reach, deciding
// broken items into rep. Storage errors other than "not found" fail the
// repository (returned). Reads run concurrently; decisions are made
// afterwards, in tag order, so the report is deterministic.
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
	var roots []layout.Digest
	for _, tg := range tags {
		if tg.Err == nil {
			roots = append(roots, tg.Digest)
		}
	}
	if _, err := p.load(ctx, tree, repo, roots); err != nil {
		return nil, err
	}
	// Index children, level by level (an index may list indexes).
	for level, next := 0, roots; level < maxIndexDepth && len(next) > 0; level++ {
		var children []layout.Digest
		for _, d := range next {
			if n := p.nodes[d]; n.m != nil {
				children = append(children, n.m.Children...)
			}
		}
		if next, err = p.load(ctx, tree, repo, children); err != nil {
			return nil, err
		}
	}
	done := map[layout.Digest]bool{}
	rep.TagsSeen = len(tags)
	for _, tg := range tags {
		if tg.Err != nil {
			rep.add("tag", tg.Name, SkipItem, "tag link unreadable: %v", tg.Err)
			continue
		}
		if n := p.resolve(tg.Digest, done); n.bad != "" {
			rep.add("tag", tg.Name, SkipItem, "its manifest %s is skipped", tg.Digest)
			continue
		}
		p.tags[tg.Name] = tg.Digest
	}
	for _, d := range p.order {
		n := p.nodes[d]
		if n.bad != "" {
			rep.add("manifest", d.String(), SkipManifest, "%s", n.bad)
			continue
		}
		maps.Copy(p.sizes, n.sizes)
	}
	if len(tags) > 0 && len(p.tags) == 0 {
		return nil, fmt.Errorf("%w: %d tag(s), all broken", ErrNothingImportable, len(tags))
	}
	rep.TagsImported = len(p.tags)
	return p, nil
}

// maxIndexDepth bounds index nesting (an index of indexes of ...).
const maxIndexDepth = 4

// load reads and checks the manifests not loaded yet, concurrently, and
// returns their digests.
func (p *importPlan) load(ctx context.Context, tree *layout.Tree, repo string, digests []layout.Digest) ([]layout.Digest, error) {
	var todo []*node
	for _, d := range digests {
		if _, ok := p.nodes[d]; !ok {
			n := &node{digest: d, sizes: map[layout.Digest]int64{}}
			p.nodes[d] = n
			todo = append(todo, n)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(readConcurrency)
	loaded := make([]layout.Digest, len(todo))
	for i, n := range todo {
		loaded[i] = n.digest
		g.Go(func() error {
			bad, err := check(gctx, tree, repo, n)
			n.bad = bad
			return err
		})
	}
	return loaded, g.Wait()
}

// resolve decides a manifest after its children (an index is skipped
// when one of its children is) and appends it to the plan's order after
// them.
func (p *importPlan) resolve(d layout.Digest, done map[layout.Digest]bool) *node {
	n := p.nodes[d]
	if n == nil {
		// Deeper than maxIndexDepth: never loaded.
		n = &node{digest: d, bad: fmt.Sprintf("index nesting deeper than %d levels", maxIndexDepth)}
		p.nodes[d] = n
	}
	if done[d] {
		return n
	}
	done[d] = true
	if n.bad == "" {
		for _, c := range n.m.Children {
			if cn := p.resolve(c, done); cn.bad != "" && n.bad == "" {
				n.bad = fmt.Sprintf("index child %s is skipped", c)
			}
		}
	}
	p.order = append(p.order, d)
	return n
}

// check returns why n cannot import ("" when it can) or a storage error.
// It does not look at index children (resolve does).
func check(ctx context.Context, tree *layout.Tree, repo string, n *node) (string, error) {
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
	case errors.Is(err, layout.ErrTooLarge):
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
		n.sizes[b.Digest] = size
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

// copyConcurrency bounds concurrent blob copies of one repository.
const copyConcurrency = 4

// execute copies what the tags reach into the image (blobs first, then
// manifests children first), skipping what is already there, and returns
// the pass-2 transaction's input.
func (p *importPlan) execute(ctx context.Context, s stores, repo *legacy.Repository,
	tree *layout.Tree, t *container.Target, rep *Report) (*legacy.Final, error) {
	manifests, blobs := p.reach()
	haveBlobs, haveManifests, err := s.legacy.ImageContents(ctx, t)
	if err != nil {
		return nil, err
	}
	blobList := make([]layout.Digest, 0, len(blobs))
	for d := range blobs {
		blobList = append(blobList, d)
	}
	slices.SortFunc(blobList, func(a, b layout.Digest) int { return bytes.Compare(a[:], b[:]) })
	if err := p.copyBlobs(ctx, s, tree, t, blobList, haveBlobs, rep); err != nil {
		return nil, err
	}
	fin := &legacy.Final{LegacyID: repo.ID, Target: t, Tags: map[string][32]byte{}}
	var mts []string
	for _, d := range p.order {
		if manifests[d] {
			fin.KeepManifests = append(fin.KeepManifests, d)
			mts = append(mts, p.nodes[d].m.MediaType)
		}
	}
	// Recorded before they are stored: a crash in between leaves a record
	// without a manifest (harmless), never a manifest pass 2 cannot detach.
	if err := s.legacy.RecordImportedManifests(ctx, repo.ID, fin.KeepManifests, mts); err != nil {
		return nil, err
	}
	for _, d := range fin.KeepManifests {
		if haveManifests[d] {
			rep.ManifestsPresent++
			continue
		}
		if err := putManifest(ctx, s, t, p.nodes[d], rep); err != nil {
			return nil, err
		}
	}
	for _, d := range blobList {
		fin.KeepBlobs = append(fin.KeepBlobs, d)
	}
	for name, d := range p.tags {
		fin.Tags[name] = d
	}
	return fin, nil
}

// copyBlobs copies the blobs the image lacks, a few at a time.
func (p *importPlan) copyBlobs(ctx context.Context, s stores, tree *layout.Tree, t *container.Target,
	list []layout.Digest, have map[[32]byte]bool, rep *Report) error {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(copyConcurrency)
	for _, d := range list {
		if have[d] {
			rep.BlobsPresent++
			continue
		}
		g.Go(func() error {
			// Each copy gets its own target: the store records the image
			// id it creates on first push in the target it is given. The
			// copy is taken under the lock a finished copy writes t with.
			mu.Lock()
			tc := *t
			mu.Unlock()
			if err := copyBlob(gctx, s, tree, &tc, d, p.sizes[d]); err != nil {
				return err
			}
			mu.Lock()
			rep.BlobsCopied++
			rep.BytesCopied += p.sizes[d]
			if t.ImageID == uuid.Nil {
				t.ImageID = tc.ImageID
			}
			mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

func copyBlob(ctx context.Context, s stores, tree *layout.Tree, t *container.Target, d layout.Digest, size int64) error {
	r, err := tree.OpenBlob(ctx, d)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := s.container.PutBlob(ctx, t, r, store.Expected{SHA256: d, Size: size}); err != nil {
		if store.HasCode(err, store.CodeDigestMismatch) || store.HasCode(err, store.CodeSizeMismatch) {
			// The planned size matched; the bytes do not hash to the
			// digest: the legacy blob store is corrupted under a tagged
			// image. Importing the image would serve a broken pull.
			return fmt.Errorf("blob %s in the legacy blob store is corrupted: %w", d, err)
		}
		return fmt.Errorf("copy blob %s: %w", d, err)
	}
	return nil
}

func putManifest(ctx context.Context, s stores, t *container.Target, n *node, rep *Report) error {
	in := container.ManifestPut{Digest: n.digest, MediaType: n.m.MediaType, Payload: n.payload, ArtifactType: n.m.ArtifactType}
	if n.m.Subject != nil {
		s := [32]byte(*n.m.Subject)
		in.Subject = &s
	}
	for _, b := range n.m.Blobs {
		in.Blobs = append(in.Blobs, container.BlobRef{SHA256: b.Digest, Size: b.Size})
	}
	for _, c := range n.m.Children {
		in.Children = append(in.Children, c)
	}
	for _, f := range n.m.Foreign {
		rep.add("blob", f, SkipItem, "foreign layer of %s (bytes outside the registry): manifest imported, layer not copied", n.digest)
	}
	if _, err := s.container.PutManifest(ctx, t, in); err != nil {
		return fmt.Errorf("store manifest %s: %w", n.digest, err)
	}
	rep.ManifestsImported++
	return nil
}
