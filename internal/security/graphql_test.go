package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/artifact-registry/artifact-registry/graph"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// fieldRule is the authorization rule of one root field of the schema.
// The operation is built from the schema (arguments and their types); the
// rule gives the arguments. With a format, it is exercised on every
// repository of that format (args receives the repository), else once.
type fieldRule struct {
	field  string // "Query.x" or "Mutation.x"
	need   need
	format enum.Format
	args   func(g *gworld, repo string) map[string]any
	// see: allowed callers get a non-null field (queries that hide).
	see bool
}

var noArgs = func(*gworld, string) map[string]any { return nil }

func input(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return map[string]any{"input": m}
}

const home, stranger = testserver.Home, testserver.Other

// fieldRules are in the order they run: a mutation that takes something
// away runs before the one that brings it back. A root field of the schema
// without a rule fails TestEveryGraphQLFieldHasARule: add it here.
var fieldRules = []fieldRule{
	{field: "Query.viewer", need: anyone, args: noArgs},
	// Anyone sees a namespace that serves reads; what is inside is
	// filtered (TestListingsAreFiltered).
	{field: "Query.namespace", need: anyone, args: func(*gworld, string) map[string]any { return map[string]any{"slug": home} }, see: true},
	// With every argument, so that none of them widens the rule.
	{field: "Query.namespaces", need: super, args: func(*gworld, string) map[string]any {
		return map[string]any{"first": 5, "search": home[:1], "orderBy": map[string]any{"field": "CREATED_AT", "direction": "DESC"}}
	}},
	{field: "Query.repository", need: pull, format: enum.FormatOCI, see: true,
		args: func(_ *gworld, r string) map[string]any { return map[string]any{"namespace": home, "name": r} }},
	{field: "Query.accessTokens", need: nsAdmin, args: func(*gworld, string) map[string]any { return map[string]any{"namespace": home} }},
	{field: "Query.garbageCollection", need: super, args: noArgs},
	{field: "Query.excludedGcCandidates", need: super, args: func(*gworld, string) map[string]any { return map[string]any{"namespace": home} }},
	{field: "Query.legacyRepositories", need: super, args: noArgs},
	{field: "Query.legacyMigrationProgress", need: super, args: noArgs},
	{field: "Query.legacyMigrationControls", need: super, args: noArgs},

	{field: "Mutation.createNamespace", need: super, args: func(g *gworld, _ string) map[string]any { return input("slug", g.unique("ns")) }},
	{field: "Mutation.setNamespaceCondition", need: super, args: func(*gworld, string) map[string]any {
		return map[string]any{"slug": "victim", "condition": "SUSPENDED", "active": false}
	}},
	{field: "Mutation.deleteNamespace", need: super, args: func(*gworld, string) map[string]any { return map[string]any{"slug": "victim"} }},
	{field: "Mutation.restoreNamespace", need: super, args: func(*gworld, string) map[string]any { return map[string]any{"slug": "victim"} }},

	{field: "Mutation.createRepository", need: nsAdmin, args: func(g *gworld, _ string) map[string]any {
		return input("namespace", home, "name", g.unique("repo"), "format", "OCI")
	}},
	{field: "Mutation.updateRepository", need: nsAdmin, args: func(*gworld, string) map[string]any {
		return input("namespace", home, "name", "scratch", "description", "changed")
	}},
	{field: "Mutation.deleteRepository", need: nsAdmin, args: func(*gworld, string) map[string]any { return input("namespace", home, "name", "scratch") }},
	{field: "Mutation.restoreRepository", need: nsAdmin, args: func(*gworld, string) map[string]any { return input("namespace", home, "name", "scratch") }},
	{field: "Mutation.purgeRepository", need: nsAdmin, args: func(*gworld, string) map[string]any { return input("namespace", home, "name", "scratch") }},
	{field: "Mutation.createRepositoryCollection", need: nsAdmin, args: func(g *gworld, _ string) map[string]any {
		return input("namespace", home, "name", g.unique("col"))
	}},
	{field: "Mutation.linkRepositoryToCollection", need: nsAdmin, args: func(*gworld, string) map[string]any {
		return input("namespace", home, "repository", "scratch", "collection", "no-such-collection")
	}},
	{field: "Mutation.unlinkRepositoryFromCollection", need: nsAdmin, args: func(*gworld, string) map[string]any {
		return input("namespace", home, "repository", "scratch", "collection", "no-such-collection")
	}},

	{field: "Mutation.deleteContainerTag", need: del, format: enum.FormatOCI, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "image", "img", "tag", "no-such-tag")
	}},
	{field: "Mutation.deleteContainerManifest", need: del, format: enum.FormatOCI, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "image", "img", "digest", testserver.SHA([]byte("absent")))
	}},
	{field: "Mutation.restoreContainerManifest", need: del, format: enum.FormatOCI, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "image", "img", "digest", testserver.SHA([]byte("absent")))
	}},

	// Cache administration of a pull-through cache: ADMIN on the
	// repository (on a hosted repository an allowed caller gets
	// INVALID_INPUT, after the check).
	{field: "Mutation.invalidateRemoteTag", need: nsAdmin, format: enum.FormatOCI, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "image", "img", "tag", "no-such-tag")
	}},
	{field: "Mutation.evictRemoteImage", need: nsAdmin, format: enum.FormatOCI, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "image", "no-such-image")
	}},
	{field: "Mutation.invalidateRemoteMetadata", need: nsAdmin, format: enum.FormatNpm, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "package", "no-such-package")
	}},
	{field: "Mutation.invalidateRemoteMavenMetadata", need: nsAdmin, format: enum.FormatMaven, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "groupId", "com.example")
	}},

	{field: "Mutation.setNpmDistTag", need: push, format: enum.FormatNpm, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "package", "pkg", "tag", "stable", "version", "1.0.0")
	}},
	{field: "Mutation.removeNpmDistTag", need: push, format: enum.FormatNpm, args: func(_ *gworld, r string) map[string]any {
		return input("namespace", home, "repository", r, "package", "pkg", "tag", "stable")
	}},
	// Trash and restore of packages administer the namespace (ADMIN).
	{field: "Mutation.deleteNpmVersion", need: nsAdmin, format: enum.FormatNpm, args: func(g *gworld, r string) map[string]any {
		return input("namespace", home, "id", g.npmVersion[r])
	}},
	{field: "Mutation.restoreNpmVersion", need: nsAdmin, format: enum.FormatNpm, args: func(g *gworld, r string) map[string]any {
		return input("namespace", home, "id", g.npmVersion[r])
	}},
	{field: "Mutation.deleteNpmPackage", need: nsAdmin, format: enum.FormatNpm, args: func(g *gworld, r string) map[string]any {
		return input("namespace", home, "id", g.npmPackage[r])
	}},
	{field: "Mutation.restoreNpmPackage", need: nsAdmin, format: enum.FormatNpm, args: func(g *gworld, r string) map[string]any {
		return input("namespace", home, "id", g.npmPackage[r])
	}},
	{field: "Mutation.deleteMavenVersion", need: nsAdmin, format: enum.FormatMaven, args: func(g *gworld, r string) map[string]any {
		return input("namespace", home, "id", g.mavenVersion[r])
	}},
	{field: "Mutation.restoreMavenVersion", need: nsAdmin, format: enum.FormatMaven, args: func(g *gworld, r string) map[string]any {
		return input("namespace", home, "id", g.mavenVersion[r])
	}},
	{field: "Mutation.deleteMavenPackage", need: nsAdmin, format: enum.FormatMaven, args: func(g *gworld, r string) map[string]any {
		return input("namespace", home, "id", g.mavenPackage[r])
	}},
	{field: "Mutation.restoreMavenPackage", need: nsAdmin, format: enum.FormatMaven, args: func(g *gworld, r string) map[string]any {
		return input("namespace", home, "id", g.mavenPackage[r])
	}},

	{field: "Mutation.createAccessToken", need: nsAdmin, args: func(g *gworld, _ string) map[string]any {
		return input("namespace", home, "name", g.unique("token"), "scopes", []string{"READ"})
	}},
	{field: "Mutation.revokeAccessToken", need: nsAdmin, args: func(g *gworld, _ string) map[string]any {
		return input("namespace", home, "id", g.sacrificialToken)
	}},

	{field: "Mutation.setGarbageCollection", need: super, args: func(*gworld, string) map[string]any { return map[string]any{"enabled": true} }},
	{field: "Mutation.requeueGcCandidate", need: super, args: func(*gworld, string) map[string]any {
		return input("namespace", home, "digest", testserver.SHA([]byte("absent")))
	}},
	{field: "Mutation.prioritizeLegacyRepository", need: super, args: func(*gworld, string) map[string]any { return map[string]any{"id": "1", "priority": 1} }},
	{field: "Mutation.skipLegacyRepository", need: super, args: func(*gworld, string) map[string]any { return map[string]any{"id": "1"} }},
	{field: "Mutation.retryLegacyRepository", need: super, args: func(*gworld, string) map[string]any { return map[string]any{"id": "1"} }},
	{field: "Mutation.pauseLegacyMigration", need: super, args: noArgs},
	{field: "Mutation.resumeLegacyMigration", need: super, args: noArgs},
	{field: "Mutation.setLegacyMigrationControls", need: super, args: func(*gworld, string) map[string]any { return input("concurrency", 2) }},

	// Storage: counters, trash retention and lifecycle policies administer
	// the namespace. The policy set here is disabled, so running it deletes
	// nothing; the trash is emptied last.
	{field: "Query.previewLifecyclePolicy", need: nsAdmin, args: func(*gworld, string) map[string]any { return map[string]any{"namespace": home} }},
	{field: "Mutation.reconcileNamespaceCounters", need: nsAdmin, args: func(*gworld, string) map[string]any { return input("namespace", home) }},
	{field: "Mutation.setTrashRetention", need: nsAdmin, args: func(*gworld, string) map[string]any { return input("namespace", home, "days", 7) }},
	{field: "Mutation.setLifecyclePolicy", need: nsAdmin, args: func(*gworld, string) map[string]any {
		return input("namespace", home, "enabled", false, "rules", []any{})
	}},
	{field: "Mutation.runLifecyclePolicy", need: nsAdmin, args: func(*gworld, string) map[string]any { return input("namespace", home) }},
	{field: "Mutation.purgeTrash", need: nsAdmin, args: func(*gworld, string) map[string]any {
		return input("namespace", home, "ids", []string{"0190a4b8-0000-7000-8000-000000000001"})
	}},
	{field: "Mutation.emptyTrash", need: nsAdmin, args: func(*gworld, string) map[string]any { return input("namespace", home) }},
}

