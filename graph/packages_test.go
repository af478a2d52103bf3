package graph

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

type npmDep struct{ Name, Range string }

type npmVersionOut struct {
	ID              string
	Version         string
	PackageName     string
	SizeBytes       int64
	CreatedAt       time.Time
	SoftDeletedAt   *time.Time
	Deprecated      *string
	Description     *string
	License         *string
	Integrity       *string
	Shasum          *string
	DistTags        []string
	Prod, Dev, Peer []npmDep
	Tarball         *struct {
		FileName, Sha256 string
		SizeBytes        int64
	}
	Package    struct{ Name string }
	Repository struct{ Name string }
}

const npmVersionFields = `id version packageName sizeBytes createdAt softDeletedAt deprecated description license integrity shasum distTags
	prod: dependencies { name range } dev: dependencies(kind: DEV) { name range } peer: dependencies(kind: PEER) { name range }
	tarball { fileName sha256 sizeBytes } package { name } repository { name }`

type npmPackageOut struct {
	ID       string
	Name     string
	Scope    *string
	DistTags []struct {
		Name    string
		Version struct{ Version string }
	}
	Latest   *struct{ Version string }
	Versions struct {
		TotalCount int
		PageInfo   struct {
			HasNextPage bool
			EndCursor   *string
		}
		Edges []struct {
			Cursor string
			Node   npmVersionOut
		}
	}
}

// npmPackageQuery reads one package with a page of its versions.
func (a *pkgAPI) npmPackage(name string, first int, after *string) *npmPackageOut {
	a.t.Helper()
	var out struct {
		Repository struct{ NpmPackage *npmPackageOut }
	}
	a.admin(`query($n: String!, $first: Int, $after: String) { repository(namespace: "acme", name: "js") {
		npmPackage(name: $n) { id name scope distTags { name version { version } } latest { version }
			versions(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor }
				edges { cursor node { `+npmVersionFields+` } } } } } }`,
		map[string]any{"n": name, "first": first, "after": after}, &out)
	return out.Repository.NpmPackage
}

// npmVersionNames walks every page of a package's versions.
func (a *pkgAPI) npmVersionNames(name string, first int) []string {
	a.t.Helper()
	var out []string
	var after *string
	for {
		p := a.npmPackage(name, first, after)
		if p == nil {
			return nil
		}
		for _, e := range p.Versions.Edges {
			out = append(out, e.Node.Version)
		}
		if !p.Versions.PageInfo.HasNextPage {
			return out
		}
		after = p.Versions.PageInfo.EndCursor
	}
}

