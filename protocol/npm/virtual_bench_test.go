package npm

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// seedVersions publishes n versions major.x.y of name into repo through
// the store, each with a realistic package.json.
func (e *env) seedVersions(b *testing.B, repo, name string, major, n int) {
	r, err := e.npm.ResolveRepository(e.ctx, "acme", repo)
	if err != nil {
		b.Fatal(err)
	}
	deps := map[string]string{}
	for i := range 12 {
		deps[fmt.Sprintf("dep-%d", i)] = "^1.0.0"
	}
	for v := range n {
		version := fmt.Sprintf("%d.%d.%d", major, v/10, v%10)
		pj := map[string]any{"name": name, "version": version, "description": "a package with many versions",
			"main": "index.js", "license": "MIT", "dependencies": deps, "keywords": []string{"a", "b"},
			"repository": map[string]string{"type": "git", "url": "git+https://example.com/big.git"}}
		tgz := npmpack.Tarball(b, pj, nil)
		pj["_id"] = name + "@" + version
		pj["_npmUser"] = map[string]string{"name": "admin", "email": ""}
		pj["_hasShrinkwrap"] = false
		s512, s1 := integrityOf(tgz)
		pj["dist"] = map[string]any{"integrity": s512, "shasum": s1, "fileCount": 2, "unpackedSize": 400}
		raw, _ := json.Marshal(pj)
		if _, err := e.npm.Publish(e.ctx, r, npmstore.PublishRequest{
			Name: name, Version: version, PackageJSON: raw, FileName: tarballFileName(name, version),
			Tarball: tgz, SHA1: sha1.Sum(tgz), Tags: []string{"latest"},
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVirtualMerge measures npm virtual packuments: the merge itself
// (three members of 1,000 versions each, in memory), a GET through a
// virtual over three hosted members holding them (uncached: merged per
// request; warm: the merged document cached by its ETag; 304: the
// client's ETag matches), and the added latency of a virtual with one
// hosted member over a direct hosted GET (a small package and the
// 1,000-version one).
//
//	nice go test -run XXX -bench VirtualMerge -benchtime 50x ./protocol/npm/
func BenchmarkVirtualMerge(b *testing.B) {
	const versions = 1000
	docs := make([][]byte, 3)
	for m := range docs {
		st := syntheticState(versions)
		for i := range st.Versions {
			st.Versions[i].Version = fmt.Sprintf("%d%s", m+1, st.Versions[i].Version)
		}
		d, err := buildDocuments(st, "http://127.0.0.1/npm/acme/m/big/-/")
		if err != nil {
			b.Fatal(err)
		}
		docs[m] = d[enum.NpmMetadataFull]
	}
	all := func(string) bool { return true }
	for _, corgi := range []bool{false, true} {
		b.Run(fmt.Sprintf("merge-3x1000/corgi=%v", corgi), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				in := []mergeInput{{body: docs[0], admits: all}, {body: docs[1], admits: all}, {body: docs[2], admits: all}}
				if _, err := mergePackuments("big", in, "http://127.0.0.1/npm/acme/all/big/-/", corgi); err != nil {
					b.Fatal(err)
				}
			}
		})
	}

	e := newEnv(b, envOptions{})
	testsupport.Repository(b, e.st, "acme", "h2", enum.FormatNpm, enum.VisibilityPrivate)
	testsupport.Repository(b, e.st, "acme", "h3", enum.FormatNpm, enum.VisibilityPrivate)
	for i, repo := range []string{"js", "h2", "h3"} {
		e.seedVersions(b, repo, "big", i+1, versions)
	}
	e.seedVersions(b, "js", "small", 1, 3)
	e.addVirtual(b, "three", enum.VisibilityPrivate, store.VirtualInput{Upstreams: virtualUpstreams("js", "h2", "h3")})
	e.addVirtual(b, "one", enum.VisibilityPrivate, store.VirtualInput{Upstreams: virtualUpstreams("js")})
	full := map[string]string{"Accept": "application/json"}
	corgi := map[string]string{"Accept": "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"}
	// Warm every member's stored documents.
	for _, u := range []string{e.registry("three") + "big", e.registry("one") + "big", e.registry("one") + "small"} {
		if st, _ := benchDo(b, http.MethodGet, u, nil, full); st != http.StatusOK {
			b.Fatalf("GET %s: %d", u, st)
		}
	}
	_, _, hdr := e.do("GET", e.registry("three")+"big", "token", nil, corgi)
	etag := hdr.Get("ETag")
	for _, c := range []struct {
		name   string
		url    string
		hdr    map[string]string
		purge  bool
		status int
	}{
		{"three-members/uncached/full", e.registry("three") + "big", full, true, 200},
		{"three-members/uncached/abbreviated", e.registry("three") + "big", corgi, true, 200},
		{"three-members/warm/abbreviated", e.registry("three") + "big", corgi, false, 200},
		{"three-members/304/abbreviated", e.registry("three") + "big", map[string]string{"Accept": corgi["Accept"], "If-None-Match": etag}, false, 304},
		{"direct-hosted/1000/abbreviated", e.registry("js") + "big", corgi, false, 200},
		{"one-member/1000/abbreviated", e.registry("one") + "big", corgi, false, 200},
		{"direct-hosted/small/abbreviated", e.registry("js") + "small", corgi, false, 200},
		{"one-member/small/abbreviated", e.registry("one") + "small", corgi, false, 200},
	} {
		b.Run(c.name, func(b *testing.B) {
			var lat []time.Duration
			for range b.N {
				if c.purge {
					e.handler.virtualDocs.Purge()
				}
				status, d := benchDo(b, http.MethodGet, c.url, nil, c.hdr)
				if status != c.status {
					b.Fatalf("GET: %d", status)
				}
				lat = append(lat, d)
			}
			reportLatencies(b, lat, "get")
		})
	}
}