// rootFields lists "Query.x" and "Mutation.x" for every root field of the
// served schema (introspection fields aside).
func rootFields(s *ast.Schema) []string {
	var out []string
	for _, root := range []*ast.Definition{s.Query, s.Mutation} {
		for _, f := range root.Fields {
			if !strings.HasPrefix(f.Name, "__") {
				out = append(out, root.Name+"."+f.Name)
			}
		}
	}
	return out
}

func missingFieldRules(fields []string) []string {
	var missing []string
	for _, f := range fields {
		if !slices.ContainsFunc(fieldRules, func(r fieldRule) bool { return r.field == f }) {
			missing = append(missing, f)
		}
	}
	return missing
}

func servedSchema() *ast.Schema { return graph.NewExecutableSchema(graph.Config{}).Schema() }

func TestEveryGraphQLFieldHasARule(t *testing.T) {
	t.Parallel()
	s := servedSchema()
	fields := rootFields(s)
	if len(fields) < 40 {
		t.Fatalf("walked only %d root fields", len(fields))
	}
	for _, f := range missingFieldRules(fields) {
		t.Errorf("GraphQL field %s has no authorization rule: add it to fieldRules in internal/security/graphql_test.go", f)
	}
	seen := map[string]bool{}
	for _, r := range fieldRules {
		if seen[r.field] {
			t.Errorf("fieldRules has %s twice", r.field)
		}
		seen[r.field] = true
		if !slices.Contains(fields, r.field) {
			t.Errorf("fieldRules has %s, which the schema does not serve: remove or rename it", r.field)
		}
	}
	// The check itself: a field added without a rule is reported.
	if got := missingFieldRules(append(fields, "Mutation.addedWithoutARule")); !slices.Equal(got, []string{"Mutation.addedWithoutARule"}) {
		t.Errorf("a field without a rule was reported as %v", got)
	}
}