func TestNpmPackagesFields(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	deps := map[string]any{
		"dependencies":    map[string]any{"zeta": "^1.0.0", "alpha": "~2.1"},
		"devDependencies": map[string]any{"jest": "29"},
	}
	for _, v := range []string{"2.0.0-beta.2", "2.0.0-beta.10", "2.0.0-beta.1", "1.0.0", "1.2.0", "1.10.0"} {
		a.npmPublish("left-pad", v, "", deps)
	}
	a.npmPublish("@acme/util", "0.1.0", "", nil)
	a.npmDeprecate("left-pad", "1.0.0", "use 1.10")
	var tag struct {
		SetNpmDistTag struct{ Package struct{ Name string } }
	}
	a.admin(`mutation { setNpmDistTag(input: {namespace: "acme", repository: "js", package: "left-pad", tag: "next", version: "2.0.0-beta.10"}) {
		package { name } } }`, nil, &tag)

	// Package list: by name (C order), with scope and count.
	var list struct {
		Repository struct {
			NpmPackages struct {
				TotalCount int
				Edges      []struct {
					Node struct {
						Name  string
						Scope *string
					}
				}
			}
			MavenPackages *struct{ TotalCount int }
		}
	}
	a.admin(`{ repository(namespace: "acme", name: "js") { npmPackages { totalCount edges { node { name scope } } } mavenPackages { totalCount } } }`, nil, &list)
	got := list.Repository.NpmPackages
	if got.TotalCount != 2 || len(got.Edges) != 2 || got.Edges[0].Node.Name != "@acme/util" || got.Edges[1].Node.Name != "left-pad" {
		t.Fatalf("packages: %+v", got)
	}
	if s := got.Edges[0].Node.Scope; s == nil || *s != "acme" || got.Edges[1].Node.Scope != nil {
		t.Fatalf("scopes: %+v", got.Edges)
	}
	if list.Repository.MavenPackages != nil {
		t.Fatalf("mavenPackages of an npm repository should be null: %+v", list.Repository.MavenPackages)
	}

	// Versions: highest precedence first, across pages.
	want := []string{"2.0.0-beta.10", "2.0.0-beta.2", "2.0.0-beta.1", "1.10.0", "1.2.0", "1.0.0"}
	for _, first := range []int{1, 4, 100} {
		if v := a.npmVersionNames("left-pad", first); !reflect.DeepEqual(v, want) {
			t.Fatalf("versions with first=%d: %v, want %v", first, v, want)
		}
	}

	p := a.npmPackage("left-pad", 100, nil)
	if p.Versions.TotalCount != 6 || p.Latest == nil || p.Latest.Version != "1.10.0" {
		t.Fatalf("package: count %d latest %+v", p.Versions.TotalCount, p.Latest)
	}
	tags := map[string]string{}
	for _, dt := range p.DistTags {
		tags[dt.Name] = dt.Version.Version
	}
	if !reflect.DeepEqual(tags, map[string]string{"latest": "1.10.0", "next": "2.0.0-beta.10"}) {
		t.Fatalf("dist-tags: %v", tags)
	}
	byVersion := map[string]npmVersionOut{}
	for _, e := range p.Versions.Edges {
		byVersion[e.Node.Version] = e.Node
	}
	v := byVersion["1.0.0"]
	tgz := a.tarballs["left-pad@1.0.0"]
	s512, s1, s256 := sha512.Sum512(tgz), sha1.Sum(tgz), sha256.Sum256(tgz)
	switch {
	case v.Deprecated == nil || *v.Deprecated != "use 1.10":
		t.Errorf("deprecated: %v", v.Deprecated)
	case v.Description == nil || *v.Description != "package left-pad", v.License == nil || *v.License != "MIT":
		t.Errorf("description/license: %v %v", v.Description, v.License)
	case v.Integrity == nil || *v.Integrity != "sha512-"+base64.StdEncoding.EncodeToString(s512[:]):
		t.Errorf("integrity: %v", v.Integrity)
	case v.Shasum == nil || *v.Shasum != hex.EncodeToString(s1[:]):
		t.Errorf("shasum: %v", v.Shasum)
	case v.Tarball == nil || v.Tarball.SizeBytes != int64(len(tgz)) || v.Tarball.Sha256 != "sha256:"+hex.EncodeToString(s256[:]) ||
		v.Tarball.FileName != "left-pad-1.0.0.tgz":
		t.Errorf("tarball: %+v (size %d)", v.Tarball, len(tgz))
	case !reflect.DeepEqual(v.Prod, []npmDep{{"alpha", "~2.1"}, {"zeta", "^1.0.0"}}) || !reflect.DeepEqual(v.Dev, []npmDep{{"jest", "29"}}) ||
		len(v.Peer) != 0:
		t.Errorf("dependencies: %+v %+v %+v", v.Prod, v.Dev, v.Peer)
	case len(v.DistTags) != 0 || !reflect.DeepEqual(byVersion["1.10.0"].DistTags, []string{"latest"}):
		t.Errorf("version dist-tags: %v %v", v.DistTags, byVersion["1.10.0"].DistTags)
	case v.PackageName != "left-pad" || v.Package.Name != "left-pad" || v.Repository.Name != "js" || v.SoftDeletedAt != nil:
		t.Errorf("names: %+v", v)
	case time.Since(v.CreatedAt) > time.Hour || v.CreatedAt.After(time.Now().Add(time.Minute)):
		t.Errorf("createdAt: %v", v.CreatedAt)
	}
	if byVersion["1.2.0"].Deprecated != nil {
		t.Errorf("1.2.0 is not deprecated: %v", *byVersion["1.2.0"].Deprecated)
	}

	// Lookups that find nothing are null, not errors.
	var none struct {
		Repository struct {
			NpmPackage *struct{ Version *struct{ Version string } }
			Missing    *struct{ Name string }
		}
	}
	a.admin(`{ repository(namespace: "acme", name: "js") { npmPackage(name: "left-pad") { version(version: "9.9.9") { version } }
		missing: npmPackage(name: "nope") { name } } }`, nil, &none)
	if none.Repository.NpmPackage == nil || none.Repository.NpmPackage.Version != nil || none.Repository.Missing != nil {
		t.Fatalf("lookups: %+v", none.Repository)
	}

	// Anonymous callers read a PUBLIC repository's packages too.
	r := a.post("", `{ repository(namespace: "acme", name: "js") { npmPackage(name: "@acme/util") { name latest { version } } } }`, nil)
	if len(r.Errors) > 0 || !strings.Contains(string(r.Data), `"0.1.0"`) {
		t.Fatalf("anonymous read: %+v %s", r.Errors, r.Data)
	}
}

// npmVersionID returns the id of an active version.
func (a *pkgAPI) npmVersionID(name, version string) string {
	a.t.Helper()
	var out struct {
		Repository struct {
			NpmPackage *struct {
				ID      string
				Version *struct{ ID string }
			}
		}
	}
	a.admin(`query($n: String!, $v: String!) { repository(namespace: "acme", name: "js") { npmPackage(name: $n) { id version(version: $v) { id } } } }`,
		map[string]any{"n": name, "v": version}, &out)
	if out.Repository.NpmPackage == nil || out.Repository.NpmPackage.Version == nil {
		a.t.Fatalf("%s@%s not found", name, version)
	}
	return out.Repository.NpmPackage.Version.ID
}

