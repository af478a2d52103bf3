package graph

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/auth"
)

type createdToken struct {
	ID     uuid.UUID
	Secret string
}

func (a *testAPI) createToken(token, ns, name string, scopes []string, repos []string) createdToken {
	a.t.Helper()
	var out struct {
		CreateAccessToken struct {
			Token struct {
				ID     uuid.UUID
				Name   string
				Scopes []string
			}
			Secret string
		}
	}
	vars := map[string]any{"in": map[string]any{"namespace": ns, "name": name, "scopes": scopes, "repositories": repos}}
	r := a.post(token, `mutation($in: CreateAccessTokenInput!) { createAccessToken(input: $in) { token { id name scopes } secret } }`, vars)
	if len(r.Errors) > 0 {
		a.t.Fatalf("create token %s: %+v", name, r.Errors)
	}
	mustJSON(a.t, r.Data, &out)
	c := out.CreateAccessToken
	if !strings.HasPrefix(c.Secret, "arp_") || c.Token.Name != name || len(c.Token.Scopes) != len(scopes) {
		a.t.Fatalf("created token %+v", c)
	}
	return createdToken{ID: c.Token.ID, Secret: c.Secret}
}

// visibleRepositories lists the repository names the caller sees.
func (a *testAPI) visibleRepositories(token, ns string) ([]string, *gqlResponse) {
	a.t.Helper()
	r := a.post(token, `query($s: String!) { namespace(slug: $s) { repositories(first: 100) { totalCount edges { node { name } } } } }`,
		map[string]any{"s": ns})
	if len(r.Errors) > 0 {
		return nil, r
	}
	var out struct {
		Namespace struct {
			Repositories struct {
				TotalCount int
				Edges      []struct{ Node struct{ Name string } }
			}
		}
	}
	mustJSON(a.t, r.Data, &out)
	var names []string
	for _, e := range out.Namespace.Repositories.Edges {
		names = append(names, e.Node.Name)
	}
	if out.Namespace.Repositories.TotalCount != len(names) {
		a.t.Fatalf("totalCount %d for %d visible rows", out.Namespace.Repositories.TotalCount, len(names))
	}
	return names, r
}