// gworld is the world plus what the GraphQL rules point at.
type gworld struct {
	*world
	schema                     *ast.Schema
	npmPackage, npmVersion     map[string]string // repository → ID
	mavenPackage, mavenVersion map[string]string
	sacrificialToken           string
	n                          int
}

func (g *gworld) unique(prefix string) string { g.n++; return fmt.Sprintf("%s-%d", prefix, g.n) }

func newGWorld(t *testing.T) *gworld {
	g := &gworld{world: newWorld(t), schema: servedSchema(),
		npmPackage: map[string]string{}, npmVersion: map[string]string{}, mavenPackage: map[string]string{}, mavenVersion: map[string]string{}}
	g.Repo("scratch", enum.FormatOCI, enum.VisibilityPrivate)
	if _, err := g.Store.CreateNamespace(g.Ctx, "victim"); err != nil {
		t.Fatal(err)
	}
	_, tok := g.Mint(home, "sacrificial", authSpec(enum.TokenScopeRead))
	g.sacrificialToken = tok.ID.String()
	for _, tg := range g.targets {
		if tg.remote {
			continue // a cache holds no packages of its own until read through
		}
		var doc string
		switch tg.format {
		case enum.FormatNpm:
			doc = `query($n:String!,$r:String!){repository(namespace:$n,name:$r){npmPackage(name:"pkg"){id version(version:"1.0.0"){id}}}}`
		case enum.FormatMaven:
			doc = `query($n:String!,$r:String!){repository(namespace:$n,name:$r){mavenPackage(groupId:"com.example",artifactId:"lib"){id version(version:"1.0"){id}}}}`
		default:
			continue
		}
		var out struct {
			Data struct {
				Repository map[string]*struct {
					ID      string
					Version *struct{ ID string }
				}
			}
		}
		body := g.graphql(t, testserver.AdminToken, doc, map[string]any{"n": home, "r": tg.repo})
		if err := json.Unmarshal([]byte(body), &out); err != nil || out.Data.Repository == nil {
			t.Fatalf("package ids of %s: %v %s", tg.repo, err, body)
		}
		for k, p := range out.Data.Repository {
			if p == nil || p.Version == nil {
				t.Fatalf("package ids of %s: %s", tg.repo, body)
			}
			if k == "npmPackage" {
				g.npmPackage[tg.repo], g.npmVersion[tg.repo] = p.ID, p.Version.ID
			} else {
				g.mavenPackage[tg.repo], g.mavenVersion[tg.repo] = p.ID, p.Version.ID
			}
		}
	}
	return g
}