func (a *pkgAPI) trashKinds(kind string) []string {
	a.t.Helper()
	var out struct {
		Namespace struct {
			Trash struct {
				Edges []struct {
					Kind string
					Node struct {
						Typename    string `json:"__typename"`
						PackageName string
						Version     string
						Name        string
						GroupID     string
						ArtifactID  string
					}
				}
			}
		}
	}
	vars := map[string]any{}
	if kind != "" {
		vars["k"] = kind
	}
	a.admin(`query($k: TrashKind) { namespace(slug: "acme") { trash(first: 100, kind: $k) { edges { kind node { __typename
		... on NpmVersion { packageName version } ... on NpmPackage { name } ... on MavenVersion { groupId artifactId version }
		... on MavenPackage { groupId artifactId } } } } } }`, vars, &out)
	var items []string
	for _, e := range out.Namespace.Trash.Edges {
		n := e.Node
		item := e.Kind + " " + n.Typename + " "
		switch n.Typename {
		case "NpmVersion":
			item += n.PackageName + "@" + n.Version
		case "NpmPackage":
			item += n.Name
		case "MavenVersion":
			item += n.GroupID + ":" + n.ArtifactID + ":" + n.Version
		case "MavenPackage":
			item += n.GroupID + ":" + n.ArtifactID
		}
		items = append(items, item)
	}
	return items
}

func TestNpmTrashRoundTrip(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	a.npmPublish("demo", "1.0.0", "", nil)
	a.npmPublish("demo", "1.1.0", "", nil)
	id := a.npmVersionID("demo", "1.1.0")
	ref := map[string]any{"ns": "acme", "id": id}

	var del struct {
		DeleteNpmVersion struct{ Version npmVersionOut }
	}
	a.admin(`mutation($ns: String!, $id: ID!) { deleteNpmVersion(input: {namespace: $ns, id: $id}) { version { `+npmVersionFields+` } } }`, ref, &del)
	if del.DeleteNpmVersion.Version.SoftDeletedAt == nil || del.DeleteNpmVersion.Version.Version != "1.1.0" {
		t.Fatalf("deleted version: %+v", del.DeleteNpmVersion.Version)
	}
	doc := a.packument("demo")
	if vs := packumentVersions(doc); !reflect.DeepEqual(vs, map[string]bool{"1.0.0": true}) ||
		doc["dist-tags"].(map[string]any)["latest"] != "1.0.0" {
		t.Fatalf("packument after delete: %v %v", vs, doc["dist-tags"])
	}
	if v := a.npmVersionNames("demo", 10); !reflect.DeepEqual(v, []string{"1.0.0"}) {
		t.Fatalf("versions after delete: %v", v)
	}
	if got := a.trashKinds("NPM_VERSION"); !reflect.DeepEqual(got, []string{"NPM_VERSION NpmVersion demo@1.1.0"}) {
		t.Fatalf("trash: %v", got)
	}
	a.expectError(adminToken, `mutation($ns: String!, $id: ID!) { deleteNpmVersion(input: {namespace: $ns, id: $id}) { version { id } } }`, ref, CodeConflict)
	if status, _ := a.npmPublishStatus("demo", "1.1.0", "", nil); status != http.StatusConflict {
		t.Fatalf("republishing a trashed version: %d, want 409", status)
	}

	var res struct {
		RestoreNpmVersion struct{ Version npmVersionOut }
	}
	a.admin(`mutation($ns: String!, $id: ID!) { restoreNpmVersion(input: {namespace: $ns, id: $id}) { version { `+npmVersionFields+` } } }`, ref, &res)
	if res.RestoreNpmVersion.Version.SoftDeletedAt != nil || res.RestoreNpmVersion.Version.Tarball == nil {
		t.Fatalf("restored version: %+v", res.RestoreNpmVersion.Version)
	}
	if vs := packumentVersions(a.packument("demo")); !reflect.DeepEqual(vs, map[string]bool{"1.0.0": true, "1.1.0": true}) {
		t.Fatalf("packument after restore: %v", vs)
	}
	if got := a.trashKinds("NPM_VERSION"); len(got) != 0 {
		t.Fatalf("trash after restore: %v", got)
	}
	status, _ := a.do(http.MethodGet, "/npm/acme/js/demo/-/demo-1.1.0.tgz", nil)
	if status != http.StatusOK {
		t.Fatalf("tarball after restore: %d", status)
	}

	// The whole package.
	pkgID := a.npmPackage("demo", 1, nil).ID
	pref := map[string]any{"ns": "acme", "id": pkgID}
	var pdel struct {
		DeleteNpmPackage struct {
			Package struct {
				Name          string
				SoftDeletedAt *time.Time
			}
		}
	}
	a.admin(`mutation($ns: String!, $id: ID!) { deleteNpmPackage(input: {namespace: $ns, id: $id}) { package { name softDeletedAt } } }`, pref, &pdel)
	if pdel.DeleteNpmPackage.Package.SoftDeletedAt == nil {
		t.Fatalf("deleted package: %+v", pdel.DeleteNpmPackage.Package)
	}
	if doc := a.packument("demo"); doc != nil {
		t.Fatalf("packument of a trashed package: %v", doc)
	}
	if p := a.npmPackage("demo", 1, nil); p != nil {
		t.Fatalf("trashed package still listed: %+v", p)
	}
	if got := a.trashKinds("NPM_PACKAGE"); !reflect.DeepEqual(got, []string{"NPM_PACKAGE NpmPackage demo"}) {
		t.Fatalf("trash: %v", got)
	}
	if got := a.trashKinds(""); len(got) != 3 { // the package and its two versions
		t.Fatalf("whole trash: %v", got)
	}
	a.admin(`mutation($ns: String!, $id: ID!) { restoreNpmPackage(input: {namespace: $ns, id: $id}) { package { name } } }`, pref, nil)
	if vs := packumentVersions(a.packument("demo")); !reflect.DeepEqual(vs, map[string]bool{"1.0.0": true, "1.1.0": true}) {
		t.Fatalf("packument after package restore: %v", vs)
	}
	a.expectError(adminToken, `mutation($ns: String!, $id: ID!) { restoreNpmPackage(input: {namespace: $ns, id: $id}) { package { name } } }`, pref, CodeConflict)

	// The publish history shows the versions with their package.
	var hist struct {
		Namespace struct {
			PublishHistory struct {
				Edges []struct {
					Node struct {
						Artifact struct {
							Version string
							Package struct{ Name string }
						}
					}
				}
			}
		}
	}
	a.admin(`{ namespace(slug: "acme") { publishHistory { edges { node { artifact { ... on NpmVersion { version package { name } } } } } } } }`, nil, &hist)
	if e := hist.Namespace.PublishHistory.Edges; len(e) != 2 || e[0].Node.Artifact.Version != "1.1.0" || e[0].Node.Artifact.Package.Name != "demo" {
		t.Fatalf("history: %+v", e)
	}
}

