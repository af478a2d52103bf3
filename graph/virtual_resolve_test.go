package graph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/maven"
)

const resolveQuery = `query($ns: String!, $r: String!, $name: String!, $version: String) {
	repository(namespace: $ns, name: $r) { virtual { resolve(name: $name, version: $version) {
		resolvedFrom { name } resolvedPosition asksUpstream
		steps { position hidden kind outcome repository { name } deniedField deniedBy { type field pattern } reservedPattern via { name } } } } } }`

type resolveOut struct {
	Repository *struct {
		Virtual *struct {
			Resolve struct {
				ResolvedFrom     *struct{ Name string }
				ResolvedPosition *int
				AsksUpstream     bool
				Steps            []struct {
					Position        int
					Hidden          bool
					Kind            *string
					Outcome         string
					Repository      *struct{ Name string }
					DeniedField     *string
					DeniedBy        *struct{ Type, Field, Pattern string }
					ReservedPattern *string
					Via             *struct{ Name string }
				}
			}
		}
	}
}

// summary is a resolution in one line: "from|step,step,..." where a step
// is name:OUTCOME (a hidden one -; name@via when reached through a nested
// virtual), DENIED_BY_RULE with (FIELD) or
// (FIELD TYPE pattern), RESERVED with [pattern], and a trailing
// "+upstream" when a request would ask an upstream first.
func (o resolveOut) summary(t *testing.T) string {
	t.Helper()
	if o.Repository == nil || o.Repository.Virtual == nil {
		return "<no virtual>"
	}
	r := o.Repository.Virtual.Resolve
	from := "-"
	if r.ResolvedFrom != nil {
		from = r.ResolvedFrom.Name
	}
	var steps []string
	for i, s := range r.Steps {
		if s.Position != i+1 {
			t.Fatalf("step %d has position %d", i, s.Position)
		}
		name := "-"
		if s.Repository != nil {
			name = s.Repository.Name
		}
		if s.Hidden != (s.Repository == nil) || s.Hidden != (s.Kind == nil) {
			t.Fatalf("step %d: hidden %v, repository %v, kind %v", i, s.Hidden, s.Repository, s.Kind)
		}
		switch {
		case s.Hidden && s.Via != nil:
			t.Fatalf("step %d: hidden, reached through %s", i, s.Via.Name)
		case !s.Hidden && s.Via == nil:
			name += "@?" // reached through a virtual the caller may not read
		case s.Via != nil && s.Via.Name != name:
			name += "@" + s.Via.Name
		}
		st := name + ":" + s.Outcome
		if s.DeniedField != nil {
			if s.DeniedBy != nil {
				st += fmt.Sprintf("(%s %s %s)", *s.DeniedField, s.DeniedBy.Type, s.DeniedBy.Pattern)
			} else {
				st += "(" + *s.DeniedField + ")"
			}
		}
		if s.ReservedPattern != nil {
			st += "[" + *s.ReservedPattern + "]"
		}
		if s.Outcome == "SERVES" && (r.ResolvedPosition == nil || *r.ResolvedPosition != s.Position) {
			t.Fatalf("step %d serves, resolvedPosition %v", i, r.ResolvedPosition)
		}
		steps = append(steps, st)
	}
	out := from + "|" + strings.Join(steps, ",")
	if r.AsksUpstream {
		out += "+upstream"
	}
	return out
}

func resolveAs(a *testAPI, token, ns, virtual, name string, version any) resolveOut {
	a.t.Helper()
	r := a.post(token, resolveQuery, map[string]any{"ns": ns, "r": virtual, "name": name, "version": version})
	if len(r.Errors) > 0 {
		a.t.Fatalf("resolve %s %v: %+v", name, version, r.Errors)
	}
	var out resolveOut
	mustJSON(a.t, r.Data, &out)
	return out
}

func createVirtual(a *testAPI, ns, name, format, visibility string, virtual map[string]any) {
	a.t.Helper()
	a.admin(`mutation($in: CreateRepositoryInput!) { createRepository(input: $in) { repository { id } } }`,
		map[string]any{"in": map[string]any{"namespace": ns, "name": name, "format": format, "kind": "VIRTUAL",
			"visibility": visibility, "virtual": virtual}}, nil)
}