// graphql posts an operation as secret ("" anonymous) and returns the body.
func (g *gworld) graphql(t *testing.T, secret, doc string, vars map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"query": doc, "variables": vars})
	authz := ""
	if secret != "" {
		authz = testserver.Bearer(secret)
	}
	r := g.Do(http.MethodPost, "/graphql", authz, b, "Content-Type", "application/json")
	if r.Status != http.StatusOK {
		t.Fatalf("graphql %s: %d %s", doc, r.Status, r.Body)
	}
	return r.Body
}

// operation builds the document of a root field from the schema: every
// argument the rule gives becomes a variable of the schema's type.
func (g *gworld) operation(field string, args map[string]any) string {
	kind, name, _ := strings.Cut(field, ".")
	root := g.schema.Query
	if kind == "Mutation" {
		root = g.schema.Mutation
	}
	def := root.Fields.ForName(name)
	var decl, pass []string
	for _, a := range def.Arguments {
		if _, ok := args[a.Name]; ok {
			decl = append(decl, "$"+a.Name+":"+a.Type.String())
			pass = append(pass, a.Name+":$"+a.Name)
		}
	}
	op := strings.ToLower(kind)
	if len(decl) > 0 {
		op += "(" + strings.Join(decl, ",") + ")"
	}
	call := "f:" + name
	if len(pass) > 0 {
		call += "(" + strings.Join(pass, ",") + ")"
	}
	if t := g.schema.Types[def.Type.Name()]; t != nil && (t.Kind == ast.Object || t.Kind == ast.Interface || t.Kind == ast.Union) {
		call += "{__typename}"
	}
	return op + "{" + call + "}"
}

