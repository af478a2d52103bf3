package graph

import (
	"slices"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store/catalog"
)

// toPurgeTrashPayload reports a purge's rows by kind (in a stable order)
// and the GC candidates it recorded.
func toPurgeTrashPayload(p *catalog.Purged) *model.PurgeTrashPayload {
	out := &model.PurgeTrashPayload{PurgedCount: p.Total(), GcCandidates: p.Released.Candidates, Counts: []*model.PurgedCount{}}
	for k, n := range p.Rows {
		if n > 0 {
			out.Counts = append(out.Counts, &model.PurgedCount{Kind: string(k), Count: n})
		}
	}
	slices.SortFunc(out.Counts, func(a, b *model.PurgedCount) int {
		if a.Kind < b.Kind {
			return -1
		}
		if a.Kind > b.Kind {
			return 1
		}
		return 0
	})
	return out
}
