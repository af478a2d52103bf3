package maven

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// hosted creates a private hosted Maven repository (and the namespace
// if needed).
func (s *testServer) hosted(t testing.TB, ns, name string) *store.Repository {
	t.Helper()
	if _, err := s.Store.NamespaceBySlug(context.Background(), ns); err != nil {
		testsupport.Namespace(t, s.Store, ns)
	}
	return testsupport.Repository(t, s.Store, ns, name, enum.FormatMaven, enum.VisibilityPrivate)
}

// virtual creates a virtual Maven repository of an existing namespace.
func (s *testServer) virtual(t testing.TB, ns, name string, in store.VirtualInput) {
	t.Helper()
	child, err := store.VirtualChild(enum.FormatMaven, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.CreateRepository(context.Background(), store.NewRepository{Namespace: ns, Name: name,
		Format: enum.FormatMaven, Kind: enum.KindVirtual, Visibility: enum.VisibilityPrivate, Child: child}); err != nil {
		t.Fatal(err)
	}
}

func members(names ...string) []store.VirtualUpstreamInput {
	out := make([]store.VirtualUpstreamInput, len(names))
	for i, n := range names {
		out[i] = store.VirtualUpstreamInput{Repository: n}
	}
	return out
}

func rule(typ enum.UpstreamRuleType, field enum.MavenTargetField, pattern string) store.VirtualRule {
	return store.VirtualRule{Type: typ, Field: int16(field), Pattern: pattern}
}

// countPrefix is the number of requests whose "METHOD /path" starts with
// prefix.
func (u *upstreamRepo) countPrefix(prefix string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for k, c := range u.counts {
		if strings.HasPrefix(k, prefix) {
			n += c
		}
	}
	return n
}

// versionsOf lists the <version> elements of a metadata document.
func versionsOf(md string) string {
	var out []string
	for _, m := range regexp.MustCompile(`<version>([^<]+)</version>`).FindAllStringSubmatch(md, -1) {
		out = append(out, m[1])
	}
	return strings.Join(out, ",")
}

func packageDoc(g, a, lastUpdated string, versions ...string) []byte {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata><groupId>" + g + "</groupId><artifactId>" + a +
		"</artifactId><versioning><latest>" + versions[len(versions)-1] + "</latest><versions>")
	for _, v := range versions {
		b.WriteString("<version>" + v + "</version>")
	}
	b.WriteString("</versions><lastUpdated>" + lastUpdated + "</lastUpdated></versioning></metadata>\n")
	return []byte(b.String())
}

func snapshotDoc(g, a, v, ts, build string) []byte {
	return []byte("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata modelVersion=\"1.1.0\"><groupId>" + g + "</groupId><artifactId>" + a +
		"</artifactId><version>" + v + "</version><versioning><snapshot><timestamp>" + ts + "</timestamp><buildNumber>" + build +
		"</buildNumber></snapshot><lastUpdated>" + strings.Replace(ts, ".", "", 1) + "</lastUpdated></versioning></metadata>\n")
}

