package npm

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkNpmRemoteInstall50 runs the real npm CLI: npm install of a
// project with 50 direct dependencies (10 scoped, 40 unscoped; no
// lockfile, empty client cache every run) from an independent static
// upstream shaped like the public registry, three ways:
//
//   - direct: the client asks the upstream itself;
//   - remote-cold: through a new npm remote each run (our cache empty:
//     every packument and tarball is fetched, verified and cached);
//   - remote-warm: through a remote that served the project once (every
//     answer from our cache within the metadata validity).
//
// upstream-req/run counts the upstream's requests per run (0 when warm).
func BenchmarkNpmRemoteInstall50(b *testing.B) {
	e := newEnv(b, envOptions{})
	up := newFakeRegistry(b)
	deps := map[string]string{}
	for i := range 50 {
		name := fmt.Sprintf("dep-%02d", i)
		if i < 10 {
			name = fmt.Sprintf("@up/dep-%02d", i)
		}
		up.publish(name, "1.0.0", nil, nil)
		up.publish(name, "1.1.0", nil, nil)
		deps[name] = "^1.0.0"
	}
	project := func(b *testing.B) string {
		dir := b.TempDir()
		writeJSONFile(b, filepath.Join(dir, "package.json"), map[string]any{"name": "consumer", "version": "1.0.0", "private": true, "dependencies": deps})
		return dir
	}
	install := func(b *testing.B, c *npmClient) time.Duration {
		b.Helper()
		dir := project(b)
		c.setCache(filepath.Join(dir, ".npm-cache"))
		up.takeRequests()
		b.StartTimer()
		start := time.Now()
		out := c.must(dir, "install", "--no-package-lock")
		d := time.Since(start)
		b.StopTimer()
		if !strings.Contains(out, "added 50 packages") {
			b.Fatalf("npm install: %s", out)
		}
		return d
	}
	run := func(name string, client func(b *testing.B, i int) *npmClient) {
		b.Run(name, func(b *testing.B) {
			var lat []time.Duration
			upstreamReqs := 0
			b.StopTimer()
			for i := range b.N {
				c := client(b, i)
				lat = append(lat, install(b, c))
				upstreamReqs += len(up.takeRequests())
			}
			reportLatencies(b, lat, "install")
			b.ReportMetric(float64(upstreamReqs)/float64(b.N), "upstream-req/run")
		})
	}

	run("direct", func(b *testing.B, _ int) *npmClient {
		c := e.newNPM(b, "unused", false)
		c.env = append(c.env, "NPM_CONFIG_REGISTRY="+up.url+"/")
		return c
	})
	remotes := 0
	run("remote-cold", func(b *testing.B, _ int) *npmClient {
		remotes++
		name := fmt.Sprintf("cold-%d", remotes)
		e.addRemote(b, name, up.url, 1)
		return e.newNPM(b, name, false)
	})
	e.addRemote(b, "warm", up.url, 1)
	warmUp := e.newNPM(b, "warm", false)
	dir := project(b)
	warmUp.setCache(filepath.Join(dir, ".npm-cache"))
	warmUp.must(dir, "install", "--no-package-lock")
	// Fills commit once the client has its verified bytes: wait for all.
	e.waitCount(b, `SELECT count(*) FROM npm_remote_files f JOIN npm_remote_versions v ON v.namespace_id = f.namespace_id
		AND v.id = f.npm_remote_version_id JOIN npm_remote_packages p ON p.namespace_id = v.namespace_id AND p.id = v.npm_remote_package_id
		JOIN npm_remote_repositories r ON r.namespace_id = p.namespace_id AND r.id = p.npm_remote_repository_id
		JOIN repositories rp ON rp.id = r.repository_id WHERE rp.name = 'warm'`, 50)
	run("remote-warm", func(b *testing.B, _ int) *npmClient { return e.newNPM(b, "warm", false) })
}
