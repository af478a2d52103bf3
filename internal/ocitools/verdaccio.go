package ocitools

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
)

// VerdaccioVersion is the pinned Verdaccio, the newest 6.x whose whole
// dependency tree runs on Debian's Node.js 20 (6.9 and later need 22).
// verdaccio/package-lock.json pins every transitive package with its
// integrity; regenerate it with
//
//	npm install --package-lock-only --omit-lockfile-registry-resolved
//
// in that directory after changing the version in its package.json.
const VerdaccioVersion = "6.8.0"

var (
	//go:embed verdaccio/package.json
	verdaccioPackageJSON []byte
	//go:embed verdaccio/package-lock.json
	verdaccioLock []byte
)

// Verdaccio returns the path of Verdaccio's command script (run it with
// node), installing it into the tool cache when missing. The test fails
// when CI=true and it cannot be installed or node is missing, and is
// skipped otherwise.
func Verdaccio(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		testtools.Unavailable(t, "Verdaccio needs Node.js (run scripts/ensure-test-tools)")
	}
	mu.Lock()
	defer mu.Unlock()
	// The lockfile's digest is part of the key: a regenerated lockfile
	// installs anew rather than reusing a tree it no longer describes.
	sum := sha256.Sum256(verdaccioLock)
	version := VerdaccioVersion + "-" + hex.EncodeToString(sum[:6])
	key := "verdaccio@" + version
	if p, ok := built[key]; ok {
		return p
	}
	dir, err := ensure("verdaccio", version, buildTimeout, func(ctx context.Context, out string) error {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		for name, b := range map[string][]byte{"package.json": verdaccioPackageJSON, "package-lock.json": verdaccioLock} {
			if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
				return err
			}
		}
		// No lifecycle scripts: the tree has none to run, and a
		// benchmark's tool install should not run any.
		cmd := exec.CommandContext(ctx, "npm", "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund",
			"--loglevel=error", "--omit-lockfile-registry-resolved")
		cmd.Dir = out
		if o, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci (verdaccio %s): %w: %s", VerdaccioVersion, err, bytes.TrimSpace(o))
		}
		return nil
	})
	if err != nil {
		testtools.Unavailable(t, fmt.Sprintf("cannot install verdaccio %s from the npm registry: %v", VerdaccioVersion, err))
	}
	p := filepath.Join(dir, "node_modules", "verdaccio", "bin", "verdaccio")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("verdaccio: installed tree lacks its command: %v", err)
	}
	built[key] = p
	return p
}

// VerdaccioServer is a running Verdaccio proxying one uplink.
type VerdaccioServer struct {
	URL     string // http://127.0.0.1:<port>/
	Storage string
	proc    *serverProc
	logs    *lockedBuffer
}

// Stop stops the server (idempotent; also done when the test ends).
func (v *VerdaccioServer) Stop() {
	if v.proc != nil {
		v.proc.stop()
		v.proc = nil
	}
}

// StartVerdaccio runs Verdaccio on a free loopback port with its storage
// in a new temporary directory and one uplink, uplinkURL, for every
// package (scoped or not): reads need no credentials, packuments are
// revalidated with the uplink after maxAge, tarballs are cached. It
// returns once Verdaccio answers its ping; it is stopped when the test
// ends.
func StartVerdaccio(t testing.TB, uplinkURL string, maxAge time.Duration) *VerdaccioServer {
	t.Helper()
	bin := Verdaccio(t)
	dir := t.TempDir()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	v := &VerdaccioServer{URL: "http://" + addr + "/", Storage: filepath.Join(dir, "storage"), logs: &lockedBuffer{}}
	// JSON-quoted strings are valid YAML scalars, whatever the path holds.
	q := strconv.Quote
	cfg := strings.Join([]string{
		"storage: " + q(v.Storage),
		"auth:",
		"  htpasswd:",
		"    file: " + q(filepath.Join(dir, "htpasswd")),
		"    max_users: -1",
		"uplinks:",
		"  upstream:",
		"    url: " + q(strings.TrimSuffix(uplinkURL, "/")+"/"),
		"    maxage: " + q(strconv.Itoa(int(maxAge/time.Second))+"s"),
		"    timeout: 60s",
		"    cache: true",
		"packages:",
		"  '@*/*':",
		"    access: $all",
		"    publish: $authenticated",
		"    proxy: upstream",
		"  '**':",
		"    access: $all",
		"    publish: $authenticated",
		"    proxy: upstream",
		"web:",
		"  enable: false",
		"max_body_size: 100mb",
		"server:",
		"  keepAliveTimeout: 60",
		"log:",
		"  type: stdout",
		"  format: json",
		"  level: warn",
		"",
	}, "\n")
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", bin, "--config", cfgPath, "--listen", addr)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_ENV=production")
	cmd.Stdout, cmd.Stderr = v.logs, v.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("verdaccio: start: %v", err)
	}
	v.proc = &serverProc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(v.proc.exited)
	}()
	t.Cleanup(v.Stop)
	exited := v.proc.exited
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			t.Fatalf("verdaccio exited while starting:\n%s", v.logs.tail())
		default:
		}
		resp, err := http.Get(v.URL + "-/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return v
			}
		}
		if time.Now().After(deadline) {
			v.Stop()
			t.Fatalf("verdaccio did not answer its ping within a minute (last: %v):\n%s", err, v.logs.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Logs returns the end of Verdaccio's output.
func (v *VerdaccioServer) Logs() string { return v.logs.tail() }
