package graph

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkNpmVersionsPage: a page of 20 versions (with package.json
// details, dist-tags and tarball) of a package with 1,000 versions, in
// SemVer order: the first page and a page 500 versions deep.
func BenchmarkNpmVersionsPage(b *testing.B) {
	a := newPkgAPI(b)
	for i := 0; i < 1000; i++ {
		a.npmPublish("big", fmt.Sprintf("%d.%d.%d", i/100, (i/10)%10, i%10), "", map[string]any{"dependencies": map[string]any{"dep": "^1"}})
	}
	q := `query($after: String) { repository(namespace: "acme", name: "js") { npmPackage(name: "big") {
		versions(first: 20, after: $after) { totalCount pageInfo { endCursor } edges { node {
			version deprecated integrity distTags dependencies { name range } tarball { sizeBytes } } } } } } }`
	var deep string
	for i := 0; i < 25; i++ { // 25 pages of 20: the cursor after version #500
		var out struct {
			Repository struct {
				NpmPackage struct {
					Versions struct{ PageInfo struct{ EndCursor string } }
				}
			}
		}
		var vars map[string]any
		if deep != "" {
			vars = map[string]any{"after": deep}
		}
		a.admin(q, vars, &out)
		deep = out.Repository.NpmPackage.Versions.PageInfo.EndCursor
	}
	for _, c := range []struct {
		name string
		vars map[string]any
	}{{"first", nil}, {"deep", map[string]any{"after": deep}}} {
		b.Run(c.name, func(b *testing.B) {
			var lat latencies
			for i := 0; i < b.N; i++ {
				start := time.Now()
				a.admin(q, c.vars, nil)
				lat = append(lat, time.Since(start))
			}
			lat.report(b)
		})
	}
}

// BenchmarkMavenVersionsPage: a page of 20 versions with their files of
// a package with 300 versions.
func BenchmarkMavenVersionsPage(b *testing.B) {
	a := newPkgAPI(b)
	for i := 0; i < 300; i++ {
		a.mavenDeploy("com.acme", "big", fmt.Sprintf("1.%03d", i), "")
	}
	q := `{ repository(namespace: "acme", name: "jvm") { mavenPackage(groupId: "com.acme", artifactId: "big") {
		versions(first: 20) { totalCount edges { node { version isSnapshot files { edges { node { fileName sizeBytes sha1 } } } } } } } } }`
	b.ResetTimer()
	var lat latencies
	for i := 0; i < b.N; i++ {
		start := time.Now()
		a.admin(q, nil, nil)
		lat = append(lat, time.Since(start))
	}
	lat.report(b)
}
