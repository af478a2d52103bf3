// Package inventory lists every repository of a legacy registry:2 tree
// and records each in legacy_repositories with its target (mapping rules),
// tag count and status. Paths the rules do not map, or map to a namespace
// that does not exist, are reported and not recorded: nothing is guessed.
package inventory

import (
	"context"
	"fmt"

	"gocloud.dev/blob"

	"github.com/artifact-registry/artifact-registry/legacy/layout"
	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// Unmapped is a legacy repository left out of the inventory, and why.
type Unmapped struct {
	Path   string
	Reason string
}

// Result is what an inventory run found.
type Result struct {
	// Recorded are the rows written (pending, or skipped with a reason).
	Recorded []*legacy.Repository
	Unmapped []Unmapped
	// Found is every repository of the tree.
	Found []*layout.RepositoryInfo
}

// Run walks the tree in src and records every mapped repository. A
// repository with tags is recorded pending; one with manifests but no tag
// or with only blobs (no _manifests) is recorded skipped, since only
// tagged images migrate. Storage and database errors stop the run.
func Run(ctx context.Context, st *store.Store, src *blob.Bucket, rules *mapping.Rules) (*Result, error) {
	repos, err := layout.New(src).Repositories(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Found: repos}
	namespaces := map[string]*store.Namespace{}
	for _, info := range repos {
		t, err := rules.Explain(info.Name)
		if err != nil {
			res.Unmapped = append(res.Unmapped, Unmapped{Path: info.Name, Reason: err.Error()})
			continue
		}
		ns, ok := namespaces[t.Namespace]
		if !ok {
			ns, err = st.NamespaceBySlug(ctx, t.Namespace)
			if store.KindOf(err) == store.KindNotFound {
				ns, err = nil, nil
			}
			if err != nil {
				return nil, fmt.Errorf("inventory: namespace %s: %w", t.Namespace, err)
			}
			namespaces[t.Namespace] = ns
		}
		if ns == nil {
			res.Unmapped = append(res.Unmapped, Unmapped{Path: info.Name,
				Reason: fmt.Sprintf("maps to namespace %q, which does not exist", t.Namespace)})
			continue
		}
		e := legacy.InventoryEntry{LegacyPath: info.Name, NamespaceID: ns.ID, RepositoryName: t.Repository,
			ImageName: t.Image, TagCount: info.Tags}
		switch {
		case !info.HasManifests:
			e.Skip = "blob-only repository (no manifests): nothing to migrate"
		case info.Tags == 0:
			e.Skip = "no tags: only tagged images migrate"
		}
		row, err := legacy.New(st).UpsertRepository(ctx, e)
		if store.HasCode(err, legacy.CodeTargetTaken) {
			res.Unmapped = append(res.Unmapped, Unmapped{Path: info.Name, Reason: err.Error()})
			continue
		}
		if err != nil {
			return nil, err
		}
		res.Recorded = append(res.Recorded, row)
	}
	return res, nil
}
