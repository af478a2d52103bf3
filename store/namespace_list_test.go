package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// seedNamespaces inserts n namespaces team-0000-x … (creation times one
// second apart, in an order unrelated to the slugs) in one statement, and
// analyzes the table.
func seedNamespaces(t testing.TB, s *Store, n int) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]uuid.UUID, n)
	slugs := make([]string, n)
	created := make([]time.Time, n)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		ids[i] = db.NewID()
		// Words sharing prefixes, so that a prefix selects a small range.
		slugs[i] = fmt.Sprintf("team-%04d-%c", (i*7919)%n, 'a'+rune(i%26))
		created[i] = base.Add(time.Duration(i) * time.Second)
	}
	if _, err := s.pool.Exec(ctx, `
		INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id, created_at)
		SELECT id, slug, 'standalone', 'namespace', slug, 'standalone', slug, created_at
		FROM unnest($1::uuid[], $2::text[], $3::timestamptz[]) AS x(id, slug, created_at)`, ids, slugs, created); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE namespaces`); err != nil {
		t.Fatal(err)
	}
	return slugs
}

// TestListNamespacesWalksEveryRowOnce: every order walks every namespace
// exactly once, in its order, and a prefix search walks exactly the
// matches.
func TestListNamespacesWalksEveryRowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t), objstore.NewMem(), Options{})
	slugs := seedNamespaces(t, s, 500)
	walk := func(q NamespaceListQuery) []string {
		t.Helper()
		var got []string
		for {
			page, more, err := s.ListNamespaces(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range page {
				got = append(got, ns.Slug)
			}
			if !more {
				return got
			}
			k := q.Order.KeyOf(page[len(page)-1], q.Desc)
			q.After = &k
		}
	}
	bySlug := slices.Sorted(slices.Values(slugs))
	if got := walk(NamespaceListQuery{Limit: 7}); !slices.Equal(got, bySlug) {
		t.Errorf("by slug: %d rows, first %v", len(got), got[:3])
	}
	desc := slices.Clone(bySlug)
	slices.Reverse(desc)
	if got := walk(NamespaceListQuery{Order: NamespacesBySlug, Desc: true, Limit: 9}); !slices.Equal(got, desc) {
		t.Errorf("by slug descending: %d rows", len(got))
	}
	if got := walk(NamespaceListQuery{Order: NamespacesByCreatedAt, Limit: 11}); !slices.Equal(got, slugs) {
		t.Errorf("by creation: %d rows", len(got))
	}
	var prefixed []string
	for _, s := range bySlug {
		if strings.HasPrefix(s, "team-01") {
			prefixed = append(prefixed, s)
		}
	}
	if got := walk(NamespaceListQuery{Search: "team-01", Limit: 8}); !slices.Equal(got, prefixed) || len(got) != 100 {
		t.Errorf("prefix team-01: %d rows, want %d", len(got), len(prefixed))
	}
	if n, err := s.CountNamespaces(ctx, "team-01"); err != nil || n != 100 {
		t.Errorf("count of prefix team-01: %d, %v", n, err)
	}
	// A cursor of the release before orders (the slug alone) continues the
	// slug order; another order's cursor is refused.
	page, _, err := s.ListNamespaces(ctx, NamespaceListQuery{After: &NamespaceKey{Slug: bySlug[9]}, Limit: 2})
	if err != nil || len(page) != 2 || page[0].Slug != bySlug[10] {
		t.Fatalf("old cursor: %v, %v", page, err)
	}
	byCreation := NamespacesByCreatedAt.KeyOf(page[0], false)
	if _, _, err := s.ListNamespaces(ctx, NamespaceListQuery{After: &byCreation, Limit: 2}); CodeOf(err) != CodeInvalidInput {
		t.Errorf("a creation cursor in the slug order: %v", err)
	}
}

// TestListNamespacesPlans: on a few thousand namespaces every page of the
// list (first and next, both orders and directions, with and without a
// search) and the search's count read an index range, never the whole
// table. Without a search a page walks its order's index (no sort); with
// one the planner may read the prefix's range and sort only those rows.
func TestListNamespacesPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t), objstore.NewMem(), Options{})
	seedNamespaces(t, s, 5000)
	key := &NamespaceKey{Order: NamespacesBySlug, Slug: "team-2500"}
	keyDesc := &NamespaceKey{Order: NamespacesBySlug, Desc: true, Slug: "team-2500"}
	created := &NamespaceKey{Order: NamespacesByCreatedAt, Desc: true, Time: time.Date(2026, 1, 1, 0, 40, 0, 0, time.UTC), ID: uuid.Max}
	for _, c := range []struct {
		name   string
		q      NamespaceListQuery
		sorted bool // walks an index in the ORDER BY's order
	}{
		{"slug, first page", NamespaceListQuery{Limit: 51}, true},
		{"slug, next page", NamespaceListQuery{After: key, Limit: 51}, true},
		{"slug descending, next page", NamespaceListQuery{Desc: true, After: keyDesc, Limit: 51}, true},
		{"search, first page", NamespaceListQuery{Search: "team-12", Limit: 51}, false},
		{"search, next page", NamespaceListQuery{Search: "team-12", After: &NamespaceKey{Order: NamespacesBySlug, Slug: "team-1250"}, Limit: 51}, false},
		{"search without match", NamespaceListQuery{Search: "zzz", Limit: 51}, false},
		{"newest first, first page", NamespaceListQuery{Order: NamespacesByCreatedAt, Desc: true, Limit: 51}, true},
		{"newest first, next page", NamespaceListQuery{Order: NamespacesByCreatedAt, Desc: true, After: created, Limit: 51}, true},
		{"newest first, search", NamespaceListQuery{Order: NamespacesByCreatedAt, Desc: true, Search: "team-12", Limit: 51}, false},
	} {
		sql, args, err := namespaceListSQL(c.q)
		if err != nil {
			t.Fatal(err)
		}
		plan := explainAnalyze(t, s, sql, args...)
		if strings.Contains(plan, "Seq Scan") || (c.sorted && sortNode.MatchString(plan)) {
			t.Errorf("%s: the plan reads the whole table or sorts:\n%s", c.name, plan)
		}
		if !strings.Contains(plan, "namespaces_slug_c_idx") && !strings.Contains(plan, "namespaces_created_at_idx") {
			t.Errorf("%s: the plan uses neither list index:\n%s", c.name, plan)
		}
		t.Logf("%s:\n%s", c.name, plan)
	}
	plan := explainAnalyze(t, s, `SELECT count(*) FROM namespaces WHERE `+namespaceSearch("team-12", new([]any)), "team-12", "team-12\uffff")
	if strings.Contains(plan, "Seq Scan") {
		t.Errorf("search count reads the whole table:\n%s", plan)
	}
	t.Logf("search count:\n%s", plan)
	if n, err := s.CountNamespaces(ctx, "team-12"); err != nil || n != 100 {
		t.Errorf("count of prefix team-12: %d, %v", n, err)
	}
}

// explainAnalyze runs EXPLAIN ANALYZE (timing off) of sql.
func explainAnalyze(t *testing.T, s *Store, sql string, args ...any) string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan.String()
}

// TestRepositoryCountsOfNamespaces: active repositories per namespace, the
// trash left out, zero for a namespace without any.
func TestRepositoryCountsOfNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(testdb.New(t), objstore.NewMem(), Options{})
	a, err := s.CreateNamespace(ctx, "count-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateNamespace(ctx, "count-b")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.pool.Exec(ctx, `INSERT INTO repositories (id, namespace_id, name, format, kind, visibility, soft_deleted_at)
			VALUES ($1, $2, $3, 0, 0, 0, CASE WHEN $4 THEN now() END)`, db.NewID(), a.ID, fmt.Sprintf("r%d", i), i == 2); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RepositoryCountsOfNamespaces(ctx, []uuid.UUID{a.ID, b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got[a.ID] != 2 || got[b.ID] != 0 || len(got) != 2 {
		t.Fatalf("counts %v", got)
	}
}
