package maven

import (
	"fmt"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// BenchmarkMavenRemote runs the real `mvn package` of the proxy test
// project (commons-text and every build plugin resolved over HTTP) from an
// empty local repository, side by side: directly from the upstream (Debian's
// maven-repo served by http.FileServer), through a cold proxy (a new proxy
// each run), and through a warm proxy. It reports the wall time per build
// and the upstream requests per build.
//
//	go test -run '^$' -bench BenchmarkMavenRemote -benchtime 3x ./protocol/maven/
func BenchmarkMavenRemote(b *testing.B) {
	testtools.RequireMaven(b)
	up := newUpstreamRepo(b, testtools.MavenRepo)
	s := newTestServer(b, serverOpts{rootRouter: true})
	testsupport.Namespace(b, s.Store, "acme")
	e := newMvnEnv(b, s, "")
	build := func(b *testing.B, url string) {
		b.Helper()
		settings := proxySettings(b, e.dir, url, s.token(b, "acme", fmt.Sprintf("bench-%d", time.Now().UnixNano()), enum.TokenScopeRead))
		e.settings = settings
		if out, ok := e.mvn(e.project("proxyapp", ""), e.localRepo(), "package"); !ok {
			b.Fatalf("mvn failed:\n%s", tail(out, 40))
		}
	}
	run := func(name string, url func(i int) string, warmup bool) {
		b.Run(name, func(b *testing.B) {
			if warmup {
				build(b, url(-1))
			}
			before := up.count("", "")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				build(b, url(i))
			}
			b.StopTimer()
			b.ReportMetric(float64(up.count("", "")-before)/float64(b.N), "upstream-requests/op")
		})
	}
	run("direct", func(int) string { return up.srv.URL }, false)
	n := 0
	run("proxy-cold", func(int) string {
		n++
		name := fmt.Sprintf("cold%d", n)
		s.remote(b, "acme", name, up.srv.URL, enum.VisibilityPrivate, mavenRemoteDefaults())
		return s.URL + "/maven/acme/" + name
	}, false)
	s.remote(b, "acme", "warm", up.srv.URL, enum.VisibilityPrivate, mavenRemoteDefaults())
	run("proxy-warm", func(int) string { return s.URL + "/maven/acme/warm" }, true)
}
