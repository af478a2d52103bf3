package graph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
)

type pagedRepo struct {
	ID             uuid.UUID
	Name           string
	Format         string
	SizeBytes      int64
	DownloadsCount int64
	ArtifactsCount int64
	LastUpdatedAt  *time.Time
	CreatedAt      time.Time
}

// walkRepositories pages through the list and calls between(page) after
// every page (to insert rows while the walk goes on).
func walkRepositories(t *testing.T, a *testAPI, slug, field, dir string, filter map[string]any, first int, between func(int)) []pagedRepo {
	t.Helper()
	var all []pagedRepo
	var after *string
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("walk does not end")
		}
		var out struct {
			Namespace struct {
				Repositories struct {
					Edges []struct {
						Cursor string
						Node   pagedRepo
					}
					PageInfo struct {
						HasNextPage     bool
						HasPreviousPage bool
						EndCursor       string
					}
				}
			}
		}
		a.admin(`query($s: String!, $f: Int, $a: String, $o: RepositoryOrder, $flt: RepositoryFilter) {
			namespace(slug: $s) { repositories(first: $f, after: $a, orderBy: $o, filter: $flt) {
				edges { cursor node { id name format sizeBytes downloadsCount artifactsCount lastUpdatedAt createdAt } }
				pageInfo { hasNextPage hasPreviousPage endCursor } } } }`,
			map[string]any{"s": slug, "f": first, "a": after, "o": map[string]any{"field": field, "direction": dir}, "flt": filter}, &out)
		conn := out.Namespace.Repositories
		if len(conn.Edges) > first {
			t.Fatalf("page of %d rows for first=%d", len(conn.Edges), first)
		}
		if conn.PageInfo.HasPreviousPage != (after != nil) {
			t.Fatalf("hasPreviousPage = %v on page %d", conn.PageInfo.HasPreviousPage, page)
		}
		for _, e := range conn.Edges {
			all = append(all, e.Node)
		}
		if !conn.PageInfo.HasNextPage {
			return all
		}
		if len(conn.Edges) == 0 || conn.PageInfo.EndCursor != conn.Edges[len(conn.Edges)-1].Cursor {
			t.Fatalf("endCursor is not the last edge's cursor")
		}
		c := conn.PageInfo.EndCursor
		after = &c
		if between != nil {
			between(page)
		}
	}
}

// walkRepositoriesBackward pages from the end of the list to its start
// with last/before and returns the rows in list order; between(page) runs
// after every page.
func walkRepositoriesBackward(t *testing.T, a *testAPI, slug, field, dir string, last int, between func(int)) []pagedRepo {
	t.Helper()
	var pages [][]pagedRepo
	var before *string
	for page := 0; ; page++ {
		if page > 1000 {
			t.Fatal("walk does not end")
		}
		var out struct {
			Namespace struct {
				Repositories struct {
					Edges []struct {
						Cursor string
						Node   pagedRepo
					}
					PageInfo struct {
						HasNextPage     bool
						HasPreviousPage bool
						StartCursor     string
					}
				}
			}
		}
		a.admin(`query($s: String!, $l: Int, $b: String, $o: RepositoryOrder) {
			namespace(slug: $s) { repositories(last: $l, before: $b, orderBy: $o) {
				edges { cursor node { id name format sizeBytes downloadsCount artifactsCount lastUpdatedAt createdAt } }
				pageInfo { hasNextPage hasPreviousPage startCursor } } } }`,
			map[string]any{"s": slug, "l": last, "b": before, "o": map[string]any{"field": field, "direction": dir}}, &out)
		conn := out.Namespace.Repositories
		if len(conn.Edges) > last {
			t.Fatalf("page of %d rows for last=%d", len(conn.Edges), last)
		}
		if conn.PageInfo.HasNextPage != (before != nil) {
			t.Fatalf("hasNextPage = %v on backward page %d", conn.PageInfo.HasNextPage, page)
		}
		var rows []pagedRepo
		for _, e := range conn.Edges {
			rows = append(rows, e.Node)
		}
		pages = append(pages, rows)
		if !conn.PageInfo.HasPreviousPage {
			break
		}
		if len(conn.Edges) == 0 || conn.PageInfo.StartCursor != conn.Edges[0].Cursor {
			t.Fatalf("startCursor is not the first edge's cursor")
		}
		c := conn.PageInfo.StartCursor
		before = &c
		if between != nil {
			between(page)
		}
	}
	var all []pagedRepo
	for i := len(pages) - 1; i >= 0; i-- {
		all = append(all, pages[i]...)
	}
	return all
}