func TestNpmDistTagMutations(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	a.npmPublish("tagged", "1.0.0", "", nil)
	a.npmPublish("tagged", "2.0.0-rc.1", "next", nil)
	set := `mutation($tag: String!, $v: String) { setNpmDistTag(input: {namespace: "acme", repository: "js", package: "tagged", tag: $tag, version: $v}) {
		package { distTags { name version { version } } } } }`
	a.admin(set, map[string]any{"tag": "stable", "v": "1.0.0"}, nil)
	doc := a.packument("tagged")
	if tags := doc["dist-tags"].(map[string]any); tags["stable"] != "1.0.0" || tags["next"] != "2.0.0-rc.1" || tags["latest"] != "1.0.0" {
		t.Fatalf("dist-tags after set: %v", tags)
	}
	remove := `mutation($tag: String!) { removeNpmDistTag(input: {namespace: "acme", repository: "js", package: "tagged", tag: $tag}) {
		package { distTags { name } } } }`
	a.admin(remove, map[string]any{"tag": "next"}, nil)
	if tags := a.packument("tagged")["dist-tags"].(map[string]any); tags["next"] != nil || tags["stable"] != "1.0.0" {
		t.Fatalf("dist-tags after remove: %v", tags)
	}
	for _, c := range []struct {
		query string
		vars  map[string]any
		code  string
	}{
		{set, map[string]any{"tag": "1.x", "v": "1.0.0"}, CodeInvalidInput},       // a SemVer range
		{set, map[string]any{"tag": "has space", "v": "1.0.0"}, CodeInvalidInput}, // whitespace
		{set, map[string]any{"tag": "beta"}, CodeInvalidInput},                    // no version
		{set, map[string]any{"tag": "beta", "v": "9.9.9"}, CodeNotFound},
		{remove, map[string]any{"tag": "latest"}, CodeInvalidInput},
		{remove, map[string]any{"tag": "nope"}, CodeNotFound},
		{`mutation { setNpmDistTag(input: {namespace: "acme", repository: "nope", package: "tagged", tag: "beta", version: "1.0.0"}) { package { name } } }`, nil, CodeNotFound},
		{`mutation { setNpmDistTag(input: {namespace: "acme", repository: "js", package: "nope", tag: "beta", version: "1.0.0"}) { package { name } } }`, nil, CodeNotFound},
	} {
		a.expectError(adminToken, c.query, c.vars, c.code)
	}
	a.expectError("", set, map[string]any{"tag": "beta", "v": "1.0.0"}, CodeUnauthenticated)
	if tags := a.packument("tagged")["dist-tags"].(map[string]any); len(tags) != 2 {
		t.Fatalf("refused changes changed the tags: %v", tags)
	}
}