func createRemote(a *testAPI, ns, name, format, url string) {
	a.t.Helper()
	a.admin(`mutation($in: CreateRepositoryInput!) { createRepository(input: $in) { repository { id } } }`,
		map[string]any{"in": map[string]any{"namespace": ns, "name": name, "format": format, "kind": "REMOTE",
			"visibility": "PRIVATE", "remote": map[string]any{"url": url}}}, nil)
}

// TestVirtualResolveOCI: VirtualRepository.resolve for an OCI virtual
// over hosted and remote members, one of them through a nested virtual,
// answers every outcome: a hosted member that holds the tag serves it and
// the later ones are skipped; a hosted member holding the name but not
// the tag is absent and still shadows the remotes; rules refuse by name
// (no ALLOW rule matched) and by tag (with the DENY rule); a remote's
// cached copy serves it, an uncached one would be asked upstream; a
// reserved name is never asked of a remote; members a restricted reader
// may not read are hidden, showing only whether they serve; bad input is
// INVALID_INPUT.
func TestVirtualResolveOCI(t *testing.T) {
	t.Parallel()
	a := newStoreAPI(t, true)
	mountAPI(a, testKeyring(t, a.st))
	ctx := context.Background()
	nsID := a.createNamespace("resolve")
	h1 := a.createRepository("resolve", "h1", "OCI", "PRIVATE")
	h2 := a.createRepository("resolve", "h2", "OCI", "PRIVATE")
	createRemote(a, "resolve", "r1", "OCI", "https://registry.example.test")
	createRemote(a, "resolve", "r2", "OCI", "https://mirror.example.test")
	img := a.addImage(nsID, h1, "app")
	m, _ := a.addManifest(nsID, img, "app v1", 10)
	a.addTag(nsID, img, m, "v1")
	a.addTag(nsID, img, m, "v1-rc1")
	img = a.addImage(nsID, h2, "app")
	m, _ = a.addManifest(nsID, img, "app v2", 10)
	a.addTag(nsID, img, m, "v2")
	a.addTag(nsID, img, m, "v1-rc1")

	// r1 caches library/alpine:3.20 as the protocol caches it.
	cs := container.New(a.st)
	tg, err := cs.ResolveTarget(ctx, "resolve", "r1", "library/alpine")
	if err != nil {
		t.Fatal(err)
	}
	layer := []byte("alpine layer")
	staged, err := cs.StageRemoteBlob(ctx, tg, bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CommitRemoteBlob(ctx, tg, staged, "application/vnd.oci.image.layer.v1.tar"); err != nil {
		t.Fatal(err)
	}
	p := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":3},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%d}]}`,
		store.FormatSHA256(sha256.Sum256([]byte("cfg"))), store.FormatSHA256(sha256.Sum256(layer)), len(layer)))
	if _, _, err := cs.CacheRemoteManifest(ctx, tg, container.RemoteManifestPut{Digest: sha256.Sum256(p),
		MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: p, Tag: "3.20"}); err != nil {
		t.Fatal(err)
	}

	createVirtual(a, "resolve", "inner", "OCI", "PRIVATE", map[string]any{
		"upstreams": upstreams("r2"), "reservedPatterns": []string{"acme/**"}})
	createVirtual(a, "resolve", "all", "OCI", "PRIVATE", map[string]any{"upstreams": []map[string]any{
		{"repository": "h1", "rules": []map[string]any{{"type": "DENY", "field": "VERSION", "pattern": "*-rc*"}}},
		{"repository": "r1", "rules": []map[string]any{{"type": "ALLOW", "field": "NAME", "pattern": "library/**"}}},
		{"repository": "inner"},
		{"repository": "h2"},
	}})

	for _, c := range []struct {
		name    string
		version any
		want    string
	}{
		{"app", "v1", "h1|h1:SERVES,r1:SKIPPED,r2@inner:SKIPPED,h2:SKIPPED"},
		{"app", nil, "h1|h1:SERVES,r1:SKIPPED,r2@inner:SKIPPED,h2:SKIPPED"},
		{"app", "v2", "h2|h1:ABSENT,r1:DENIED_BY_RULE(NAME),r2@inner:SHADOWED,h2:SERVES"},
		{"app", "v1-rc1", "h2|h1:DENIED_BY_RULE(VERSION DENY *-rc*),r1:DENIED_BY_RULE(NAME),r2@inner:SHADOWED,h2:SERVES"},
		{"app", "v9", "-|h1:ABSENT,r1:DENIED_BY_RULE(NAME),r2@inner:SHADOWED,h2:ABSENT"},
		{"library/alpine", "3.20", "r1|h1:ABSENT,r1:SERVES,r2@inner:SKIPPED,h2:SKIPPED"},
		{"library/alpine", "3.19", "-|h1:ABSENT,r1:NOT_CACHED,r2@inner:NOT_CACHED,h2:ABSENT+upstream"},
		{"acme/tool", "1.0", "-|h1:ABSENT,r1:DENIED_BY_RULE(NAME),r2@inner:RESERVED[acme/**],h2:ABSENT"},
	} {
		if got := resolveAs(a, adminToken, "resolve", "all", c.name, c.version).summary(t); got != c.want {
			t.Errorf("resolve %s %v:\n got %s\nwant %s", c.name, c.version, got, c.want)
		}
	}
	// Cost: the tree (one statement per nesting level: two here), one
	// probe of the hosted members for the name and one of the candidates'
	// content, on top of the query without resolve.
	count := func(q string) (int64, time.Duration) {
		a.stmts.reset()
		start := time.Now()
		a.admin(q, map[string]any{"ns": "resolve", "r": "all", "name": "app", "version": "v2"}, nil)
		return a.stmts.n.Load(), time.Since(start)
	}
	base, _ := count(`query($ns: String!, $r: String!) { repository(namespace: $ns, name: $r) { virtual { reservedPatterns } } }`)
	var total time.Duration
	var with int64
	const runs = 20
	for range runs {
		n, d := count(resolveQuery)
		with, total = n, total+d
	}
	if with-base > 4 {
		t.Errorf("resolve costs %d statements over the virtual's settings (%d, %d)", with-base, with, base)
	}
	t.Logf("resolve through a 2-level virtual of 4 members: %d statements over the settings' %d, %v per request (mean of %d)", with-base, base, total/runs, runs)

	// Through the nested virtual alone: its own reserved pattern.
	if got := resolveAs(a, adminToken, "resolve", "inner", "acme/tool", nil).summary(t); got != "-|r2:RESERVED[acme/**]" {
		t.Errorf("inner: %s", got)
	}

	// A reader of the virtual and of h1 only: the others are hidden, a
	// hidden member that serves still says so (a pull would show it).
	reader := a.createToken(adminToken, "resolve", "reader", []string{"READ"}, []string{"all", "h1"})
	for _, c := range []struct {
		name    string
		version any
		want    string
	}{
		{"app", "v1", "h1|h1:SERVES,-:SKIPPED,-:SKIPPED,-:SKIPPED"},
		{"app", "v2", "-|h1:ABSENT,-:HIDDEN,-:HIDDEN,-:SERVES"},
		{"acme/tool", "1.0", "-|h1:ABSENT,-:HIDDEN,-:HIDDEN,-:HIDDEN"},
	} {
		if got := resolveAs(a, reader.Secret, "resolve", "all", c.name, c.version).summary(t); got != c.want {
			t.Errorf("reader resolve %s %v:\n got %s\nwant %s", c.name, c.version, got, c.want)
		}
	}
	// A reader of a member of the nested virtual, not of the nested
	// virtual itself: the member shows, not what it is reached through.
	reader2 := a.createToken(adminToken, "resolve", "reader2", []string{"READ"}, []string{"all", "r2"})
	if got := resolveAs(a, reader2.Secret, "resolve", "all", "acme/tool", "1.0").summary(t); got != "-|-:HIDDEN,-:HIDDEN,r2@?:RESERVED[acme/**],-:HIDDEN" {
		t.Errorf("reader2: %s", got)
	}
	// Without READ on the virtual there is nothing to resolve through.
	outsider := a.createToken(adminToken, "resolve", "outsider", []string{"READ"}, []string{"h1"})
	a.expectError(outsider.Secret, resolveQuery, map[string]any{"ns": "resolve", "r": "all", "name": "app", "version": "v1"}, CodeForbidden)

	for _, c := range []struct {
		name    string
		version any
	}{
		{"", nil},
		{strings.Repeat("a", maxResolveInput+1), nil},
		{"app", strings.Repeat("1", maxResolveInput+1)},
		{"app\n", nil},
		{"app", "v1\x00"},
	} {
		a.expectError(adminToken, resolveQuery, map[string]any{"ns": "resolve", "r": "all", "name": c.name, "version": c.version}, CodeInvalidInput)
	}
}