// sortKey compares two rows in the order (ascending).
func sortKey(field string) func(a, b pagedRepo) int {
	byID := func(a, b pagedRepo) int { return slices.Compare(a.ID[:], b.ID[:]) }
	num := func(f func(pagedRepo) int64) func(a, b pagedRepo) int {
		return func(a, b pagedRepo) int {
			if c := f(a) - f(b); c != 0 {
				if c < 0 {
					return -1
				}
				return 1
			}
			return byID(a, b)
		}
	}
	switch field {
	case "NAME":
		return func(a, b pagedRepo) int {
			if a.Name < b.Name {
				return -1
			} else if a.Name > b.Name {
				return 1
			}
			return 0
		}
	case "LAST_UPDATED":
		return func(a, b pagedRepo) int {
			ta, tb := a.CreatedAt, b.CreatedAt
			if a.LastUpdatedAt != nil {
				ta = *a.LastUpdatedAt
			}
			if b.LastUpdatedAt != nil {
				tb = *b.LastUpdatedAt
			}
			if c := ta.Compare(tb); c != 0 {
				return c
			}
			return byID(a, b)
		}
	case "SIZE":
		return num(func(r pagedRepo) int64 { return r.SizeBytes })
	case "DOWNLOADS":
		return num(func(r pagedRepo) int64 { return r.DownloadsCount })
	default:
		return num(func(r pagedRepo) int64 { return r.ArtifactsCount })
	}
}

// testPaginationWalksEveryRowOnce: for every order and direction, walking
// all pages returns each row exactly once, in order, also while new
// repositories are created between pages.
func testPaginationWalksEveryRowOnce(t *testing.T, a *testAPI) {
	const slug = "paging"
	nsID := a.createNamespace(slug)
	rng := rand.New(rand.NewPCG(7, 11))
	formats := []string{"OCI", "DOCKER", "MAVEN", "NPM"}
	var deltas []store.RepositoryCounterDelta
	base := time.Now().Add(-time.Hour)
	for i := 0; i < 37; i++ {
		id := a.createRepository(slug, fmt.Sprintf("r-%02d-%d", rng.IntN(100), i), formats[i%4], "PUBLIC")
		d := store.RepositoryCounterDelta{
			RepositoryID: id,
			// Few distinct values: ties exercise the id tie-breaker.
			SizeBytes:      int64(rng.IntN(3)) * 1000,
			DownloadsCount: int64(rng.IntN(4)),
			ArtifactsCount: int64(rng.IntN(2)),
		}
		if i%3 == 0 {
			ts := base.Add(time.Duration(rng.IntN(5)) * time.Minute)
			d.LastUpdatedAt = &ts
		}
		deltas = append(deltas, d)
	}
	if err := a.st.MergeRepositoryCounters(context.Background(), nsID, deltas); err != nil {
		t.Fatal(err)
	}
	initial := walkRepositories(t, a, slug, "NAME", "ASC", nil, 100, nil)
	if len(initial) != 37 {
		t.Fatalf("initial rows = %d", len(initial))
	}

	inserted := 0
	for _, field := range []string{"NAME", "LAST_UPDATED", "SIZE", "DOWNLOADS", "ARTIFACTS"} {
		for _, dir := range []string{"ASC", "DESC"} {
			for _, first := range []int{1, 5, 8} {
				for _, backward := range []bool{false, true} {
					name := fmt.Sprintf("%s_%s_first%d", field, dir, first)
					walk := func(t *testing.T, a *testAPI, between func(int)) []pagedRepo {
						return walkRepositories(t, a, slug, field, dir, nil, first, between)
					}
					if backward {
						name = fmt.Sprintf("%s_%s_last%d", field, dir, first)
						walk = func(t *testing.T, a *testAPI, between func(int)) []pagedRepo {
							return walkRepositoriesBackward(t, a, slug, field, dir, first, between)
						}
					}
					t.Run(name, func(t *testing.T) {
						a := a.with(t)
						before := walkRepositories(t, a, slug, field, dir, nil, 100, nil)
						got := walk(t, a, func(page int) {
							if page%2 == 0 && page <= 4 { // new repositories while the walk goes on
								inserted++
								a.createRepository(slug, fmt.Sprintf("new-%03d", inserted), "NPM", "PUBLIC")
							}
						})
						seen := map[uuid.UUID]int{}
						for _, r := range got {
							seen[r.ID]++
							if seen[r.ID] > 1 {
								t.Fatalf("%s returned twice", r.Name)
							}
						}
						for _, r := range before {
							if seen[r.ID] != 1 {
								t.Fatalf("%s (present before the walk) seen %d times", r.Name, seen[r.ID])
							}
						}
						cmp := sortKey(field)
						for i := 1; i < len(got); i++ {
							c := cmp(got[i-1], got[i])
							if (dir == "ASC" && c >= 0) || (dir == "DESC" && c <= 0) {
								t.Fatalf("out of order at %d: %+v then %+v", i, got[i-1], got[i])
							}
						}
					})
				}
			}
		}
	}

	// Filtered walks (format filter rides the (namespace_id, format, name) index).
	for _, f := range formats {
		got := walkRepositories(t, a, slug, "NAME", "DESC", map[string]any{"format": f}, 3, nil)
		want := 0
		for _, r := range walkRepositories(t, a, slug, "NAME", "ASC", nil, 100, nil) {
			if r.Format == f {
				want++
			}
		}
		for _, r := range got {
			if r.Format != f {
				t.Fatalf("filter %s returned %s", f, r.Format)
			}
		}
		if len(got) != want {
			t.Fatalf("filter %s: %d rows, want %d", f, len(got), want)
		}
	}
}
