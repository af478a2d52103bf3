package graph

import (
	"fmt"
	"testing"
)

// countStatements runs a query and returns how many SQL statements it
// issued (the pgx tracer of the test pool).
func (a *testAPI) countStatements(t *testing.T, token, query string, vars map[string]any) (int64, *gqlResponse) {
	t.Helper()
	a.stmts.reset()
	r := a.post(token, query, vars)
	n := a.stmts.n.Load()
	if len(r.Errors) > 0 {
		t.Fatalf("errors: %+v", r.Errors)
	}
	return n, r
}

// TestNoNPlusOneNewFields: the fields added this round (Repository.image,
// backward pages, AccessToken.repositories) cost a fixed number of
// statements whatever the row count, for the admin and for a token.
func TestNoNPlusOneNewFields(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	seedNested(t, a, "img-small", 10)
	seedNested(t, a, "img-large", 100)

	query := `query($s: String!) { namespace(slug: $s) { repositories(last: 100) { edges { node {
		name image(name: "app") { name tags(first: 5) { edges { node { name } } } }
		missing: image(name: "nope") { name } } } } } }`
	check := func(token string, want int64) {
		t.Helper()
		small, r := a.countStatements(t, token, query, map[string]any{"s": "img-small"})
		var out struct {
			Namespace struct {
				Repositories struct {
					Edges []struct {
						Node struct {
							Image *struct {
								Name string
								Tags struct {
									Edges []struct{ Node struct{ Name string } }
								}
							}
							Missing *struct{ Name string }
						}
					}
				}
			}
		}
		mustJSON(t, r.Data, &out)
		if len(out.Namespace.Repositories.Edges) != 10 {
			t.Fatalf("%d repositories", len(out.Namespace.Repositories.Edges))
		}
		for _, e := range out.Namespace.Repositories.Edges {
			if e.Node.Image == nil || e.Node.Image.Name != "app" || len(e.Node.Image.Tags.Edges) != 2 || e.Node.Missing != nil {
				t.Fatalf("image(name) result %+v", e.Node)
			}
		}
		large, _ := a.countStatements(t, token, query, map[string]any{"s": "img-large"})
		t.Logf("image(name): %d statements for 10 repositories, %d for 100", small, large)
		// namespace, repository page, image by name (x2 names), tag page.
		if small != want || large != want {
			t.Fatalf("image(name) query ran %d and %d statements, want %d for both", small, large, want)
		}
	}
	check(adminToken, 5)

	// A namespace READ token: the same plan (its lookup is cached after
	// the first request).
	for _, slug := range []string{"img-small", "img-large"} {
		tok := a.createToken(adminToken, slug, "reader", []string{"READ"}, nil)
		a.post(tok.Secret, `{ viewer { name } }`, nil) // warm the token cache
		n, _ := a.countStatements(t, tok.Secret, query, map[string]any{"s": slug})
		if n != 5 {
			t.Fatalf("READ token on %s: %d statements, want 5", slug, n)
		}
	}

	// Token listing with each token's repositories: one batch for all.
	for i := 0; i < 30; i++ {
		a.createToken(adminToken, "img-large", fmt.Sprintf("restricted-%02d", i), []string{"READ"},
			[]string{fmt.Sprintf("repo-%03d", i), fmt.Sprintf("repo-%03d", i+50)})
	}
	tokQuery := `query($f: Int) { accessTokens(namespace: "img-large", first: $f) { edges { node { name namespace { slug } repositories { name } } } } }`
	few, _ := a.countStatements(t, adminToken, tokQuery, map[string]any{"f": 3})
	many, r := a.countStatements(t, adminToken, tokQuery, map[string]any{"f": 31})
	if !containsAll(string(r.Data), `"repo-029"`, `"repo-079"`, `"restricted-00"`) {
		t.Fatalf("token listing %s", r.Data)
	}
	t.Logf("accessTokens with repositories: %d statements for 3 tokens, %d for 31", few, many)
	// namespace lookup, token page, namespace loader, repositories batch.
	if few != 4 || many != 4 {
		t.Fatalf("token listing ran %d and %d statements, want 4 for both", few, many)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !contains(s, sub) {
			return false
		}
	}
	return true
}
