package graph

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestBackwardPagingInput: bad page arguments are INVALID_INPUT, a cursor
// works in both directions of its own order only, and PageInfo says which
// side has more rows.
func TestBackwardPagingInput(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	a.createNamespace("pages")
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		a.createRepository("pages", n, "NPM", "PUBLIC")
	}
	q := `query($f: Int, $a: String, $l: Int, $b: String, $o: RepositoryOrder) { namespace(slug: "pages") {
		repositories(first: $f, after: $a, last: $l, before: $b, orderBy: $o) {
			edges { cursor node { name } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`
	type conn struct {
		Edges []struct {
			Cursor string
			Node   struct{ Name string }
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			StartCursor, EndCursor       string
		}
	}
	run := func(token string, vars map[string]any) conn {
		t.Helper()
		var out struct{ Namespace struct{ Repositories conn } }
		r := a.post(token, q, vars)
		if len(r.Errors) > 0 {
			t.Fatalf("%v: %+v", vars, r.Errors)
		}
		mustJSON(t, r.Data, &out)
		return out.Namespace.Repositories
	}
	names := func(c conn) string {
		s := ""
		for _, e := range c.Edges {
			s += e.Node.Name
		}
		return s
	}
	// The last two, in list order; rows precede them.
	last := run("", map[string]any{"l": 2})
	if names(last) != "de" || !last.PageInfo.HasPreviousPage || last.PageInfo.HasNextPage {
		t.Fatalf("last 2: %s %+v", names(last), last.PageInfo)
	}
	// Before "d": "b", "c"; a forward page after "b" continues with "c".
	prev := run("", map[string]any{"l": 2, "b": last.PageInfo.StartCursor})
	if names(prev) != "bc" || !prev.PageInfo.HasPreviousPage || !prev.PageInfo.HasNextPage {
		t.Fatalf("before d: %s %+v", names(prev), prev.PageInfo)
	}
	next := run("", map[string]any{"f": 1, "a": prev.PageInfo.StartCursor})
	if names(next) != "c" {
		t.Fatalf("after b: %s", names(next))
	}
	first := run("", map[string]any{"l": 10, "b": prev.PageInfo.StartCursor})
	if names(first) != "a" || first.PageInfo.HasPreviousPage {
		t.Fatalf("before b: %s %+v", names(first), first.PageInfo)
	}
	// DESC backward: the last two of z..a are "b", "a".
	desc := run("", map[string]any{"l": 2, "o": map[string]any{"field": "NAME", "direction": "DESC"}})
	if names(desc) != "ba" {
		t.Fatalf("DESC last 2: %s", names(desc))
	}

	for name, vars := range map[string]map[string]any{
		"first and last":   {"f": 1, "l": 1},
		"after and before": {"a": last.PageInfo.StartCursor, "b": last.PageInfo.StartCursor},
		"last 0":           {"l": 0},
		"last 101":         {"l": 101},
		"garbage before":   {"b": "garbage"},
		"other order":      {"l": 1, "b": last.PageInfo.StartCursor, "o": map[string]any{"field": "NAME", "direction": "DESC"}},
		"other field":      {"b": last.PageInfo.StartCursor, "o": map[string]any{"field": "SIZE", "direction": "ASC"}},
	} {
		r := a.post(adminToken, q, vars)
		if r.code() != CodeInvalidInput {
			t.Errorf("%s: want INVALID_INPUT, got %q %+v", name, r.code(), r.Errors)
		}
	}
}

// TestTrashPagesBothWays: the trash walked forward and backward returns
// every item exactly once, newest first, while more items are trashed
// between pages.
func TestTrashPagesBothWays(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	a.createNamespace("bin")
	n := 0
	trashOne := func() string {
		n++
		name := fmt.Sprintf("r-%02d", n)
		a.createRepository("bin", name, "NPM", "PRIVATE")
		a.admin(`mutation($n: String!) { deleteRepository(input: {namespace: "bin", name: $n}) { repository { id } } }`,
			map[string]any{"n": name}, nil)
		return name
	}
	var initial []string
	for i := 0; i < 7; i++ {
		initial = append(initial, trashOne())
	}
	type page struct {
		Namespace struct {
			Trash struct {
				Edges []struct {
					DeletedAt time.Time
					Node      struct{ Name string }
				}
				PageInfo struct {
					HasNextPage, HasPreviousPage bool
					StartCursor, EndCursor       string
				}
			}
		}
	}
	q := `query($f: Int, $a: String, $l: Int, $b: String) { namespace(slug: "bin") {
		trash(first: $f, after: $a, last: $l, before: $b, kind: REPOSITORY) {
			edges { deletedAt node { ... on Repository { name } } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }`
	for _, backward := range []bool{false, true} {
		var pages [][]string
		var cursor *string
		for i := 0; ; i++ {
			if i > 50 {
				t.Fatal("walk does not end")
			}
			vars := map[string]any{"f": 2, "a": cursor}
			if backward {
				vars = map[string]any{"l": 2, "b": cursor}
			}
			var out page
			a.admin(q, vars, &out)
			tr := out.Namespace.Trash
			var names []string
			for _, e := range tr.Edges {
				names = append(names, e.Node.Name)
			}
			pages = append(pages, names)
			more, next := tr.PageInfo.HasNextPage, tr.PageInfo.EndCursor
			if backward {
				more, next = tr.PageInfo.HasPreviousPage, tr.PageInfo.StartCursor
			}
			if !more {
				break
			}
			cursor = &next
			if i < 2 {
				trashOne() // trashed while the walk goes on
			}
		}
		if backward {
			slices.Reverse(pages)
		}
		seen := map[string]int{}
		var order []string
		for _, p := range pages {
			for _, name := range p {
				seen[name]++
				order = append(order, name)
			}
		}
		for _, name := range initial {
			if seen[name] != 1 {
				t.Fatalf("backward=%v: %s seen %d times (walk %v)", backward, name, seen[name], order)
			}
		}
		for name, c := range seen {
			if c != 1 {
				t.Fatalf("backward=%v: %s seen %d times", backward, name, c)
			}
		}
		// Newest first: names were trashed in increasing order.
		for i := 1; i < len(order); i++ {
			if order[i-1] < order[i] {
				t.Fatalf("backward=%v: not newest first: %v", backward, order)
			}
		}
	}
	a.expectError(adminToken, `{ namespace(slug: "bin") { trash(first: 1, last: 1) { edges { cursor } } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `{ namespace(slug: "bin") { trash(last: 0) { edges { cursor } } } }`, nil, CodeInvalidInput)
	a.expectError(adminToken, `{ namespace(slug: "bin") { trash(before: "x") { edges { cursor } } } }`, nil, CodeInvalidInput)
}
