package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestRepositoryListUsesItsIndexes checks that every order and
// direction of the landing-page list, first page and keyset page, is an
// ordered range scan of its landing-page index (docs/schema.md
// "Repositories and collections"; no Sort node, no OFFSET): the
// planner is told to avoid sorts and sequential scans, so the plan shows
// whether an index matching the query exists.
func TestRepositoryListUsesItsIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := New(testdb.New(t), nil, Options{})
	ns, err := st.CreateNamespace(ctx, "plans")
	if err != nil {
		t.Fatal(err)
	}
	var in []NewRepository
	for i := 0; i < 500; i++ {
		in = append(in, NewRepository{Name: fmt.Sprintf("r-%03d", i), Format: enum.Format(i % 4), Kind: enum.KindHosted})
	}
	if _, err := st.CreateRepositoriesBulk(ctx, "plans", in); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(ctx, `ANALYZE repositories`); err != nil {
		t.Fatal(err)
	}
	oci := enum.FormatOCI
	// What auth.ReadableRepositories gives anonymous callers and tokens
	// that may not read everything: a filter on the same index walk.
	anonymous := &ReadableFilter{Visibilities: []enum.Visibility{enum.VisibilityPublic}}
	restricted := &ReadableFilter{Visibilities: []enum.Visibility{enum.VisibilityPublic, enum.VisibilityInternal}, IDs: []uuid.UUID{uuid.Must(uuid.NewV7())}}
	cases := []struct {
		order  RepositoryOrder
		filter RepositoryFilter
		index  string
	}{
		{OrderByName, RepositoryFilter{}, "repositories_active_name_idx"},
		{OrderByName, RepositoryFilter{Format: &oci}, "repositories_active_format_name_idx"},
		{OrderByLastUpdated, RepositoryFilter{}, "repositories_active_recently_updated_idx"},
		{OrderBySize, RepositoryFilter{}, "repositories_active_size_bytes_idx"},
		{OrderByDownloads, RepositoryFilter{}, "repositories_active_downloads_count_idx"},
		{OrderByArtifacts, RepositoryFilter{}, "repositories_active_artifacts_count_idx"},
		{OrderByName, RepositoryFilter{Readable: anonymous}, "repositories_active_name_idx"},
		{OrderBySize, RepositoryFilter{Readable: restricted}, "repositories_active_size_bytes_idx"},
		{OrderByLastUpdated, RepositoryFilter{Readable: restricted}, "repositories_active_recently_updated_idx"},
	}
	for _, c := range cases {
		for _, desc := range []bool{false, true} {
			q := RepositoryListQuery{NamespaceID: ns.ID, Order: c.order, Desc: desc, Filter: c.filter, Limit: 20}
			first, _, err := st.ListRepositories(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			k := c.order.KeyOf(first[len(first)-1], desc)
			for _, after := range []*RepositoryKey{nil, &k} {
				q.After = after
				sql, args, err := st.repositoryListSQL(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				plan := explain(t, st, sql, args)
				name := fmt.Sprintf("%s desc=%v keyset=%v filter=%v", c.order, desc, after != nil, c.filter.Format != nil)
				// The namespace's repositories live in one of the 64
				// partitions: the plan names the partition's index, attached
				// to the parent's landing-page index.
				m := usingIndex.FindStringSubmatch(plan)
				if m == nil {
					t.Fatalf("%s: no index scan:\n%s", name, plan)
				}
				var parent string
				if err := st.pool.QueryRow(ctx, `SELECT p.relname FROM pg_inherits i
					JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
					WHERE c.relname = $1`, m[1]).Scan(&parent); err != nil {
					t.Fatalf("%s: parent of %s: %v", name, m[1], err)
				}
				if parent != c.index {
					t.Errorf("%s: plan uses %s (of %s), want %s:\n%s", name, m[1], parent, c.index, plan)
				}
				if after != nil && !strings.Contains(plan, "Index Cond: ((namespace_id = ") {
					t.Errorf("%s: keyset is not an index condition:\n%s", name, plan)
				}
				if strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") {
					t.Errorf("%s: plan sorts or scans:\n%s", name, plan)
				}
			}
		}
	}
}

var usingIndex = regexp.MustCompile(`using (\S+) on`)

func explain(t *testing.T, st *Store, sql string, args []any) string {
	t.Helper()
	ctx := context.Background()
	conn, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_sort = off; SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET enable_sort; RESET enable_seqscan`) //nolint:errcheck
	rows, err := conn.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