// gqlResult is the part of a response the matrix reads.
type gqlResult struct {
	Data   map[string]json.RawMessage
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	}
}

func (r gqlResult) codes() []string {
	var c []string
	for _, e := range r.Errors {
		c = append(c, e.Extensions.Code)
	}
	return c
}

// TestGraphQLMatrix runs every root field as every caller (on every
// repository of its format when it has one): refused callers get
// UNAUTHENTICATED or FORBIDDEN (NOT_FOUND or null when they may not even
// read the repository or namespace), allowed ones never do.
func TestGraphQLMatrix(t *testing.T) {
	t.Parallel()
	g := newGWorld(t)
	callers := slices.DeleteFunc(slices.Clone(g.callers), func(c caller) bool { return c.name == "garbage" }) // 401 before GraphQL: TestRouteMatrix
	cells := 0
	for _, rule := range fieldRules {
		var repos []*target
		if rule.format == enum.FormatDocker {
			repos = []*target{nil}
		}
		for i := range g.targets {
			if rule.format != enum.FormatDocker && g.targets[i].format == rule.format {
				repos = append(repos, &g.targets[i])
			}
		}
		for _, tg := range repos {
			repo := ""
			if tg != nil {
				repo = tg.repo
			}
			// Refused callers first: an allowed one may take away what the
			// next field brings back.
			ordered := slices.Clone(callers)
			slices.SortStableFunc(ordered, func(a, b caller) int {
				return boolInt(allowed(rule.need, a.name, tg)) - boolInt(allowed(rule.need, b.name, tg))
			})
			for _, c := range ordered {
				g.checkField(t, rule, c, tg, repo)
				cells++
			}
		}
	}
	t.Logf("%d GraphQL cells", cells)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *gworld) checkField(t *testing.T, rule fieldRule, c caller, tg *target, repo string) {
	t.Helper()
	cell := fmt.Sprintf("%s as %s", rule.field, c.name)
	if repo != "" {
		cell += " on " + repo
	}
	args := rule.args(g, repo)
	doc := g.operation(rule.field, args)
	body := g.graphql(t, c.secret, doc, args)
	var res gqlResult
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatalf("%s: %v %s", cell, err, body)
	}
	codes := res.codes()
	refusedCode := slices.Contains(codes, graph.CodeForbidden) || slices.Contains(codes, graph.CodeUnauthenticated)
	null := len(res.Data["f"]) == 0 || string(res.Data["f"]) == "null"
	if slices.Contains(codes, graph.CodeInternal) {
		t.Errorf("%s: internal error %s", cell, body)
		return
	}
	if allowed(rule.need, c.name, tg) {
		if refusedCode {
			t.Errorf("%s: refused %s, want it allowed (rule %s)", cell, body, rule.need)
		}
		if rule.see && null {
			t.Errorf("%s: got nothing %s, want the object (rule %s)", cell, body, rule.need)
		}
		return
	}
	// Callers who may not read the target may be told it does not exist.
	hidden := !allowed(pull, c.name, tg) && (tg != nil || c.name == "anonymous")
	switch {
	case refusedCode:
	case hidden && (slices.Contains(codes, graph.CodeNotFound) || (len(codes) == 0 && null)):
	default:
		t.Errorf("%s: %s, want it refused (rule %s)", cell, body, rule.need)
	}
}
