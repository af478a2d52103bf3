package graph

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

const virtualFields = `id name kind format virtual { reservedPatterns deployTo { name }
	upstreams { position repository { name kind } rules { type field pattern } } }`

type virtualOut struct {
	Kind    string
	Virtual *struct {
		ReservedPatterns []string
		DeployTo         *struct{ Name string }
		Upstreams        []struct {
			Position   int
			Repository struct{ Name, Kind string }
			Rules      []struct{ Type, Field, Pattern string }
		}
	}
}

func (v virtualOut) names() string {
	var out []string
	for _, u := range v.Virtual.Upstreams {
		out = append(out, fmt.Sprintf("%d:%s", u.Position, u.Repository.Name))
	}
	return strings.Join(out, ",")
}

func upstreams(names ...string) []map[string]any {
	out := make([]map[string]any, len(names))
	for i, n := range names {
		out[i] = map[string]any{"repository": n}
	}
	return out
}

// TestVirtualRepositories: virtual repositories of the three formats are
// created, shown, reordered and replaced through GraphQL; positions are
// renumbered gap-free in the tables; bad settings are INVALID_INPUT (or
// NOT_FOUND for a missing upstream); a cycle through nested virtuals is
// refused; deleting an upstream is a CONFLICT naming the virtuals; and
// configuring needs READ on each upstream and WRITE on the deploy target.
func TestVirtualRepositories(t *testing.T) {
	t.Parallel()
	a := newStoreAPI(t, true)
	mountAPI(a, testKeyring(t, a.st))
	ctx := context.Background()
	nsID := a.createNamespace("virt")
	for _, n := range []string{"h1", "h2", "h3"} {
		a.createRepository("virt", n, "OCI", "PRIVATE")
	}
	a.createRepository("virt", "d1", "DOCKER", "PRIVATE")
	a.createRepository("virt", "n1", "NPM", "PRIVATE")
	a.createRepository("virt", "n2", "NPM", "PRIVATE")
	a.createRepository("virt", "m1", "MAVEN", "PRIVATE")
	a.createRepository("virt", "m2", "MAVEN", "PRIVATE")
	a.admin(`mutation { createRepository(input: {namespace: "virt", name: "r1", format: OCI, kind: REMOTE, remote: {url: "https://registry.example.test"}}) { repository { id } } }`, nil, nil)

	create := `mutation($in: CreateRepositoryInput!) { createRepository(input: $in) { repository { ` + virtualFields + ` } } }`
	update := `mutation($in: UpdateRepositoryInput!) { updateRepository(input: $in) { repository { ` + virtualFields + ` } } }`
	var out struct {
		CreateRepository struct{ Repository virtualOut }
		UpdateRepository struct{ Repository virtualOut }
	}
	a.admin(create, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all", "format": "OCI", "kind": "VIRTUAL",
		"virtual": map[string]any{
			"upstreams": []map[string]any{
				{"repository": "h1", "rules": []map[string]any{{"type": "DENY", "field": "VERSION", "pattern": "*-rc*"}}},
				{"repository": "r1", "rules": []map[string]any{{"type": "ALLOW", "field": "NAME", "pattern": "library/**"}}},
			},
			"deployTo": "h1", "reservedPatterns": []string{"acme/*"}}}}, &out)
	v := out.CreateRepository.Repository
	if v.Kind != "VIRTUAL" || v.names() != "1:h1,2:r1" || v.Virtual.DeployTo == nil || v.Virtual.DeployTo.Name != "h1" ||
		len(v.Virtual.ReservedPatterns) != 1 || v.Virtual.ReservedPatterns[0] != "acme/*" ||
		len(v.Virtual.Upstreams[0].Rules) != 1 || v.Virtual.Upstreams[0].Rules[0] != (struct{ Type, Field, Pattern string }{"DENY", "VERSION", "*-rc*"}) ||
		v.Virtual.Upstreams[1].Repository.Kind != "REMOTE" || v.Virtual.Upstreams[1].Rules[0].Field != "NAME" {
		t.Fatalf("created virtual %+v", v)
	}

	positions := func(table, fk, virtual string) string {
		t.Helper()
		rows, err := a.pool.Query(ctx, `SELECT r.name, u.position FROM `+table+`_virtual_repository_upstreams u
			JOIN `+table+`_virtual_repositories v ON v.namespace_id = u.namespace_id AND v.id = u.`+fk+`
			JOIN repositories vr ON vr.namespace_id = v.namespace_id AND vr.id = v.repository_id
			JOIN repositories r ON r.namespace_id = u.namespace_id AND r.id = u.upstream_repository_id
			WHERE u.namespace_id = $1 AND vr.name = $2 ORDER BY u.position`, nsID, virtual)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []string
		for rows.Next() {
			var n string
			var p int
			if err := rows.Scan(&n, &p); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d:%s", p, n))
		}
		return strings.Join(got, ",")
	}

	// Reorder and extend in one update: kept rows move past each other
	// (the deferrable constraint), the rules are replaced.
	a.admin(update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all",
		"virtual": map[string]any{"upstreams": upstreams("r1", "h2", "h1")}}}, &out)
	v = out.UpdateRepository.Repository
	if v.names() != "1:r1,2:h2,3:h1" || v.Virtual.DeployTo != nil || len(v.Virtual.ReservedPatterns) != 0 || len(v.Virtual.Upstreams[0].Rules) != 0 {
		t.Fatalf("reordered %+v", v)
	}
	if got := positions("container", "container_virtual_repository_id", "all"); got != "1:r1,2:h2,3:h1" {
		t.Fatalf("stored positions %s", got)
	}
	// Shrink: the dropped upstream's row (and rules) go; no gap.
	a.admin(update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all",
		"virtual": map[string]any{"upstreams": upstreams("h1", "r1"), "deployTo": "h1"}}}, &out)
	if got := positions("container", "container_virtual_repository_id", "all"); got != "1:h1,2:r1" {
		t.Fatalf("stored positions after shrinking %s", got)
	}

	// npm (0-based table) and Maven, with their own fields.
	a.admin(create, map[string]any{"in": map[string]any{"namespace": "virt", "name": "npm-all", "format": "NPM", "kind": "VIRTUAL",
		"virtual": map[string]any{"upstreams": []map[string]any{
			{"repository": "n2", "rules": []map[string]any{{"type": "ALLOW", "field": "SCOPE", "pattern": "@acme"}}},
			{"repository": "n1"}}, "deployTo": "n2", "reservedPatterns": []string{"@acme/*"}}}}, &out)
	if v := out.CreateRepository.Repository; v.names() != "1:n2,2:n1" || v.Virtual.Upstreams[0].Rules[0].Field != "SCOPE" || v.Virtual.DeployTo.Name != "n2" {
		t.Fatalf("npm virtual %+v", v)
	}
	if got := positions("npm", "npm_virtual_repository_id", "npm-all"); got != "0:n2,1:n1" {
		t.Fatalf("npm stored positions %s", got)
	}
	a.admin(create, map[string]any{"in": map[string]any{"namespace": "virt", "name": "maven-all", "format": "MAVEN", "kind": "VIRTUAL",
		"virtual": map[string]any{"upstreams": []map[string]any{
			{"repository": "m1", "rules": []map[string]any{{"type": "DENY", "field": "ARTIFACT_ID", "pattern": "internal-*"},
				{"type": "ALLOW", "field": "NAME", "pattern": "com.acme*"}}},
			{"repository": "m2"}}, "reservedPatterns": []string{"com/acme/**"}}}}, &out)
	if v := out.CreateRepository.Repository; v.names() != "1:m1,2:m2" || v.Virtual.Upstreams[0].Rules[0].Field != "ARTIFACT_ID" || v.Virtual.Upstreams[0].Rules[1].Field != "NAME" {
		t.Fatalf("maven virtual %+v", v)
	}

	// Bad input.
	bad := func(code string, name, format string, virtual map[string]any) {
		t.Helper()
		in := map[string]any{"namespace": "virt", "name": name, "format": format, "kind": "VIRTUAL"}
		if virtual != nil {
			in["virtual"] = virtual
		}
		a.expectError(adminToken, create, map[string]any{"in": in}, code)
	}
	long := strings.Repeat("a", 256)
	many := make([]map[string]any, 51)
	for i := range many {
		many[i] = map[string]any{"repository": fmt.Sprintf("x%d", i)}
	}
	bad(CodeInvalidInput, "b1", "OCI", nil)
	bad(CodeInvalidInput, "b2", "OCI", map[string]any{"upstreams": []map[string]any{}})
	bad(CodeNotFound, "b3", "OCI", map[string]any{"upstreams": upstreams("nope")})
	bad(CodeInvalidInput, "b4", "OCI", map[string]any{"upstreams": upstreams("n1")})       // another format
	bad(CodeInvalidInput, "b5", "OCI", map[string]any{"upstreams": upstreams("d1")})       // DOCKER under OCI
	bad(CodeInvalidInput, "b6", "OCI", map[string]any{"upstreams": upstreams("h1", "h1")}) // twice
	bad(CodeInvalidInput, "b7", "OCI", map[string]any{"upstreams": upstreams("h1"), "deployTo": "h2"})
	bad(CodeInvalidInput, "b8", "OCI", map[string]any{"upstreams": upstreams("h1", "r1"), "deployTo": "r1"})
	bad(CodeInvalidInput, "b9", "OCI", map[string]any{"upstreams": []map[string]any{{"repository": "h1",
		"rules": []map[string]any{{"type": "ALLOW", "field": "SCOPE", "pattern": "x"}}}}})
	bad(CodeInvalidInput, "b10", "OCI", map[string]any{"upstreams": []map[string]any{{"repository": "h1",
		"rules": []map[string]any{{"type": "ALLOW", "field": "NAME", "pattern": "a b"}}}}})
	bad(CodeInvalidInput, "b11", "OCI", map[string]any{"upstreams": []map[string]any{{"repository": "h1",
		"rules": []map[string]any{{"type": "ALLOW", "field": "NAME", "pattern": long}}}}})
	bad(CodeInvalidInput, "b12", "OCI", map[string]any{"upstreams": upstreams("h1"), "reservedPatterns": []string{""}})
	bad(CodeInvalidInput, "b13", "OCI", map[string]any{"upstreams": many})
	bad(CodeInvalidInput, "b14", "MAVEN", map[string]any{"upstreams": []map[string]any{{"repository": "m1",
		"rules": []map[string]any{{"type": "ALLOW", "field": "SCOPE", "pattern": "x"}}}}})
	a.expectError(adminToken, create, map[string]any{"in": map[string]any{"namespace": "virt", "name": "b15", "format": "OCI", "kind": "HOSTED",
		"virtual": map[string]any{"upstreams": upstreams("h1")}}}, CodeInvalidInput)
	// Virtual settings on a hosted repository.
	a.expectError(adminToken, update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "h2",
		"virtual": map[string]any{"upstreams": upstreams("h1")}}}, CodeInvalidInput)
	// Itself.
	a.expectError(adminToken, update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all",
		"virtual": map[string]any{"upstreams": upstreams("all")}}}, CodeInvalidInput)

	// Nesting, and the cycle it could close: outer -> all -> outer.
	a.admin(create, map[string]any{"in": map[string]any{"namespace": "virt", "name": "outer", "format": "OCI", "kind": "VIRTUAL",
		"virtual": map[string]any{"upstreams": upstreams("all", "h3")}}}, &out)
	if v := out.CreateRepository.Repository; v.names() != "1:all,2:h3" || v.Virtual.Upstreams[0].Repository.Kind != "VIRTUAL" {
		t.Fatalf("nested %+v", v)
	}
	r := a.expectError(adminToken, update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all",
		"virtual": map[string]any{"upstreams": upstreams("h1", "outer")}}}, CodeInvalidInput)
	if msg := r.Errors[0].Message; !strings.Contains(msg, "cycle") || !strings.Contains(msg, "all -> outer -> all") {
		t.Fatalf("cycle message %q", msg)
	}

	// Deleting an upstream: CONFLICT naming every virtual that lists it.
	del := `mutation($in: RepositoryRefInput!) { deleteRepository(input: $in) { repository { name softDeletedAt } } }`
	r = a.expectError(adminToken, del, map[string]any{"in": map[string]any{"namespace": "virt", "name": "h3"}}, CodeConflict)
	if msg := r.Errors[0].Message; !strings.Contains(msg, "outer") {
		t.Fatalf("conflict message %q", msg)
	}
	r = a.expectError(adminToken, del, map[string]any{"in": map[string]any{"namespace": "virt", "name": "h1"}}, CodeConflict)
	if msg := r.Errors[0].Message; !strings.Contains(msg, "virtual repositories all") {
		t.Fatalf("conflict message %q", msg)
	}
	a.admin(update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "outer",
		"virtual": map[string]any{"upstreams": upstreams("all")}}}, &out)
	a.admin(del, map[string]any{"in": map[string]any{"namespace": "virt", "name": "h3"}}, nil)
	// An upstream in the trash cannot be added.
	a.expectError(adminToken, update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "outer",
		"virtual": map[string]any{"upstreams": upstreams("h3")}}}, CodeInvalidInput)
	// A virtual in the trash still blocks, and says so.
	a.admin(del, map[string]any{"in": map[string]any{"namespace": "virt", "name": "outer"}}, nil)
	r = a.expectError(adminToken, del, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all"}}, CodeConflict)
	if msg := r.Errors[0].Message; !strings.Contains(msg, "outer (in the trash)") {
		t.Fatalf("conflict message %q", msg)
	}

	// Authorization: a token administering only "all" cannot add an
	// upstream it cannot read, nor deploy to one it cannot write.
	tok := a.createToken(adminToken, "virt", "virtual-admin", []string{"ADMIN"}, []string{"all", "h1"})
	a.expectError(tok.Secret, update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all",
		"virtual": map[string]any{"upstreams": upstreams("h1", "h2")}}}, CodeForbidden)
	reader := a.createToken(adminToken, "virt", "virtual-reader", []string{"READ"}, []string{"all", "h1", "h2"})
	a.expectError(reader.Secret, update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all",
		"virtual": map[string]any{"upstreams": upstreams("h1")}}}, CodeForbidden)
	r = a.post(tok.Secret, update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all",
		"virtual": map[string]any{"upstreams": upstreams("h1"), "deployTo": "h1"}}})
	if len(r.Errors) > 0 {
		t.Fatalf("token update: %+v", r.Errors)
	}
	// A reader sees only the upstreams it may read.
	a.admin(update, map[string]any{"in": map[string]any{"namespace": "virt", "name": "all",
		"virtual": map[string]any{"upstreams": upstreams("h2", "h1")}}}, nil)
	only := a.createToken(adminToken, "virt", "only-all", []string{"READ"}, []string{"all", "h1"})
	r = a.post(only.Secret, `query { repository(namespace: "virt", name: "all") { `+virtualFields+` } }`, nil)
	var seen struct{ Repository virtualOut }
	if len(r.Errors) > 0 {
		t.Fatalf("read: %+v", r.Errors)
	}
	mustJSON(t, r.Data, &seen)
	if seen.Repository.names() != "2:h1" {
		t.Fatalf("a reader of all and h1 sees %s", seen.Repository.names())
	}
}