func TestPackagesBadInput(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	a.npmPublish("demo", "1.0.0", "", nil)
	a.mavenDeploy("com.acme", "lib", "1.0", "")
	for _, m := range []string{"deleteNpmVersion", "restoreNpmVersion", "deleteMavenVersion", "restoreMavenVersion"} {
		q := `mutation($ns: String!, $id: ID!) { ` + m + `(input: {namespace: $ns, id: $id}) { version { id } } }`
		a.expectError(adminToken, q, map[string]any{"ns": "acme", "id": "not-a-uuid"}, CodeInvalidInput)
		a.expectError(adminToken, q, map[string]any{"ns": "acme", "id": "0192e4a4-7f0e-7000-8000-000000000000"}, CodeNotFound)
		a.expectError(adminToken, q, map[string]any{"ns": "nope", "id": "0192e4a4-7f0e-7000-8000-000000000000"}, CodeNotFound)
		a.expectError("", q, map[string]any{"ns": "acme", "id": "0192e4a4-7f0e-7000-8000-000000000000"}, CodeUnauthenticated)
	}
	for _, m := range []string{"deleteNpmPackage", "restoreNpmPackage", "deleteMavenPackage", "restoreMavenPackage"} {
		q := `mutation($ns: String!, $id: ID!) { ` + m + `(input: {namespace: $ns, id: $id}) { package { id } } }`
		a.expectError(adminToken, q, map[string]any{"ns": "acme", "id": "x"}, CodeInvalidInput)
		a.expectError(adminToken, q, map[string]any{"ns": "acme", "id": "0192e4a4-7f0e-7000-8000-000000000000"}, CodeNotFound)
	}
	// An id of the other format is unknown, not an internal error.
	npmID := a.npmVersionID("demo", "1.0.0")
	a.expectError(adminToken, `mutation($id: ID!) { deleteMavenVersion(input: {namespace: "acme", id: $id}) { version { id } } }`,
		map[string]any{"id": npmID}, CodeNotFound)
	// Restoring an active version is a state conflict.
	a.expectError(adminToken, `mutation($id: ID!) { restoreNpmVersion(input: {namespace: "acme", id: $id}) { version { id } } }`,
		map[string]any{"id": npmID}, CodeConflict)

	for _, q := range []string{
		`{ repository(namespace: "acme", name: "js") { npmPackages(first: 0) { totalCount } } }`,
		`{ repository(namespace: "acme", name: "js") { npmPackages(first: 101) { totalCount } } }`,
		`{ repository(namespace: "acme", name: "js") { npmPackages(after: "garbage") { totalCount } } }`,
		`{ repository(namespace: "acme", name: "js") { npmPackage(name: "demo") { versions(after: "bm9wZQ") { totalCount } } } }`,
		`{ repository(namespace: "acme", name: "jvm") { mavenPackages(after: "e30") { totalCount } } }`,
		`{ repository(namespace: "acme", name: "jvm") { mavenPackage(groupId: "com.acme", artifactId: "lib") { versions(first: -1) { totalCount } } } }`,
		`{ repository(namespace: "acme", name: "jvm") { mavenPackage(groupId: "com.acme", artifactId: "lib") { files(after: "x") { edges { cursor } } } } }`,
	} {
		a.expectError(adminToken, q, nil, CodeInvalidInput)
	}
	// A cursor of another list is refused.
	var page struct {
		Repository struct {
			NpmPackages struct{ PageInfo struct{ EndCursor string } }
		}
	}
	a.admin(`{ repository(namespace: "acme", name: "js") { npmPackages(first: 1) { pageInfo { endCursor } } } }`, nil, &page)
	a.expectError(adminToken, `query($c: String) { repository(namespace: "acme", name: "js") { npmPackage(name: "demo") { versions(after: $c) { totalCount } } } }`,
		map[string]any{"c": page.Repository.NpmPackages.PageInfo.EndCursor}, CodeInvalidInput)
	// Anonymous callers do not see a PRIVATE repository's packages.
	r := a.post("", `{ repository(namespace: "acme", name: "jvm") { mavenPackages { totalCount } } }`, nil)
	if strings.Contains(string(r.Data), "totalCount") {
		t.Fatalf("anonymous read of a private repository: %s", r.Data)
	}
}

type mavenFileOut struct {
	FileName             string
	SizeBytes            int64
	Sha256, Sha1, Sha512 string
	Md5                  *string
}

type mavenVersionOut struct {
	ID            string
	Version       string
	IsSnapshot    bool
	SoftDeletedAt *time.Time
	CreatedAt     time.Time
	Package       struct{ GroupID, ArtifactID string }
	Files         struct {
		PageInfo struct {
			HasNextPage bool
			EndCursor   *string
		}
		Edges []struct{ Node mavenFileOut }
	}
}

