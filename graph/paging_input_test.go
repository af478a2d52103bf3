package graph

import "testing"

// TestBackwardPagingInput: bad page arguments are INVALID_INPUT, a cursor
// works in both directions of its own order only, and PageInfo says which
// side has more rows.
func TestBackwardPagingInput(t *testing.T) {
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