// TestVirtualResolveNpmMaven: resolve through npm and Maven virtuals over
// hosted members (published and deployed through the protocols) and a
// remote whose cache holds one version, through a nested virtual with a
// reserved pattern: npm names with and without a scope (a SCOPE allow rule
// refuses unscoped names), Maven groupId:artifactId with the reserved
// pattern matched against the layout path; each outcome as for OCI, and a
// Maven name without its artifactId is INVALID_INPUT.
func TestVirtualResolveNpmMaven(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	ctx := context.Background()
	var nsID uuid.UUID
	if err := a.pool.QueryRow(ctx, `SELECT id FROM namespaces WHERE slug = 'acme'`).Scan(&nsID); err != nil {
		t.Fatal(err)
	}
	a.createRepository("acme", "js2", "NPM", "PRIVATE")
	a.createRepository("acme", "jvm2", "MAVEN", "PRIVATE")
	createRemote(a.testAPI, "acme", "npmjs", "NPM", "https://npm.example.test/")
	createRemote(a.testAPI, "acme", "central", "MAVEN", "https://maven.example.test/maven2")
	a.npmPublish("left-pad", "1.0.0", "", nil)
	a.npmPublish("@acme/ui", "2.0.0", "", nil)
	if status, body := a.npmPublishTo("js2", "@acme/ui", "1.0.0", nil); status != 201 {
		t.Fatalf("publish to js2: %d %s", status, body)
	}
	a.mavenDeploy("com.acme", "core", "1.0", "")
	a.mavenDeployTo("jvm2", "org.example", "util", "2.0")

	// The remotes' caches, as the protocols leave them: npm's package and
	// version rows, a Maven file.
	pkgID, verID := newID(t), newID(t)
	a.exec(`INSERT INTO npm_remote_packages (id, namespace_id, npm_remote_repository_id, name)
		SELECT $1, $2, rr.id, 'lodash' FROM npm_remote_repositories rr
		JOIN repositories r ON r.namespace_id = rr.namespace_id AND r.id = rr.repository_id
		WHERE rr.namespace_id = $2 AND r.name = 'npmjs'`, pkgID, nsID)
	a.exec(`INSERT INTO npm_remote_versions (id, namespace_id, npm_remote_package_id, version, package_json)
		VALUES ($1, $2, $3, '4.17.21', '{"name":"lodash","version":"4.17.21"}')`, verID, nsID, pkgID)
	ms := maven.New(a.st)
	mt, err := ms.ResolveTarget(ctx, "acme", "central")
	if err != nil {
		t.Fatal(err)
	}
	jar, err := ms.StageRemoteFile(ctx, mt, bytes.NewReader([]byte("jar bytes")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ms.CommitRemoteFile(ctx, mt, maven.FileRef{GroupID: "org.example", ArtifactID: "lib", Version: "1.0", FileName: "lib-1.0.jar"},
		jar, maven.RemoteFileMeta{}); err != nil {
		t.Fatal(err)
	}

	createVirtual(a.testAPI, "acme", "npm-inner", "NPM", "PRIVATE", map[string]any{
		"upstreams": upstreams("npmjs"), "reservedPatterns": []string{"@acme/*"}})
	createVirtual(a.testAPI, "acme", "npm-all", "NPM", "PRIVATE", map[string]any{"upstreams": []map[string]any{
		{"repository": "js", "rules": []map[string]any{{"type": "DENY", "field": "VERSION", "pattern": "*-beta*"}}},
		{"repository": "js2", "rules": []map[string]any{{"type": "ALLOW", "field": "SCOPE", "pattern": "@acme"}}},
		{"repository": "npm-inner"},
	}})
	createVirtual(a.testAPI, "acme", "mvn-all", "MAVEN", "PRIVATE", map[string]any{"upstreams": []map[string]any{
		{"repository": "jvm", "rules": []map[string]any{{"type": "DENY", "field": "ARTIFACT_ID", "pattern": "internal-*"}}},
		{"repository": "jvm2"},
		{"repository": "central", "rules": []map[string]any{{"type": "ALLOW", "field": "NAME", "pattern": "org.*"}}},
	}, "reservedPatterns": []string{"org/acme/**"}})

	for _, c := range []struct {
		virtual, name string
		version       any
		want          string
	}{
		{"npm-all", "left-pad", "1.0.0", "js|js:SERVES,js2:SKIPPED,npmjs@npm-inner:SKIPPED"},
		{"npm-all", "left-pad", "2.0.0", "-|js:ABSENT,js2:DENIED_BY_RULE(SCOPE),npmjs@npm-inner:SHADOWED"},
		{"npm-all", "@acme/ui", "1.0.0", "js2|js:ABSENT,js2:SERVES,npmjs@npm-inner:SKIPPED"},
		{"npm-all", "@acme/ui", "2.0.0-beta.1", "-|js:DENIED_BY_RULE(VERSION DENY *-beta*),js2:ABSENT,npmjs@npm-inner:SHADOWED"},
		{"npm-all", "lodash", "4.17.21", "npmjs|js:ABSENT,js2:DENIED_BY_RULE(SCOPE),npmjs@npm-inner:SERVES"},
		{"npm-all", "lodash", nil, "npmjs|js:ABSENT,js2:DENIED_BY_RULE(SCOPE),npmjs@npm-inner:SERVES"},
		{"npm-all", "lodash", "4.0.0", "-|js:ABSENT,js2:DENIED_BY_RULE(SCOPE),npmjs@npm-inner:NOT_CACHED+upstream"},
		{"npm-all", "@acme/new", "1.0.0", "-|js:ABSENT,js2:ABSENT,npmjs@npm-inner:RESERVED[@acme/*]"},
		{"mvn-all", "com.acme:core", "1.0", "jvm|jvm:SERVES,jvm2:SKIPPED,central:SKIPPED"},
		{"mvn-all", "com.acme:internal-x", "1.0", "-|jvm:DENIED_BY_RULE(ARTIFACT_ID DENY internal-*),jvm2:ABSENT,central:DENIED_BY_RULE(NAME)"},
		{"mvn-all", "org.example:util", "2.0", "jvm2|jvm:ABSENT,jvm2:SERVES,central:SKIPPED"},
		{"mvn-all", "org.example:util", "3.0", "-|jvm:ABSENT,jvm2:ABSENT,central:SHADOWED"},
		{"mvn-all", "org.example:lib", "1.0", "central|jvm:ABSENT,jvm2:ABSENT,central:SERVES"},
		{"mvn-all", "org.example:lib", "2.0", "-|jvm:ABSENT,jvm2:ABSENT,central:NOT_CACHED+upstream"},
		{"mvn-all", "org.acme.tools:cli", "1.0", "-|jvm:ABSENT,jvm2:ABSENT,central:RESERVED[org/acme/**]"},
	} {
		if got := resolveAs(a.testAPI, adminToken, "acme", c.virtual, c.name, c.version).summary(t); got != c.want {
			t.Errorf("resolve %s %s %v:\n got %s\nwant %s", c.virtual, c.name, c.version, got, c.want)
		}
	}
	for _, name := range []string{"org.example", "org.example:", ":lib", "a:b:c"} {
		a.expectError(adminToken, resolveQuery, map[string]any{"ns": "acme", "r": "mvn-all", "name": name}, CodeInvalidInput)
	}
}