const mavenVersionFields = `id version isSnapshot softDeletedAt createdAt package { groupId artifactId }
	files(first: $files) { pageInfo { hasNextPage endCursor } edges { node { fileName sizeBytes sha256 sha1 sha512 md5 } } }`

type mavenPackageOut struct {
	ID, GroupID, ArtifactID string
	SoftDeletedAt           *time.Time
	Versions                struct {
		TotalCount int
		PageInfo   struct {
			HasNextPage bool
			EndCursor   *string
		}
		Edges []struct{ Node mavenVersionOut }
	}
	Files struct {
		Edges []struct{ Node mavenFileOut }
	}
}

func (a *pkgAPI) mavenPackage(group, artifact string, first int, after *string) *mavenPackageOut {
	a.t.Helper()
	var out struct {
		Repository struct{ MavenPackage *mavenPackageOut }
	}
	a.admin(`query($g: String!, $a: String!, $first: Int, $after: String, $files: Int) { repository(namespace: "acme", name: "jvm") {
		mavenPackage(groupId: $g, artifactId: $a) { id groupId artifactId softDeletedAt
			versions(first: $first, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { node { `+mavenVersionFields+` } } }
			files { edges { node { fileName sizeBytes sha256 sha1 sha512 md5 } } } } } }`,
		map[string]any{"g": group, "a": artifact, "first": first, "after": after, "files": 100}, &out)
	return out.Repository.MavenPackage
}

func TestMavenPackagesFields(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	files := map[string]mavenFileSums{}
	for _, v := range [][2]string{{"1.0", ""}, {"1.1", ""}, {"2.0-SNAPSHOT", "2.0-20261130.010203-1"}} {
		for name, sums := range a.mavenDeploy("com.acme", "lib", v[0], v[1]) {
			files[name] = sums
		}
	}
	a.mavenDeploy("com.acme", "app", "0.1", "")
	a.mavenDeploy("org.zeta", "core", "3.0", "")

	t.Run("PackagesPageInCoordinateOrder", func(t *testing.T) {
		a := a.with(t)
		var list struct {
			Repository struct {
				MavenPackages struct {
					TotalCount int
					PageInfo   struct {
						HasNextPage bool
						EndCursor   string
					}
					Edges []struct {
						Node struct{ GroupID, ArtifactID string }
					}
				}
				NpmPackages *struct{ TotalCount int }
			}
		}
		var coords []string
		var after *string
		for {
			a.admin(`query($after: String) { repository(namespace: "acme", name: "jvm") {
				mavenPackages(first: 2, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { node { groupId artifactId } } }
				npmPackages { totalCount } } }`, map[string]any{"after": after}, &list)
			for _, e := range list.Repository.MavenPackages.Edges {
				coords = append(coords, e.Node.GroupID+":"+e.Node.ArtifactID)
			}
			if !list.Repository.MavenPackages.PageInfo.HasNextPage {
				break
			}
			c := list.Repository.MavenPackages.PageInfo.EndCursor
			after = &c
		}
		if !reflect.DeepEqual(coords, []string{"com.acme:app", "com.acme:lib", "org.zeta:core"}) || list.Repository.MavenPackages.TotalCount != 3 {
			t.Fatalf("packages: %v (total %d)", coords, list.Repository.MavenPackages.TotalCount)
		}
		if list.Repository.NpmPackages != nil {
			t.Fatalf("npmPackages of a Maven repository should be null")
		}
	})

	// Versions in pages of 2, releases and SNAPSHOTs, with their files.
	t.Run("VersionsPageWithTheirFiles", func(t *testing.T) {
		a := a.with(t)
		var versions []mavenVersionOut
		var after *string
		for {
			p := a.mavenPackage("com.acme", "lib", 2, after)
			if p.Versions.TotalCount != 3 {
				t.Fatalf("totalCount %d", p.Versions.TotalCount)
			}
			for _, e := range p.Versions.Edges {
				versions = append(versions, e.Node)
			}
			if !p.Versions.PageInfo.HasNextPage {
				break
			}
			after = p.Versions.PageInfo.EndCursor
		}
		var names []string
		for _, v := range versions {
			names = append(names, v.Version)
			if v.IsSnapshot != strings.HasSuffix(v.Version, "-SNAPSHOT") || v.Package.ArtifactID != "lib" || v.SoftDeletedAt != nil {
				t.Errorf("version %+v", v)
			}
			if len(v.Files.Edges) != 2 {
				t.Errorf("%s has files %+v", v.Version, v.Files.Edges)
			}
			for _, e := range v.Files.Edges {
				f, want := e.Node, files[e.Node.FileName]
				if f.SizeBytes != int64(want.size) || f.Sha1 != want.sha1 || f.Sha256 != want.sha256 || f.Sha512 != want.sha512 ||
					f.Md5 == nil || *f.Md5 != want.md5 {
					t.Errorf("file %s: %+v, want %+v", f.FileName, f, want)
				}
			}
		}
		if !reflect.DeepEqual(names, []string{"2.0-SNAPSHOT", "1.1", "1.0"}) { // highest first, Maven order
			t.Fatalf("versions: %v", names)
		}
		if f := versions[0].Files.Edges; f[0].Node.FileName != "lib-2.0-20261130.010203-1.jar" {
			t.Fatalf("snapshot files: %+v", f)
		}
	})

	// Files page by name.
	t.Run("FilesPageByName", func(t *testing.T) {
		a := a.with(t)
		var one struct {
			Repository struct {
				MavenPackage struct {
					Version struct {
						Files struct {
							PageInfo struct {
								HasNextPage bool
								EndCursor   string
							}
							Edges []struct{ Node struct{ FileName string } }
						}
					}
				}
			}
		}
		q := `query($after: String) { repository(namespace: "acme", name: "jvm") { mavenPackage(groupId: "com.acme", artifactId: "lib") {
			version(version: "1.0") { files(first: 1, after: $after) { pageInfo { hasNextPage endCursor } edges { node { fileName } } } } } } }`
		a.admin(q, nil, &one)
		f := one.Repository.MavenPackage.Version.Files
		if len(f.Edges) != 1 || f.Edges[0].Node.FileName != "lib-1.0.jar" || !f.PageInfo.HasNextPage {
			t.Fatalf("first file page: %+v", f)
		}
		a.admin(q, map[string]any{"after": f.PageInfo.EndCursor}, &one)
		f = one.Repository.MavenPackage.Version.Files
		if len(f.Edges) != 1 || f.Edges[0].Node.FileName != "lib-1.0.pom" || f.PageInfo.HasNextPage {
			t.Fatalf("second file page: %+v", f)
		}
	})

	// Package-level files: maven-metadata.xml as the server serves it.
	t.Run("PackageFilesIncludeMavenMetadata", func(t *testing.T) {
		a := a.with(t)
		status, meta := a.mavenMetadata("com.acme", "lib")
		if status != http.StatusOK {
			t.Fatalf("metadata: %d", status)
		}
		p := a.mavenPackage("com.acme", "lib", 1, nil)
		var found bool
		for _, e := range p.Files.Edges {
			if e.Node.FileName == "maven-metadata.xml" {
				found = true
				if want := sumsOf([]byte(meta)); e.Node.Sha1 != want.sha1 || e.Node.SizeBytes != int64(want.size) {
					t.Errorf("maven-metadata.xml: %+v, served %+v", e.Node, want)
				}
			}
		}
		if !found {
			t.Fatalf("package files lack maven-metadata.xml: %+v", p.Files.Edges)
		}
	})
}

