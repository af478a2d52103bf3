//go:build benchcompare

package benchcompare

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocibench"
	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/servebuild"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
)

// The registries under test. Each OCI one is reached at host with the
// same repository path; user and pass are empty when it needs none.
type ociTarget struct {
	col        string
	host       string
	user, pass string
}

func (o ociTarget) client() *ocibench.Client {
	return ocibench.New("http://"+o.host, o.user, o.pass)
}

type npmTarget struct {
	col      string
	registry string // ends with '/'
	auth     string // Authorization header value for publishing
	metrics  string // Prometheus endpoint (ours only), for the server's own time
}

type mavenTarget struct {
	col string
	url string // the repository's base URL, no trailing '/'
	// put stores one file of the repository's layout.
	put func(t testing.TB, path string, body []byte)
}

// repoRoot is the module's root (the package is internal/benchcompare).
func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// logBuffer keeps a server's output for a failure message.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		l.b.Next(l.b.Len() - 256<<10)
	}
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > 8000 {
		s = s[len(s)-8000:]
	}
	return s
}

// ours is our serve binary, built from this checkout, with its embedded
// PostgreSQL and file storage under dir.
type ours struct {
	addr  string
	token string
}

// startOurs builds and starts the serve binary, waits until it is ready
// and creates the namespace "bench" with one public repository per
// format ("oci", "npm", "maven").
func startOurs(t *testing.T, dir string) *ours {
	t.Helper()
	bin := filepath.Join(dir, "bin", "artifact-registry")
	if err := servebuild.Build(bin); err != nil {
		t.Fatal(err)
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		t.Fatal(err)
	}
	o := &ours{addr: freeAddr(t), token: hex.EncodeToString(tok)}
	logs := &logBuffer{}
	cmd := exec.Command(bin, "serve", "--listen", o.addr, "--data-dir", filepath.Join(dir, "data"),
		"--auth-failure-limit", "0", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "ARTIFACT_REGISTRY_ADMIN_TOKEN="+o.token)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// SIGINT: serve stops its PostgreSQL on the way out.
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	start := time.Now()
	for {
		resp, err := http.Get("http://" + o.addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("serve exited while starting:\n%s", logs)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > 20*time.Minute {
			t.Fatalf("serve not ready after 20 minutes:\n%s", logs)
		}
	}
	t.Logf("ours: ready in %s (initdb and migrations of a new data directory)", time.Since(start).Round(time.Second))
	o.graphql(t, `mutation { createNamespace(input: {slug: "bench"}) { namespace { slug } } }`)
	for _, r := range []struct{ name, format string }{{"oci", "OCI"}, {"npm", "NPM"}, {"maven", "MAVEN"}} {
		o.graphql(t, fmt.Sprintf(`mutation { createRepository(input: {namespace: "bench", name: %q, format: %s, visibility: PUBLIC}) { repository { name } } }`,
			r.name, r.format))
	}
	return o
}

func (o *ours) graphql(t testing.TB, query string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": query})
	req, _ := http.NewRequest(http.MethodPost, "http://"+o.addr+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+o.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct{ Errors []json.RawMessage }
	if err := json.Unmarshal(raw, &out); resp.StatusCode != http.StatusOK || err != nil || len(out.Errors) > 0 {
		t.Fatalf("graphql %s: %d %s", query, resp.StatusCode, raw)
	}
}

func (o *ours) oci() ociTarget {
	return ociTarget{col: Ours, host: o.addr, user: "bench", pass: o.token}
}

func (o *ours) npm() npmTarget {
	return npmTarget{col: Ours, registry: "http://" + o.addr + "/npm/bench/npm/", auth: "Bearer " + o.token,
		metrics: "http://" + o.addr + "/metrics"}
}

func (o *ours) maven() mavenTarget {
	base := "http://" + o.addr + "/maven/bench/maven"
	return mavenTarget{col: Ours, url: base, put: func(t testing.TB, path string, body []byte) {
		req, _ := http.NewRequest(http.MethodPut, base+"/"+path, bytes.NewReader(body))
		req.SetBasicAuth("bench", o.token)
		// A checksum sidecar is verified against the stored file: 200.
		doExpect(t, req, http.StatusCreated, http.StatusOK)
	}}
}

// requestSeconds sums the request-duration histogram of ours over the
// series of method whose route contains route: total seconds and count.
func requestSeconds(t testing.TB, metrics, method, route string) (sum float64, count float64) {
	t.Helper()
	resp, err := http.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || !strings.Contains(rest, `method="`+method+`"`) || !strings.Contains(rest, route) {
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		v, err := strconv.ParseFloat(rest[i+1:], 64)
		if err != nil {
			continue
		}
		switch name {
		case "artifact_registry_http_request_duration_seconds_sum":
			sum += v
		case "artifact_registry_http_request_duration_seconds_count":
			count += v
		}
	}
	return sum, count
}

// doExpect sends req and fails t unless the answer has one of the
// statuses want.
func doExpect(t testing.TB, req *http.Request, want ...int) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !slices.Contains(want, resp.StatusCode) {
		t.Fatalf("%s %s: %d, want %v: %s", req.Method, req.URL, resp.StatusCode, want, body)
	}
}

// startDistribution runs distribution v3 (ocitools.RegistryVersion) on
// filesystem storage under dir.
func startDistribution(t *testing.T, dir string) ociTarget {
	t.Helper()
	host, _ := legacytest.StartRegistry(t, dir)
	return ociTarget{col: Distribution, host: host}
}

// Zot is pinned like the other peers and built from the Go module proxy at
// run time; where the proxy refuses it the column says so.
const (
	ZotModule  = "zotregistry.dev/zot/v2"
	ZotVersion = "v2.1.15"
)

// startZot builds and runs zot on filesystem storage under dir, or says
// why it cannot.
func startZot(t *testing.T, dir string) (ociTarget, string) {
	t.Helper()
	tools, err := ocitools.Dir()
	if err != nil {
		return ociTarget{}, err.Error()
	}
	bin := filepath.Join(tools, "zot-"+ZotVersion)
	if _, err := os.Stat(bin); err != nil {
		if reason := buildZot(bin); reason != "" {
			return ociTarget{}, reason
		}
	}
	addr := freeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	cfg, _ := json.Marshal(map[string]any{
		"distSpecVersion": "1.1.1",
		"storage":         map[string]any{"rootDirectory": dir, "gc": false},
		"http":            map[string]any{"address": host, "port": port},
		"log":             map[string]any{"level": "error"},
	})
	cfgPath := filepath.Join(t.TempDir(), "zot.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return ociTarget{}, "start: " + err.Error()
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + addr + "/v2/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return ociTarget{col: Zot, host: addr}, ""
			}
		}
		select {
		case <-exited:
			return ociTarget{}, "exited while starting: " + firstLine(logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return ociTarget{}, "did not answer /v2/ within a minute"
}

// buildZot downloads zot's module and builds its command into bin; it
// returns the reason it could not, or "".
func buildZot(bin string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", ZotModule+"@"+ZotVersion)
	dl.Dir, dl.Env = os.TempDir(), env
	out, _ := dl.Output()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		reason := info.Error
		if reason == "" {
			reason = strings.TrimSpace(string(out))
		}
		return fmt.Sprintf("go mod download %s@%s: %s", ZotModule, ZotVersion, firstLine(reason))
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+".tmp", "./cmd/zot")
	build.Dir, build.Env = info.Dir, env
	if o, err := build.CombinedOutput(); err != nil {
		return fmt.Sprintf("go build zot %s: %v: %s", ZotVersion, err, firstLine(string(o)))
	}
	if err := os.Rename(bin+".tmp", bin); err != nil {
		return err.Error()
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// startVerdaccio runs Verdaccio (ocitools.VerdaccioVersion) as a hosted
// npm registry with one user allowed to publish. Its uplink is a local
// server that has nothing, so every package comes from its own storage.
func startVerdaccio(t *testing.T) npmTarget {
	t.Helper()
	nothing := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = nothing.Serve(ln) }()
	t.Cleanup(func() { nothing.Close() })
	v := ocitools.StartVerdaccio(t, "http://"+ln.Addr().String()+"/", time.Hour)
	// Verdaccio's htpasswd plugin rereads the file when it changes; the
	// {SHA} form is one it verifies.
	sum := sha1.Sum([]byte(benchPassword))
	line := "bench:{SHA}" + base64.StdEncoding.EncodeToString(sum[:]) + "\n"
	if err := os.WriteFile(filepath.Join(filepath.Dir(v.Storage), "htpasswd"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	return npmTarget{col: Peer, registry: v.URL,
		auth: "Basic " + base64.StdEncoding.EncodeToString([]byte("bench:"+benchPassword))}
}

const benchPassword = "bench-password"

// startStaticMaven serves dir, in the Maven repository layout, with Go's
// http.FileServer: the floor of what serving those files can cost.
func startStaticMaven(t *testing.T, dir string) mavenTarget {
	t.Helper()
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return mavenTarget{col: Peer, url: "http://" + ln.Addr().String(), put: func(t testing.TB, path string, body []byte) {
		p := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}}
}
