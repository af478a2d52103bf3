package maven

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
)

// BenchmarkVirtualMaven measures what a virtual repository adds to a
// package-level maven-metadata.xml GET and to a POM GET: directly from
// the hosted repository, through a virtual whose first upstream has it,
// through one where it is the third upstream (the others hold other
// artifacts), through a nested virtual, and, for the metadata, merged
// from two hosted upstreams (20 versions each). Loopback HTTP, real
// PostgreSQL.
//
//	nice go test -run '^$' -bench BenchmarkVirtualMaven -benchtime 200x -count 3 ./protocol/maven/
func BenchmarkVirtualMaven(b *testing.B) {
	s := newTestServer(b, serverOpts{rootRouter: true})
	for _, n := range []string{"h", "h2", "e1", "e2"} {
		s.hosted(b, "bench", n)
	}
	const lib = "/org/example/bench/lib"
	for i := range 20 {
		v := fmt.Sprintf("1.%d", i)
		s.put(b, "/maven/bench/h"+lib+"/"+v+"/lib-"+v+".pom", []byte("<project>"+v+"</project>"), http.StatusCreated)
		v = fmt.Sprintf("2.%d", i)
		s.put(b, "/maven/bench/h2"+lib+"/"+v+"/lib-"+v+".pom", []byte("<project>"+v+"</project>"), http.StatusCreated)
	}
	for _, e := range []string{"e1", "e2"} {
		s.put(b, "/maven/bench/"+e+"/org/example/bench/other/1.0/other-1.0.pom", []byte("<project/>"), http.StatusCreated)
	}
	s.virtual(b, "bench", "v-first", store.VirtualInput{Upstreams: members("h")})
	s.virtual(b, "bench", "v-third", store.VirtualInput{Upstreams: members("e1", "e2", "h")})
	s.virtual(b, "bench", "v-nested", store.VirtualInput{Upstreams: members("e1", "v-first")})
	s.virtual(b, "bench", "v-merge", store.VirtualInput{Upstreams: members("h", "h2")})
	run := func(name, path string) {
		b.Run(name, func(b *testing.B) {
			s.get(b, path, http.StatusOK)
			b.ResetTimer()
			for b.Loop() {
				s.get(b, path, http.StatusOK)
			}
		})
	}
	for _, repo := range []string{"h", "v-first", "v-third", "v-nested", "v-merge"} {
		run("metadata/"+repo, "/maven/bench/"+repo+lib+"/maven-metadata.xml")
	}
	for _, repo := range []string{"h", "v-first", "v-third", "v-nested"} {
		run("pom/"+repo, "/maven/bench/"+repo+lib+"/1.5/lib-1.5.pom")
	}
}
