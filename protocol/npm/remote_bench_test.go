package npm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// BenchmarkNpmRemoteInstall50 runs the real npm CLI: npm install of a
// project with 50 direct dependencies (10 scoped, 40 unscoped; no
// lockfile, empty client cache every run) from an independent static
// upstream shaped like the public registry, five ways:
//
//   - direct: the client asks the upstream itself;
//   - remote-cold: through a new npm remote each run (our cache empty:
//     every packument and tarball is fetched, verified and cached);
//   - remote-warm: through a remote that served the project once (every
//     answer from our cache within the metadata validity);
//   - verdaccio-cold: through a new Verdaccio (ocitools.VerdaccioVersion,
//     empty storage) with the same upstream as its uplink;
//   - verdaccio-warm: through a Verdaccio that served the project once
//     (uplink maxage one hour, like the remotes' metadata validity).
//
// Every run checks the installed tree: each dependency at the version
// the upstream's latest matching release has, and the same bytes in
// node_modules as a direct install, so a broken path cannot look fast.
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
	var wantTree string
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
		if got := installedTree(b, dir, deps); got != wantTree {
			b.Fatalf("installed tree %s differs from a direct install's %s", got, wantTree)
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

	direct := func(b *testing.B, registry string) *npmClient {
		c := e.newNPM(b, "unused", false)
		c.env = append(c.env, "NPM_CONFIG_REGISTRY="+registry)
		return c
	}
	// The reference tree: an untimed direct install.
	{
		c := direct(b, up.url+"/")
		dir := project(b)
		c.setCache(filepath.Join(dir, ".npm-cache"))
		c.must(dir, "install", "--no-package-lock")
		wantTree = installedTree(b, dir, deps)
	}
	// Installed (or found in the tool cache) before anything is timed.
	ocitools.Verdaccio(b)

	run("direct", func(b *testing.B, _ int) *npmClient { return direct(b, up.url+"/") })
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

	var cold *ocitools.VerdaccioServer
	run("verdaccio-cold", func(b *testing.B, _ int) *npmClient {
		if cold != nil {
			cold.Stop()
		}
		cold = ocitools.StartVerdaccio(b, up.url, time.Hour)
		return direct(b, cold.URL)
	})
	if cold != nil {
		cold.Stop()
	}
	// Started and warmed on the first run, so that a -bench filter that
	// leaves this variant out does not pay for it; it belongs to the
	// parent benchmark, because a sub-benchmark's cleanups run after each
	// of its rounds.
	parent := b
	var warm *ocitools.VerdaccioServer
	run("verdaccio-warm", func(b *testing.B, _ int) *npmClient {
		if warm == nil {
			warm = ocitools.StartVerdaccio(parent, up.url, time.Hour)
			c := direct(b, warm.URL)
			dir := project(b)
			c.setCache(filepath.Join(dir, ".npm-cache"))
			c.must(dir, "install", "--no-package-lock")
		}
		return direct(b, warm.URL)
	})
}

// installedTree checks that every dependency of deps is installed in
// dir/node_modules at the newest 1.x the upstream has (1.1.0) and returns
// a digest of every file and link under node_modules except npm's hidden
// lockfile (it records the registry each package came from).
func installedTree(b *testing.B, dir string, deps map[string]string) string {
	b.Helper()
	nm := filepath.Join(dir, "node_modules")
	for name := range deps {
		raw, err := os.ReadFile(filepath.Join(nm, filepath.FromSlash(name), "package.json"))
		if err != nil {
			b.Fatalf("%s not installed: %v", name, err)
		}
		var pj struct{ Name, Version string }
		if err := json.Unmarshal(raw, &pj); err != nil || pj.Name != name || pj.Version != "1.1.0" {
			b.Fatalf("node_modules/%s/package.json: %s@%s (%v), want %s@1.1.0", name, pj.Name, pj.Version, err, name)
		}
	}
	h := sha256.New()
	files := 0
	err := filepath.WalkDir(nm, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(nm, p)
		if rel == ".package-lock.json" || d.IsDir() {
			return nil
		}
		fmt.Fprintf(h, "%s\x00%v\x00", rel, d.Type())
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			fmt.Fprintf(h, "%s\x00", target)
			return err
		}
		raw, err := os.ReadFile(p)
		files++
		h.Write(raw)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if files < 2*len(deps) {
		b.Fatalf("node_modules holds %d files, want at least %d", files, 2*len(deps))
	}
	return hex.EncodeToString(h.Sum(nil))
}
