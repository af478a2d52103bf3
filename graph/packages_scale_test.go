package graph

import (
	"fmt"
	"sort"
	"sync"
	"testing"
)

// npmNestedQuery reads every nested field of the npm packages of a
// repository.
const npmNestedQuery = `query($r: String!) { repository(namespace: "acme", name: $r) { npmPackages(first: 10) { totalCount edges { node {
	name scope distTags { name version { version deprecated } } latest { version description tarball { sizeBytes } }
	versions(first: 10) { totalCount edges { node { version deprecated description license integrity shasum distTags
		dependencies { name range } dev: dependencies(kind: DEV) { name } tarball { sizeBytes sha256 } package { name } } } } } } } } }`

const mavenNestedQuery = `query($r: String!) { repository(namespace: "acme", name: $r) { mavenPackages(first: 100) { totalCount edges { node {
	groupId artifactId files { edges { node { fileName } } }
	versions(first: 10) { totalCount edges { node { version isSnapshot package { artifactId }
		files { edges { node { fileName sizeBytes sha1 md5 } } } } } } } } } } }`

// statementsOf runs a query and returns how many SQL statements it sent.
func (a *pkgAPI) statementsOf(query string, vars map[string]any) int64 {
	a.t.Helper()
	a.stmts.reset()
	r := a.post(adminToken, query, vars)
	if len(r.Errors) > 0 {
		a.t.Fatalf("errors: %+v", r.Errors)
	}
	return a.stmts.n.Load()
}

// TestPackagesNoNPlusOne: the nested package queries run the same number
// of statements for 2 and for 8 packages (one per level and loader).
func TestPackagesNoNPlusOne(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	a.createRepository("acme", "js-big", "NPM", "PUBLIC")
	a.createRepository("acme", "jvm-big", "MAVEN", "PUBLIC")
	seed := func(npmRepo, mavenRepo string, n int) {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("pkg-%02d", i)
			for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc.1"} {
				if status, body := a.npmPublishTo(npmRepo, name, v, map[string]any{"dependencies": map[string]any{"dep": "^1"}}); status != 201 {
					t.Fatalf("publish: %d %s", status, body)
				}
			}
			for _, v := range []string{"1.0", "1.1-SNAPSHOT"} {
				a.mavenDeployTo(mavenRepo, "com.acme", name, v)
			}
		}
	}
	seed("js", "jvm", 2)
	seed("js-big", "jvm-big", 8)
	// One statement per (level, loader) pair. npm (13): namespace,
	// repository, package page + count, dist-tags, tagged versions (latest
	// and dist-tag targets) with their details and tarballs, version page +
	// count, the page's details, tag names and tarballs. Maven (8):
	// namespace, repository, package page + count, package files, version
	// page + count, version files.
	for _, c := range []struct {
		query, small, large string
		want                int64
	}{
		{npmNestedQuery, "js", "js-big", 13},
		{mavenNestedQuery, "jvm", "jvm-big", 8},
	} {
		small := a.statementsOf(c.query, map[string]any{"r": c.small})
		large := a.statementsOf(c.query, map[string]any{"r": c.large})
		for _, s := range a.stmts.statements() {
			if len(s) > 120 {
				s = s[:120]
			}
			t.Logf("%s: %s", c.large, s)
		}
		t.Logf("%s: %d statements for 2 packages, %d for 8", c.small, small, large)
		if small != c.want || large != c.want {
			t.Fatalf("%s: %d statements for 2 packages and %d for 8, want %d whatever the row count", c.small, small, large, c.want)
		}
	}
}

// TestPackagesPaginationConcurrentInserts walks the package and version
// lists in small pages while other packages and versions are published:
// every row that existed before the walk is returned exactly once, and no
// row twice.
func TestPackagesPaginationConcurrentInserts(t *testing.T) {
	t.Parallel()
	a := newPkgAPI(t)
	var before []string
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("p%02d", i*2)
		a.npmPublish(name, "1.0.0", "", nil)
		before = append(before, name)
	}
	var versionsBefore []string
	for i := 0; i < 10; i++ {
		v := fmt.Sprintf("1.%d.0", i*2)
		a.npmPublish("many", v, "", nil)
		versionsBefore = append(versionsBefore, v)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Names and versions that sort between and around the walked ones.
			a.npmPublishTo("js", fmt.Sprintf("p%02d", i*2+1), "1.0.0", nil)
			a.npmPublishTo("js", "many", fmt.Sprintf("1.%d.0", i*2+1), nil)
			a.npmPublishTo("js", "many", fmt.Sprintf("1.%d.0-rc.1", i*2), nil)
		}
	}()
	for round := 0; round < 3; round++ {
		var names []string
		var after *string
		for {
			var out struct {
				Repository struct {
					NpmPackages struct {
						PageInfo struct {
							HasNextPage bool
							EndCursor   string
						}
						Edges []struct{ Node struct{ Name string } }
					}
				}
			}
			a.admin(`query($after: String) { repository(namespace: "acme", name: "js") { npmPackages(first: 3, after: $after) {
				pageInfo { hasNextPage endCursor } edges { node { name } } } } }`, map[string]any{"after": after}, &out)
			for _, e := range out.Repository.NpmPackages.Edges {
				names = append(names, e.Node.Name)
			}
			if !out.Repository.NpmPackages.PageInfo.HasNextPage {
				break
			}
			c := out.Repository.NpmPackages.PageInfo.EndCursor
			after = &c
		}
		checkOnce(t, "packages", names, before)
		checkOnce(t, "versions", a.npmVersionNames("many", 3), versionsBefore)
	}
	close(stop)
	wg.Wait()
}

// checkOnce: every name of want appears exactly once in got, and no name
// twice.
func checkOnce(t *testing.T, what string, got, want []string) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
		if seen[g] > 1 {
			t.Fatalf("%s: %s returned twice in %v", what, g, got)
		}
	}
	for _, w := range want {
		if seen[w] != 1 {
			sort.Strings(got)
			t.Fatalf("%s: %s returned %d times in %v", what, w, seen[w], got)
		}
	}
}