// TestAccessTokensAndAuthorization: token management through GraphQL and
// the authorization matrix of the management API (anonymous, READ, ADMIN,
// restricted, other-namespace, revoked, expired and admin tokens) on real
// PostgreSQL through the HTTP handler.
func TestAccessTokensAndAuthorization(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	a.createNamespace("acme")
	a.createNamespace("other")
	a.createRepository("acme", "pub", "OCI", "PUBLIC")
	a.createRepository("acme", "priv", "OCI", "PRIVATE")
	a.createRepository("acme", "int", "NPM", "INTERNAL")
	a.createRepository("other", "theirs", "OCI", "PRIVATE")

	read := a.createToken(adminToken, "acme", "ci-read", []string{"READ"}, nil)
	nsAdmin := a.createToken(adminToken, "acme", "ns-admin", []string{"ADMIN"}, nil)
	restricted := a.createToken(adminToken, "acme", "only-priv", []string{"READ", "WRITE"}, []string{"priv"})
	other := a.createToken(adminToken, "other", "other-read", []string{"READ"}, nil)
	// An ADMIN token of the namespace mints tokens of its namespace.
	minted := a.createToken(nsAdmin.Secret, "acme", "minted", []string{"DELETE"}, nil)
	revoked := a.createToken(adminToken, "acme", "revoked", []string{"ADMIN"}, nil)
	expired := a.createToken(adminToken, "acme", "expired", []string{"ADMIN"}, nil)
	a.exec(`UPDATE access_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, expired.ID)

	t.Run("Listing", func(t *testing.T) {
		a := a.with(t)
		var out struct {
			AccessTokens struct {
				Edges []struct {
					Node struct {
						ID           uuid.UUID
						Name         string
						Scopes       []string
						Repositories *[]struct{ Name string }
						Namespace    struct{ Slug string }
						RevokedAt    *time.Time
					}
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		var names []string
		var after *string
		for page := 0; page < 20; page++ {
			a.admin(`query($a: String) { accessTokens(namespace: "acme", first: 2, after: $a) {
				edges { node { id name scopes repositories { name } namespace { slug } revokedAt } } pageInfo { hasNextPage endCursor } } }`,
				map[string]any{"a": after}, &out)
			for _, e := range out.AccessTokens.Edges {
				n := e.Node
				names = append(names, n.Name)
				if n.Namespace.Slug != "acme" {
					t.Fatalf("token %s in namespace %q", n.Name, n.Namespace.Slug)
				}
				if n.Name == "only-priv" && (n.Repositories == nil || len(*n.Repositories) != 1 || (*n.Repositories)[0].Name != "priv") {
					t.Fatalf("restricted token repositories %+v", n.Repositories)
				}
				if n.Name == "ci-read" && n.Repositories != nil {
					t.Fatalf("unrestricted token lists repositories %+v", *n.Repositories)
				}
			}
			if !out.AccessTokens.PageInfo.HasNextPage {
				break
			}
			c := out.AccessTokens.PageInfo.EndCursor
			after = &c
		}
		// Newest first, each once.
		want := []string{"expired", "revoked", "minted", "only-priv", "ns-admin", "ci-read"}
		if !slices.Equal(names, want) {
			t.Fatalf("tokens %v, want %v", names, want)
		}
	})

	t.Run("Revoke", func(t *testing.T) {
		a := a.with(t)
		// A READ token may not revoke another token; an ADMIN token of
		// another namespace neither.
		rev := `mutation($id: ID!) { revokeAccessToken(input: {namespace: "acme", id: $id}) { token { id revokedAt } } }`
		a.expectError(read.Secret, rev, map[string]any{"id": revoked.ID}, CodeForbidden)
		a.expectError(other.Secret, rev, map[string]any{"id": revoked.ID}, CodeForbidden)
		a.expectError("", rev, map[string]any{"id": revoked.ID}, CodeUnauthenticated)
		// Works before revocation...
		if r := a.post(revoked.Secret, `{ viewer { name } }`, nil); r.Status != http.StatusOK || len(r.Errors) > 0 {
			t.Fatalf("token before revocation: %d %+v", r.Status, r.Errors)
		}
		var out struct {
			RevokeAccessToken struct {
				Token struct{ RevokedAt *time.Time }
			}
		}
		a.admin(rev, map[string]any{"id": revoked.ID}, &out)
		if out.RevokeAccessToken.Token.RevokedAt == nil {
			t.Fatal("revokedAt not set")
		}
		// ...and is refused at once afterwards (this replica forgets it).
		r := a.post(revoked.Secret, `{ viewer { name } }`, nil)
		if r.Status != http.StatusUnauthorized || r.code() != CodeUnauthenticated {
			t.Fatalf("revoked token: %d %+v", r.Status, r.Errors)
		}
		// Idempotent.
		a.admin(rev, map[string]any{"id": revoked.ID}, nil)
		// Hidden from the default listing, shown with includeRevoked.
		var list struct {
			AccessTokens struct {
				Edges []struct{ Node struct{ Name string } }
			}
		}
		a.admin(`{ accessTokens(namespace: "acme", first: 100) { edges { node { name } } } }`, nil, &list)
		for _, e := range list.AccessTokens.Edges {
			if e.Node.Name == "revoked" {
				t.Fatal("revoked token listed by default")
			}
		}
		a.admin(`{ accessTokens(namespace: "acme", first: 100, includeRevoked: true) { edges { node { name } } } }`, nil, &list)
		if !slices.ContainsFunc(list.AccessTokens.Edges, func(e struct{ Node struct{ Name string } }) bool { return e.Node.Name == "revoked" }) {
			t.Fatal("revoked token missing with includeRevoked")
		}
		// A token may revoke itself.
		self := a.createToken(adminToken, "acme", "self", []string{"READ"}, nil)
		if r := a.post(self.Secret, rev, map[string]any{"id": self.ID}); len(r.Errors) > 0 {
			t.Fatalf("self revocation: %+v", r.Errors)
		}
	})

	t.Run("Expired", func(t *testing.T) {
		r := a.with(t).post(expired.Secret, `{ viewer { name } }`, nil)
		if r.Status != http.StatusUnauthorized || r.code() != CodeUnauthenticated || !strings.Contains(r.Errors[0].Message, "expired") {
			t.Fatalf("expired token: %d %+v", r.Status, r.Errors)
		}
	})

	t.Run("Visibility", func(t *testing.T) {
		a := a.with(t)
		for _, tc := range []struct {
			who, token string
			want       []string
		}{
			{"anonymous", "", []string{"pub"}},
			{"READ token", read.Secret, []string{"int", "priv", "pub"}},
			{"restricted token", restricted.Secret, []string{"priv", "pub"}},
			{"other namespace token", other.Secret, []string{"int", "pub"}},
			{"admin", adminToken, []string{"int", "priv", "pub"}},
		} {
			got, r := a.visibleRepositories(tc.token, "acme")
			if r.Errors != nil {
				t.Fatalf("%s: %+v", tc.who, r.Errors)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("%s sees %v, want %v", tc.who, got, tc.want)
			}
		}
		q := `query($n: String!) { repository(namespace: "acme", name: $n) { name } }`
		for _, tc := range []struct {
			who, token, repo, code string
		}{
			{"anonymous", "", "priv", CodeUnauthenticated},
			{"anonymous", "", "int", CodeUnauthenticated},
			{"anonymous", "", "pub", ""},
			{"READ", read.Secret, "priv", ""},
			{"restricted", restricted.Secret, "int", CodeForbidden},
			{"restricted", restricted.Secret, "priv", ""},
			{"other", other.Secret, "priv", CodeForbidden},
			{"other", other.Secret, "int", ""},
			{"other", other.Secret, "missing", CodeForbidden}, // cannot probe names
			{"READ", read.Secret, "missing", CodeNotFound},
		} {
			r := a.post(tc.token, q, map[string]any{"n": tc.repo})
			if r.code() != tc.code {
				t.Fatalf("%s reading %s: want %q, got %+v", tc.who, tc.repo, tc.code, r.Errors)
			}
		}
	})

	t.Run("Matrix", func(t *testing.T) {
		a := a.with(t)
		ops := []struct {
			name, query string
			vars        map[string]any
		}{
			{"createNamespace", `mutation($s: String!) { createNamespace(input: {slug: $s}) { namespace { id } } }`, map[string]any{"s": "x"}},
			{"setNamespaceCondition", `mutation { setNamespaceCondition(slug: "acme", condition: SUSPENDED, active: false) { namespace { status } } }`, nil},
			{"namespaces", `{ namespaces { totalCount } }`, nil},
			{"createRepository", `mutation($n: String!) { createRepository(input: {namespace: "acme", name: $n, format: OCI}) { repository { id } } }`, map[string]any{"n": "x"}},
			{"updateRepository", `mutation { updateRepository(input: {namespace: "acme", name: "priv", description: "d"}) { repository { id } } }`, nil},
			{"statistics", `{ namespace(slug: "acme") { statistics { componentsCount } } }`, nil},
			{"repositoriesCount", `{ namespace(slug: "acme") { repositoriesCount } }`, nil},
			{"trash", `{ namespace(slug: "acme") { trash { edges { cursor } } } }`, nil},
			{"gcQueue", `{ namespace(slug: "acme") { gcQueue { tracked lastReclaimedAt } } }`, nil},
			{"accessTokens", `{ accessTokens(namespace: "acme") { edges { cursor } } }`, nil},
			{"createAccessToken", `mutation($n: String!) { createAccessToken(input: {namespace: "acme", name: $n, scopes: [READ]}) { secret } }`, map[string]any{"n": "x"}},
			{"setGarbageCollection", `mutation { setGarbageCollection(enabled: true) { garbageCollection { enabled } } }`, nil},
			{"excludedGcCandidates", `{ excludedGcCandidates(namespace: "acme") { edges { cursor } } }`, nil},
		}
		// Expected code per caller and operation ("" = allowed).
		callers := []struct {
			who, token string
			want       map[string]string
		}{
			{"anonymous", "", map[string]string{"*": CodeUnauthenticated}},
			{"READ", read.Secret, map[string]string{"*": CodeForbidden}},
			{"restricted", restricted.Secret, map[string]string{"*": CodeForbidden}},
			{"other", other.Secret, map[string]string{"*": CodeForbidden}},
			{"ns ADMIN", nsAdmin.Secret, map[string]string{
				"*": "", "createNamespace": CodeForbidden, "setNamespaceCondition": CodeForbidden, "namespaces": CodeForbidden,
				"setGarbageCollection": CodeForbidden, "excludedGcCandidates": CodeForbidden,
			}},
			{"DELETE", minted.Secret, map[string]string{"*": CodeForbidden}},
			{"admin", adminToken, map[string]string{"*": ""}},
		}
		for i, c := range callers {
			for _, op := range ops {
				want, ok := c.want[op.name]
				if !ok {
					want = c.want["*"]
				}
				vars := map[string]any{}
				for k, v := range op.vars {
					vars[k] = fmt.Sprintf("%v-%d", v, i) // unique names per caller
				}
				r := a.post(c.token, op.query, vars)
				if r.code() != want {
					t.Errorf("%s %s: want %q, got %q %+v", c.who, op.name, want, r.code(), r.Errors)
				}
				if want != "" && r.Status != http.StatusOK {
					t.Errorf("%s %s: HTTP %d for a GraphQL error", c.who, op.name, r.Status)
				}
			}
		}
	})

	t.Run("Viewer", func(t *testing.T) {
		a := a.with(t)
		for _, tc := range []struct {
			token, kind, name, ns string
		}{
			{"", "ANONYMOUS", "anonymous", ""},
			{adminToken, "ADMIN", auth.DefaultAdminUser, ""},
			{read.Secret, "TOKEN", "ci-read", "acme"},
		} {
			var out struct {
				Viewer struct {
					Kind, Name string
					Namespace  *struct{ Slug string }
					Scopes     []string
				}
			}
			r := a.post(tc.token, `{ viewer { kind name namespace { slug } scopes } }`, nil)
			if len(r.Errors) > 0 {
				t.Fatalf("viewer: %+v", r.Errors)
			}
			mustJSON(t, r.Data, &out)
			v := out.Viewer
			if v.Kind != tc.kind || v.Name != tc.name || (tc.ns != "") != (v.Namespace != nil) || (v.Namespace != nil && v.Namespace.Slug != tc.ns) {
				t.Fatalf("viewer %+v, want %+v", v, tc)
			}
		}
	})

	t.Run("SuspendedNamespace", func(t *testing.T) {
		a := a.with(t)
		a.admin(`mutation { setNamespaceCondition(slug: "acme", condition: SUSPENDED, active: true) { namespace { status } } }`, nil, nil)
		defer a.admin(`mutation { setNamespaceCondition(slug: "acme", condition: SUSPENDED, active: false) { namespace { status } } }`, nil, nil)
		// Reads still work for the token; changes are refused with the reason.
		if _, r := a.visibleRepositories(read.Secret, "acme"); r.Errors != nil {
			t.Fatalf("read in suspended namespace: %+v", r.Errors)
		}
		r := a.expectError(nsAdmin.Secret, `mutation { createRepository(input: {namespace: "acme", name: "late", format: OCI}) { repository { id } } }`, nil, auth.CodeNamespaceUnavailable)
		if r.Errors[0].Extensions["reason"] != "suspended" || !strings.Contains(r.Errors[0].Message, "suspended") {
			t.Fatalf("suspended refusal: %+v", r.Errors)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		a := a.with(t)
		create := `mutation($in: CreateAccessTokenInput!) { createAccessToken(input: $in) { secret } }`
		in := func(kv ...any) map[string]any {
			m := map[string]any{"namespace": "acme", "name": "bad", "scopes": []string{"READ"}}
			for i := 0; i < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return map[string]any{"in": m}
		}
		for name, vars := range map[string]map[string]any{
			"no scopes":          in("scopes", []string{}),
			"empty name":         in("name", ""),
			"long name":          in("name", strings.Repeat("n", 256)),
			"past expiry":        in("expiresAt", time.Now().Add(-time.Hour).Format(time.RFC3339)),
			"empty repositories": in("repositories", []string{}),
		} {
			r := a.post(adminToken, create, vars)
			if c := r.code(); c != CodeInvalidInput {
				t.Errorf("%s: want INVALID_INPUT, got %q %+v", name, c, r.Errors)
			}
		}
		if r := a.post(adminToken, create, in("repositories", []string{"nope"})); r.code() != CodeNotFound && r.code() != CodeInvalidInput {
			t.Errorf("unknown repository: %+v", r.Errors)
		}
		if r := a.post(adminToken, create, in("scopes", []string{"SUPERUSER"})); r.code() != "GRAPHQL_VALIDATION_FAILED" && r.code() != CodeInvalidInput {
			t.Errorf("unknown scope: %+v", r.Errors)
		}
		a.expectError(adminToken, create, in("namespace", "nope"), CodeNotFound)
		// Nothing half-written: no token named "bad" exists.
		var n int
		if err := a.pool.QueryRow(t.Context(), `SELECT count(*) FROM access_tokens WHERE name = 'bad'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("bad tokens written: %d (%v)", n, err)
		}
		rev := `mutation($id: ID!) { revokeAccessToken(input: {namespace: "acme", id: $id}) { token { id } } }`
		a.expectError(adminToken, rev, map[string]any{"id": "not-a-uuid"}, CodeInvalidInput)
		a.expectError(adminToken, rev, map[string]any{"id": newID(t).String()}, CodeNotFound)
		a.expectError(adminToken, `{ accessTokens(namespace: "acme", after: "garbage") { edges { cursor } } }`, nil, CodeInvalidInput)
		a.expectError(adminToken, `{ accessTokens(namespace: "acme", first: 0) { edges { cursor } } }`, nil, CodeInvalidInput)
		// A malformed credential is refused before execution.
		r := a.post("arp_garbage", `{ viewer { name } }`, nil)
		if r.Status != http.StatusUnauthorized || r.code() != CodeUnauthenticated {
			t.Fatalf("malformed token: %d %+v", r.Status, r.Errors)
		}
	})
}