func TestMavenTrashRoundTrip(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	a.mavenDeploy("com.acme", "lib", "1.0", "")
	a.mavenDeploy("com.acme", "lib", "1.1", "")
	a.mavenDeploy("com.acme", "other", "1.0", "")
	p := a.mavenPackage("com.acme", "lib", 10, nil)
	id := p.Versions.Edges[0].Node.ID // 1.1, highest first
	ref := map[string]any{"id": id}
	del := `mutation($id: ID!) { deleteMavenVersion(input: {namespace: "acme", id: $id}) { version { version softDeletedAt } } }`
	var out struct {
		DeleteMavenVersion struct {
			Version struct {
				Version       string
				SoftDeletedAt *time.Time
			}
		}
	}
	a.admin(del, ref, &out)
	if out.DeleteMavenVersion.Version.Version != "1.1" || out.DeleteMavenVersion.Version.SoftDeletedAt == nil {
		t.Fatalf("deleted: %+v", out)
	}
	if _, meta := a.mavenMetadata("com.acme", "lib"); strings.Contains(meta, "<version>1.1</version>") || !strings.Contains(meta, "<version>1.0</version>") {
		t.Fatalf("metadata after delete: %s", meta)
	}
	if got := a.trashKinds("MAVEN_VERSION"); !reflect.DeepEqual(got, []string{"MAVEN_VERSION MavenVersion com.acme:lib:1.1"}) {
		t.Fatalf("trash: %v", got)
	}
	if p := a.mavenPackage("com.acme", "lib", 10, nil); p.Versions.TotalCount != 1 || len(p.Versions.Edges) != 1 {
		t.Fatalf("versions after delete: %+v", p.Versions)
	}
	a.expectError(adminToken, del, ref, CodeConflict)
	a.admin(`mutation($id: ID!) { restoreMavenVersion(input: {namespace: "acme", id: $id}) { version { version } } }`, ref, nil)
	if _, meta := a.mavenMetadata("com.acme", "lib"); !strings.Contains(meta, "<version>1.1</version>") {
		t.Fatalf("metadata after restore: %s", meta)
	}

	other := a.mavenPackage("com.acme", "other", 1, nil)
	pref := map[string]any{"id": other.ID}
	a.admin(`mutation($id: ID!) { deleteMavenPackage(input: {namespace: "acme", id: $id}) { package { softDeletedAt } } }`, pref, nil)
	if status, _ := a.do(http.MethodGet, "/maven/acme/jvm/com/acme/other/1.0/other-1.0.jar", nil); status != http.StatusNotFound {
		t.Fatalf("file of a trashed package: %d", status)
	}
	if a.mavenPackage("com.acme", "other", 1, nil) != nil {
		t.Fatalf("trashed package still found")
	}
	if got := a.trashKinds("MAVEN_PACKAGE"); !reflect.DeepEqual(got, []string{"MAVEN_PACKAGE MavenPackage com.acme:other"}) {
		t.Fatalf("trash: %v", got)
	}
	a.expectError(adminToken, `mutation($id: ID!) { deleteMavenPackage(input: {namespace: "acme", id: $id}) { package { id } } }`, pref, CodeConflict)
	a.admin(`mutation($id: ID!) { restoreMavenPackage(input: {namespace: "acme", id: $id}) { package { groupId artifactId softDeletedAt } } }`, pref, nil)
	if status, _ := a.do(http.MethodGet, "/maven/acme/jvm/com/acme/other/1.0/other-1.0.jar", nil); status != http.StatusOK {
		t.Fatalf("file after package restore: %d", status)
	}
	if got := a.trashKinds(""); len(got) != 0 {
		t.Fatalf("trash after restores: %v", got)
	}
}

