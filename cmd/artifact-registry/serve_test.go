package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/servebuild"
)

// These tests run the real binary the way `make run` does: embedded
// PostgreSQL under the data dir, start, ready, Ctrl-C, start again. The
// limits are generous on purpose (CI machines are shared); the measured
// start-up times are logged, not asserted.

// buildBinary returns the serve binary, linked once for all the tests of
// this package (TestMain removes it).
func buildBinary(t *testing.T) string {
	t.Helper()
	bin, err := servebuild.Shared()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type server struct {
	cmd  *exec.Cmd
	addr string
	logs *syncBuffer
}

// syncBuffer is the server's output: the process writes it while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startServer(t *testing.T, bin, dataDir string) *server {
	t.Helper()
	s := &server{addr: freeAddr(t), logs: &syncBuffer{}}
	s.cmd = exec.Command(bin, "serve", "--listen", s.addr, "--data-dir", dataDir)
	s.cmd.Env = append(os.Environ(), "DATABASE_URL=", "ARTIFACT_REGISTRY_ADMIN_TOKEN=")
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitReady polls /-/ready and returns how long it took.
func (s *server) waitReady(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < limit {
		resp, err := http.Get("http://" + s.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not ready after %s; logs:\n%s", limit, s.logs)
	return 0
}

func (s *server) interrupt(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server exited with %v; logs:\n%s", err, s.logs)
		}
	case <-time.After(12 * time.Minute):
		_ = s.cmd.Process.Kill()
		t.Fatalf("server did not stop on SIGINT; logs:\n%s", s.logs)
	}
}

// postmasterRunning reports whether the cluster under dataDir still runs.
func postmasterRunning(dataDir string) bool {
	b, err := os.ReadFile(filepath.Join(dataDir, "postgres", "data", "postmaster.pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// One data dir goes through the whole life cycle so the (slow, 64-partition)
// migrations run once: first start, Ctrl-C, restart, crash, restart.
func TestServeLifecycle(t *testing.T) {
	bin := buildBinary(t)
	dataDir := filepath.Join(t.TempDir(), "data")

	first := startServer(t, bin, dataDir)
	t.Logf("first start (initdb + migrations): ready in %s", first.waitReady(t, 10*time.Minute))
	token := checkGeneratedAdminToken(t, bin, dataDir, first)
	rootKey := checkGeneratedRootKey(t, dataDir, first)
	first.interrupt(t)
	checkFootprint(t, dataDir)
	if postmasterRunning(dataDir) {
		t.Fatal("PostgreSQL still running after Ctrl-C")
	}

	second := startServer(t, bin, dataDir)
	t.Logf("second start (reuse): ready in %s", second.waitReady(t, 2*time.Minute))
	if b, err := os.ReadFile(filepath.Join(dataDir, "root-key")); err != nil || string(b) != rootKey {
		t.Fatalf("a restart changed the generated root key: %v", err)
	}
	if strings.Contains(second.logs.String(), "generated the root key") {
		t.Fatalf("the second start says it generated a root key:\n%s", second.logs)
	}
	for _, path := range []string{"/-/health", "/metrics"} {
		resp, err := http.Get("http://" + second.addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d", path, resp.StatusCode)
		}
	}
	// The UI's session endpoint is mounted (and not the UI's catch-all).
	resp, err := http.Get("http://" + second.addr + "/-/session")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"signedIn":false`) {
		t.Fatalf("GET /-/session = %d %s", resp.StatusCode, body)
	}
	// A one-shot command on the same data dir adopts the server's cluster
	// and must leave it running for the server.
	status := exec.Command(bin, "migrate", "--data-dir", dataDir, "status")
	status.Env = append(os.Environ(), "DATABASE_URL=")
	out, err := status.CombinedOutput()
	if err != nil {
		t.Fatalf("migrate status next to a running server: %v\n%s", err, out)
	}
	if !postmasterRunning(dataDir) {
		t.Fatal("a one-shot command stopped the running server's PostgreSQL")
	}
	second.waitReady(t, 10*time.Second)
	_ = second.cmd.Process.Kill() // SIGKILL: no shutdown, PostgreSQL left behind
	_ = second.cmd.Wait()

	third := startServer(t, bin, dataDir)
	t.Logf("start after crash: ready in %s", third.waitReady(t, 2*time.Minute))
	checkAdminTokenRotation(t, bin, dataDir, third, token)
	third.interrupt(t)
	if postmasterRunning(dataDir) {
		t.Fatal("PostgreSQL still running after Ctrl-C")
	}
}

// adminToken runs `artifact-registry admin-token` with args on dataDir.
func adminToken(t *testing.T, bin, dataDir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"admin-token", "--data-dir", dataDir}, args...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "ARTIFACT_REGISTRY_ADMIN_TOKEN=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("admin-token %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// createNamespace calls an admin-only mutation with token and reports
// whether it was authorized.
func createNamespace(t *testing.T, addr, token, slug string) bool {
	t.Helper()
	q := `{"query":"mutation { createNamespace(input: {slug: \"` + slug + `\"}) { namespace { slug } } }"}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/graphql", strings.NewReader(q))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"slug":"`+slug+`"`):
		return true
	case strings.Contains(string(body), "UNAUTHENTICATED"):
		return false
	}
	t.Fatalf("createNamespace = %d %s", resp.StatusCode, body)
	return false
}

// On first start without a configured token, serve generates one under
// the data directory (owner-only), says where it is without printing it,
// and accepts it.
func checkGeneratedAdminToken(t *testing.T, bin, dataDir string, s *server) string {
	t.Helper()
	path := filepath.Join(dataDir, "admin-token")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("generated token file: %v (mode %v); want 0600", err, st.Mode().Perm())
	}
	token := adminToken(t, bin, dataDir)
	if !strings.Contains(s.logs.String(), "generated an admin token") || !strings.Contains(s.logs.String(), path) {
		t.Fatalf("the log does not say where the generated token is; logs:\n%s", s.logs)
	}
	if strings.Contains(s.logs.String(), token) {
		t.Fatal("the generated admin token was logged")
	}
	if !createNamespace(t, s.addr, token, "first") {
		t.Fatal("the generated admin token was refused")
	}
	return token
}

// On first start without --root-key-url, serve generates the root key of
// upstream credentials under the data directory (owner-only) and says so
// once, with the file and the key's fingerprint, never the key.
func checkGeneratedRootKey(t *testing.T, dataDir string, s *server) string {
	t.Helper()
	path := filepath.Join(dataDir, "root-key")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("generated root key file: %v (mode %v); want 0600", err, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	logs := s.logs.String()
	if strings.Count(logs, "generated the root key") != 1 || !strings.Contains(logs, path) || !strings.Contains(logs, "base64key://sha256:") {
		t.Fatalf("the log does not say once where the generated root key is; logs:\n%s", logs)
	}
	if key := strings.TrimSpace(string(b)); len(key) != 44 || strings.Contains(logs, key) {
		t.Fatal("the generated root key was logged (or is not 32 bytes of base64)")
	}
	return string(b)
}

// A later start reuses the token; a rotation takes effect on the running
// server (within its one-second recheck) and ends the old token.
func checkAdminTokenRotation(t *testing.T, bin, dataDir string, s *server, token string) {
	t.Helper()
	if got := adminToken(t, bin, dataDir); got != token {
		t.Fatal("a restart changed the generated admin token")
	}
	if !createNamespace(t, s.addr, token, "second") {
		t.Fatal("the generated admin token was refused after a restart")
	}
	rotated := adminToken(t, bin, dataDir, "--rotate")
	if rotated == token {
		t.Fatal("--rotate printed the old token")
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; createNamespace(t, s.addr, token, "stale"+strconv.Itoa(i)); i++ {
		if time.Now().After(deadline) {
			t.Fatal("the old admin token still works 30s after a rotation")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !createNamespace(t, s.addr, rotated, "third") {
		t.Fatal("the rotated admin token was refused")
	}
}

// The first start's WAL burst is given back: the embedded cluster keeps
// 32 MB of WAL (two 16 MB segments, three during a checkpoint).
func checkFootprint(t *testing.T, dataDir string) {
	t.Helper()
	wal, total := dirSize(t, filepath.Join(dataDir, "postgres", "data", "pg_wal")), dirSize(t, dataDir)
	t.Logf("footprint after the first start: %d MB, WAL %d MB", total>>20, wal>>20)
	if wal > 64<<20 {
		t.Fatalf("pg_wal holds %d MB after the first start; want at most 64 MB", wal>>20)
	}
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