// TestVirtualHTTP drives Maven virtual repositories over HTTP: the
// metadata merge (order, latest/release/lastUpdated, checksums of the
// merged bytes, SNAPSHOT documents from the newest upstream, plugin
// prefixes), first-hit files counted on their upstream, rules through a
// nested virtual, dependency confusion (shadowing and reserved names,
// checked on the upstream's request log), an upstream that is down,
// deploys and authorization.
func TestVirtualHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	up := newUpstreamRepo(t, t.TempDir())
	// Two proxies of the same server, under /a and /b.
	up.write(t, "a/net/remote/tool/maven-metadata.xml", packageDoc("net.remote", "tool", "20250101000000", "1.0", "2.0"))
	up.write(t, "b/net/remote/tool/maven-metadata.xml", packageDoc("net.remote", "tool", "20260101000000", "1.0", "3.0-beta"))
	up.write(t, "a/net/remote/tool/1.0/tool-1.0.pom", []byte("<project>a</project>"))
	up.write(t, "b/net/remote/tool/1.0/tool-1.0.pom", []byte("<project>b</project>"))
	up.write(t, "a/net/remote/tool/2.0/tool-2.0.jar", []byte("tool 2.0 jar"))
	up.write(t, "b/net/remote/tool/3.0-beta/tool-3.0-beta.jar", []byte("tool 3.0-beta jar"))
	up.write(t, "a/net/remote/tool/4.0-SNAPSHOT/maven-metadata.xml", snapshotDoc("net.remote", "tool", "4.0-SNAPSHOT", "20250101.000000", "3"))
	up.write(t, "b/net/remote/tool/4.0-SNAPSHOT/maven-metadata.xml", snapshotDoc("net.remote", "tool", "4.0-SNAPSHOT", "20260101.000000", "1"))
	up.write(t, "a/org/remote/plugins/maven-metadata.xml", []byte(`<metadata><plugins>
  <plugin><name>X</name><prefix>x</prefix><artifactId>x-maven-plugin</artifactId></plugin></plugins></metadata>`))
	up.write(t, "b/org/remote/plugins/maven-metadata.xml", []byte(`<metadata><plugins>
  <plugin><name>X2</name><prefix>x</prefix><artifactId>other-x-plugin</artifactId></plugin>
  <plugin><prefix>y</prefix><artifactId>y-maven-plugin</artifactId></plugin></plugins></metadata>`))
	up.write(t, "a/net/remote/secret/1.0/secret-1.0.pom", []byte("<project>secret</project>"))
	// The dependency-confusion bait: names the hosted upstreams hold or
	// the virtual reserves, with higher versions.
	up.write(t, "a/com/acme/lib/maven-metadata.xml", packageDoc("com.acme", "lib", "20990101000000", "1.0", "99.0"))
	up.write(t, "a/com/acme/lib/99.0/lib-99.0.jar", []byte("evil"))
	up.write(t, "a/com/acme/secret/1.0/secret-1.0.pom", []byte("<project>evil</project>"))
	up.write(t, "a/com/acme/maven-metadata.xml", []byte(`<metadata><plugins><plugin><prefix>evil</prefix><artifactId>evil</artifactId></plugin></plugins></metadata>`))
	up.write(t, "a/org/example/util/maven-metadata.xml", packageDoc("org.example", "util", "20990101000000", "99.0"))

	internal := s.hosted(t, "acme", "internal")
	s.hosted(t, "acme", "internal2")
	s.remote(t, "acme", "central-a", up.srv.URL+"/a", enum.VisibilityPrivate, mavenRemoteDefaults())
	s.remote(t, "acme", "central-b", up.srv.URL+"/b", enum.VisibilityPrivate, mavenRemoteDefaults())
	deploy := "internal"
	s.virtual(t, "acme", "all", store.VirtualInput{Upstreams: members("internal", "internal2", "central-a", "central-b"),
		DeployTo: &deploy, ReservedPatterns: []string{"com/acme/**"}})
	s.virtual(t, "acme", "inner", store.VirtualInput{Upstreams: members("central-a", "central-b"),
		ReservedPatterns: []string{"net/remote/secret"}})
	s.virtual(t, "acme", "ruled", store.VirtualInput{Upstreams: []store.VirtualUpstreamInput{
		{Repository: "internal", Rules: []store.VirtualRule{rule(enum.UpstreamRuleDeny, enum.MavenTargetVersion, "1.1*")}},
		{Repository: "inner", Rules: []store.VirtualRule{rule(enum.UpstreamRuleDeny, enum.MavenTargetVersion, "3.*"),
			rule(enum.UpstreamRuleAllow, enum.MavenTargetGroupID, "net.remote")}},
	}})
	t.Cleanup(func() { s.checkInvariants(t) })

	// Deploys through the virtual land in its deploy target.
	const all = "/maven/acme/all/"
	s.deployFile(t, all+"com/acme/lib/1.0/lib-1.0.jar", []byte("internal lib 1.0"))
	s.get(t, "/maven/acme/internal/com/acme/lib/1.0/lib-1.0.jar", http.StatusOK)
	for _, v := range []string{"1.0", "1.10"} {
		s.deployFile(t, "/maven/acme/internal/org/example/util/"+v+"/util-"+v+".jar", []byte("util "+v))
	}
	for _, v := range []string{"1.5", "1.9-SNAPSHOT"} {
		s.deployFile(t, "/maven/acme/internal2/org/example/util/"+v+"/util-"+v+".jar", []byte("util2 "+v))
	}
	s.deployFile(t, "/maven/acme/internal/org/example/util/2.0-SNAPSHOT/util-2.0-20261101.100000-1.jar", []byte("old snapshot"))
	s.deployFile(t, "/maven/acme/internal2/org/example/util/2.0-SNAPSHOT/util-2.0-20261201.100000-4.jar", []byte("new snapshot"))

	t.Run("hosted metadata merge", func(t *testing.T) {
		r := s.get(t, all+"org/example/util/maven-metadata.xml", http.StatusOK)
		if got := versionsOf(r.body); got != "1.0,1.5,1.9-SNAPSHOT,1.10,2.0-SNAPSHOT" {
			t.Fatalf("merged versions %s:\n%s", got, r.body)
		}
		if !has(r.body, "<latest>2.0-SNAPSHOT</latest>") || !has(r.body, "<release>1.10</release>") || !has(r.body, "<lastUpdated>") {
			t.Fatalf("merged document:\n%s", r.body)
		}
		body := []byte(r.body)
		for _, alg := range []string{"md5", "sha1", "sha256", "sha512"} {
			if got := s.get(t, all+"org/example/util/maven-metadata.xml."+alg, http.StatusOK).body; got != hexSum(alg, body) {
				t.Errorf("%s of the merged document: %q, want %q", alg, got, hexSum(alg, body))
			}
		}
		if et := r.header.Get("ETag"); et != `"`+hexSum("sha1", body)+`"` {
			t.Errorf("ETag %q", et)
		}
		if c := s.do(t, http.MethodGet, all+"org/example/util/maven-metadata.xml", nil, true, "If-None-Match", r.header.Get("ETag")); c.status != http.StatusNotModified {
			t.Errorf("revalidation: %d", c.status)
		}
		// Shadowed: the upstream's 99.0 is neither merged nor asked for.
		if n := up.countPrefix("GET /a/org/example/util"); n != 0 {
			t.Errorf("the upstream saw %d requests for a hosted name", n)
		}
		// The SNAPSHOT version's document is the newest upstream's.
		md := s.get(t, all+"org/example/util/2.0-SNAPSHOT/maven-metadata.xml", http.StatusOK).body
		if !has(md, "<timestamp>20261201.100000</timestamp>") || !has(md, "<buildNumber>4</buildNumber>") {
			t.Fatalf("SNAPSHOT metadata:\n%s", md)
		}
		if got := s.get(t, all+"org/example/util/2.0-SNAPSHOT/maven-metadata.xml.sha1", http.StatusOK).body; got != hexSum("sha1", []byte(md)) {
			t.Errorf("sha1 of the SNAPSHOT document %q", got)
		}
		// Files: the first upstream that has them, counted there.
		if got := s.get(t, all+"org/example/util/1.5/util-1.5.jar", http.StatusOK).body; got != "util2 1.5" {
			t.Fatalf("util 1.5: %q", got)
		}
		if got := s.get(t, all+"org/example/util/1.10/util-1.10.jar.sha256", http.StatusOK).body; got != hexSum("sha256", []byte("util 1.10")) {
			t.Fatalf("util 1.10 sha256: %q", got)
		}
		if got := s.get(t, all+"org/example/util/2.0-SNAPSHOT/util-2.0-SNAPSHOT.jar", http.StatusOK).body; got != "old snapshot" {
			t.Fatalf("non-timestamped SNAPSHOT name: %q (the first upstream that has the version wins)", got)
		}
		var downloads int64
		s.counts.Flush()
		if err := s.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM counter_deltas
			WHERE target = $1 AND field = $2 AND target_id = $3`, int16(enum.CounterTargetRepository),
			int16(enum.CounterFieldDownloadsCount), internal.ID).Scan(&downloads); err != nil {
			t.Fatal(err)
		}
		if downloads < 2 {
			t.Errorf("%d downloads counted on the hosted upstream that served them", downloads)
		}
	})

	t.Run("remote metadata merge", func(t *testing.T) {
		r := s.get(t, all+"net/remote/tool/maven-metadata.xml", http.StatusOK)
		if got := versionsOf(r.body); got != "1.0,2.0,3.0-beta" || !has(r.body, "<latest>3.0-beta</latest>") ||
			!has(r.body, "<release>3.0-beta</release>") || !has(r.body, "<lastUpdated>20260101000000</lastUpdated>") {
			t.Fatalf("merged remote document:\n%s", r.body)
		}
		lm := r.header.Get("Last-Modified")
		if lm != "Thu, 01 Jan 2026 00:00:00 GMT" {
			t.Errorf("Last-Modified %q", lm)
		}
		// The ETag validates; lastUpdated need not grow with every change.
		if c := s.do(t, http.MethodGet, all+"net/remote/tool/maven-metadata.xml", nil, true, "If-Modified-Since", lm); c.status != http.StatusOK {
			t.Errorf("If-Modified-Since: %d", c.status)
		}
		if got := s.get(t, all+"net/remote/tool/maven-metadata.xml.sha512", http.StatusOK).body; got != hexSum("sha512", []byte(r.body)) {
			t.Errorf("sha512 of the merged document %q", got)
		}
		if got := s.get(t, all+"net/remote/tool/1.0/tool-1.0.pom", http.StatusOK).body; got != "<project>a</project>" {
			t.Fatalf("first remote's pom: %q", got)
		}
		if got := s.get(t, all+"net/remote/tool/3.0-beta/tool-3.0-beta.jar", http.StatusOK).body; got != "tool 3.0-beta jar" {
			t.Fatalf("second remote's jar: %q", got)
		}
		md := s.get(t, all+"net/remote/tool/4.0-SNAPSHOT/maven-metadata.xml", http.StatusOK).body
		if !has(md, "<timestamp>20260101.000000</timestamp>") {
			t.Fatalf("remote SNAPSHOT metadata:\n%s", md)
		}
		pl := s.get(t, all+"org/remote/plugins/maven-metadata.xml", http.StatusOK).body
		if !has(pl, "<prefix>x</prefix>\n      <artifactId>x-maven-plugin</artifactId>") || !has(pl, "<prefix>y</prefix>") ||
			has(pl, "other-x-plugin") || has(pl, "<versioning>") {
			t.Fatalf("merged plugin prefixes:\n%s", pl)
		}
	})

	t.Run("dependency confusion", func(t *testing.T) {
		md := s.get(t, all+"com/acme/lib/maven-metadata.xml", http.StatusOK).body
		if got := versionsOf(md); got != "1.0" {
			t.Fatalf("hosted name's versions through the virtual: %s", got)
		}
		s.get(t, all+"com/acme/lib/99.0/lib-99.0.jar", http.StatusNotFound)
		s.get(t, all+"com/acme/lib/99.0/lib-99.0.jar.sha1", http.StatusNotFound)
		s.get(t, all+"com/acme/secret/1.0/secret-1.0.pom", http.StatusNotFound)
		s.get(t, all+"com/acme/secret/maven-metadata.xml", http.StatusNotFound)
		s.get(t, all+"com/acme/maven-metadata.xml", http.StatusNotFound)
		if n := up.countPrefix("GET /a/com/acme") + up.countPrefix("HEAD /a/com/acme"); n != 0 {
			t.Fatalf("the upstream saw %d requests for internal names", n)
		}
		// A nested virtual's reserved pattern holds on the way through it.
		s.get(t, "/maven/acme/ruled/net/remote/secret/1.0/secret-1.0.pom", http.StatusNotFound)
		if n := up.countPrefix("GET /a/net/remote/secret"); n != 0 {
			t.Fatalf("the upstream saw %d requests for a name reserved by a nested virtual", n)
		}
		s.get(t, "/maven/acme/central-a/net/remote/secret/1.0/secret-1.0.pom", http.StatusOK)
	})

	t.Run("rules", func(t *testing.T) {
		const ruled = "/maven/acme/ruled/"
		if got := versionsOf(s.get(t, ruled+"org/example/util/maven-metadata.xml", http.StatusOK).body); got != "1.0,2.0-SNAPSHOT" {
			t.Fatalf("util through the rules: %s", got)
		}
		s.get(t, ruled+"org/example/util/1.10/util-1.10.jar", http.StatusNotFound)
		s.get(t, ruled+"org/example/util/1.0/util-1.0.jar", http.StatusOK)
		r := s.get(t, ruled+"net/remote/tool/maven-metadata.xml", http.StatusOK)
		if got := versionsOf(r.body); got != "1.0,2.0" || !has(r.body, "<latest>2.0</latest>") {
			t.Fatalf("tool through the nested rules:\n%s", r.body)
		}
		s.get(t, ruled+"net/remote/tool/3.0-beta/tool-3.0-beta.jar", http.StatusNotFound)
		s.get(t, ruled+"net/remote/tool/2.0/tool-2.0.jar", http.StatusOK)
		// The NAME allow rule keeps other groups from the remotes.
		s.get(t, ruled+"org/remote/plugins/maven-metadata.xml", http.StatusNotFound)
	})

	t.Run("upstream down", func(t *testing.T) {
		dead := newUpstreamRepo(t, t.TempDir())
		dead.write(t, "net/remote/cached/1.0/cached-1.0.jar", []byte("cached before the outage"))
		s.remote(t, "acme", "dead", dead.srv.URL, enum.VisibilityPrivate, mavenRemoteDefaults())
		s.virtual(t, "acme", "down", store.VirtualInput{Upstreams: members("dead", "central-a")})
		const down = "/maven/acme/down/"
		s.get(t, down+"net/remote/cached/1.0/cached-1.0.jar", http.StatusOK)
		dead.srv.Close()
		if got := s.get(t, down+"net/remote/cached/1.0/cached-1.0.jar", http.StatusOK).body; got != "cached before the outage" {
			t.Fatalf("cached file: %q", got)
		}
		if got := s.get(t, down+"net/remote/tool/2.0/tool-2.0.jar", http.StatusOK).body; got != "tool 2.0 jar" {
			t.Fatalf("file of the live upstream: %q", got)
		}
		if got := versionsOf(s.get(t, down+"net/remote/tool/maven-metadata.xml", http.StatusOK).body); got != "1.0,2.0" {
			t.Fatalf("metadata with one upstream down: %s", got)
		}
		r := s.do(t, http.MethodGet, down+"net/remote/nowhere/1.0/nowhere-1.0.jar", nil, true)
		if r.status != http.StatusBadGateway && r.status != http.StatusServiceUnavailable && r.status != http.StatusGatewayTimeout {
			t.Fatalf("a file no live upstream has, one upstream down: %d %q", r.status, r.body)
		}
		r = s.do(t, http.MethodGet, down+"net/remote/nowhere/maven-metadata.xml", nil, true)
		if r.status != http.StatusBadGateway && r.status != http.StatusServiceUnavailable && r.status != http.StatusGatewayTimeout {
			t.Fatalf("metadata no live upstream has, one upstream down: %d %q", r.status, r.body)
		}
	})

	t.Run("writes and authorization", func(t *testing.T) {
		if r := s.do(t, http.MethodPut, "/maven/acme/ruled/org/example/util/3.0/util-3.0.jar", []byte("x"), true); r.status != http.StatusMethodNotAllowed {
			t.Fatalf("deploy without a deploy target: %d %q", r.status, r.body)
		}
		if r := s.do(t, http.MethodDelete, all+"com/acme/lib/1.0/lib-1.0.jar", nil, true); r.status != http.StatusMethodNotAllowed {
			t.Fatalf("delete through a virtual: %d", r.status)
		}
		ns, err := s.Store.NamespaceBySlug(context.Background(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		mint := func(name string, scope enum.TokenScope, repos ...string) string {
			_, secret, err := s.Authn.CreateToken(context.Background(), auth.AdminPrincipal(""), auth.NamespaceOf(ns),
				auth.TokenSpec{Name: name, Scopes: []enum.TokenScope{scope}, Repositories: repos})
			if err != nil {
				t.Fatal(err)
			}
			return secret
		}
		as := func(secret, method, path string, body []byte) int {
			req, err := http.NewRequest(method, s.URL+path, strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			if secret != "" {
				req.SetBasicAuth("u", secret)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		reader := mint("virtual-reader", enum.TokenScopeRead, "all")
		writer := mint("virtual-writer", enum.TokenScopeWrite, "all")
		memberReader := mint("member-reader", enum.TokenScopeRead, "internal2")
		jar := all + "org/example/util/1.5/util-1.5.jar"
		for _, c := range []struct {
			who, secret, method, path string
			want                      int
		}{
			{"anonymous", "", http.MethodGet, jar, http.StatusUnauthorized},
			{"anonymous", "", http.MethodPut, all + "com/acme/lib/2.0/lib-2.0.jar", http.StatusUnauthorized},
			{"virtual reader", reader, http.MethodGet, jar, http.StatusOK},
			{"virtual reader", reader, http.MethodGet, "/maven/acme/internal2/org/example/util/1.5/util-1.5.jar", http.StatusForbidden},
			{"virtual reader", reader, http.MethodPut, all + "com/acme/lib/2.0/lib-2.0.jar", http.StatusForbidden},
			{"virtual reader", reader, http.MethodDelete, jar, http.StatusMethodNotAllowed},
			{"virtual writer", writer, http.MethodPut, all + "com/acme/lib/2.0/lib-2.0.jar", http.StatusCreated},
			{"virtual writer", writer, http.MethodPut, "/maven/acme/internal/com/acme/lib/2.1/lib-2.1.jar", http.StatusForbidden},
			{"virtual writer", writer, http.MethodDelete, jar, http.StatusMethodNotAllowed},
			{"member reader", memberReader, http.MethodGet, jar, http.StatusForbidden},
			{"member reader", memberReader, http.MethodGet, "/maven/acme/internal2/org/example/util/1.5/util-1.5.jar", http.StatusOK},
		} {
			if got := as(c.secret, c.method, c.path, []byte("lib 2.0")); got != c.want {
				t.Errorf("%s %s %s: %d, want %d", c.who, c.method, c.path, got, c.want)
			}
		}
		if got := s.get(t, "/maven/acme/internal/com/acme/lib/2.0/lib-2.0.jar", http.StatusOK).body; got != "lib 2.0" {
			t.Fatalf("the virtual writer's deploy: %q", got)
		}
	})
}