// npm writes through the API run the write hook inside their transaction,
// as the protocol's writes do (serve passes the hook that queues the
// background packument rebuild): the hook sees the change uncommitted, and
// a hook failure rolls the whole mutation back.
func TestNpmMutationsRunWriteHook(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		calls []string
		fail  bool
	)
	hook := func(ctx context.Context, tx pgx.Tx, pkg npmstore.PackageRef) error {
		var trashed int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM npm_versions WHERE namespace_id = $1 AND npm_package_id = $2 AND soft_deleted_at IS NOT NULL`,
			pkg.NamespaceID, pkg.PackageID).Scan(&trashed); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, fmt.Sprintf("%s:%d", pkg.Name, trashed))
		if fail {
			return errors.New("queue unavailable")
		}
		return nil
	}
	a := newPkgAPIWithHook(t, hook)
	a.npmPublish("hooked", "1.0.0", "", nil)
	a.npmPublish("hooked", "1.1.0", "", nil)
	id := a.npmVersionID("hooked", "1.1.0")
	ref := map[string]any{"ns": "acme", "id": id}
	a.admin(`mutation($ns: String!, $id: ID!) { deleteNpmVersion(input: {namespace: $ns, id: $id}) { version { id } } }`, ref, nil)
	a.admin(`mutation($ns: String!, $id: ID!) { restoreNpmVersion(input: {namespace: $ns, id: $id}) { version { id } } }`, ref, nil)
	a.admin(`mutation { setNpmDistTag(input: {namespace: "acme", repository: "js", package: "hooked", tag: "old", version: "1.0.0"}) { package { name } } }`, nil, nil)
	a.admin(`mutation { removeNpmDistTag(input: {namespace: "acme", repository: "js", package: "hooked", tag: "old"}) { package { name } } }`, nil, nil)
	before := a.packument("hooked")["dist-tags"]
	mu.Lock()
	got := slices.Clone(calls)
	fail = true
	mu.Unlock()
	// Delete saw its own soft delete (1 trashed, uncommitted), restore saw it undone.
	if want := []string{"hooked:1", "hooked:0", "hooked:0", "hooked:0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("hook calls %v, want %v", got, want)
	}

	// A failing hook fails the mutation and leaves nothing written.
	a.expectError(adminToken, `mutation($ns: String!, $id: ID!) { deleteNpmVersion(input: {namespace: $ns, id: $id}) { version { id } } }`, ref, CodeInternal)
	a.expectError(adminToken, `mutation { setNpmDistTag(input: {namespace: "acme", repository: "js", package: "hooked", tag: "old", version: "1.0.0"}) { package { name } } }`, nil, CodeInternal)
	if v := a.npmVersionNames("hooked", 10); !reflect.DeepEqual(v, []string{"1.1.0", "1.0.0"}) {
		t.Fatalf("versions after a failed hook: %v", v)
	}
	if tags := a.packument("hooked")["dist-tags"]; !reflect.DeepEqual(tags, before) || tags.(map[string]any)["old"] != nil {
		t.Fatalf("dist-tags after a failed hook: %v, before %v", tags, before)
	}
}
