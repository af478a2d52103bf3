package ocitools

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// fake-gcs-server is the GCS API server of the object-storage tests (the
// JSON API, compose and rewrite included), in memory.
const (
	FakeGCSPackage = "github.com/fsouza/fake-gcs-server"
	FakeGCSVersion = "v1.56.1"
)

// FakeGCS returns the path of the fake-gcs-server binary.
func FakeGCS(t testing.TB) string {
	return tool(t, "fake-gcs-server", FakeGCSVersion, installer(FakeGCSPackage, FakeGCSVersion))
}

// GCSServer is a running fake-gcs-server; clients reach it by setting
// STORAGE_EMULATOR_HOST to Host (gocloud's gs:// opener and the GCS client
// library both honour it).
type GCSServer struct {
	Host string // 127.0.0.1:<port>
}

// SetEnv points this process's GCS clients at the server (t.Setenv: the
// test cannot be parallel).
func (s *GCSServer) SetEnv(t testing.TB) { t.Setenv("STORAGE_EMULATOR_HOST", s.Host) }

// StartGCS runs fake-gcs-server in memory on a free loopback port until
// the test ends, reached through a CountingProxy (Host is the proxy's
// address): the server routes requests by their Host header, so the
// address clients use must be its public host.
func StartGCS(t testing.TB) (*GCSServer, *CountingProxy) {
	t.Helper()
	bin := FakeGCS(t)
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ports[0])
	proxy := NewCountingProxy(t, "127.0.0.1:"+port)
	s := &GCSServer{Host: proxy.Addr}
	cmd := exec.Command(bin, "-backend", "memory", "-scheme", "http", "-host", "127.0.0.1", "-port", port,
		"-public-host", s.Host, "-external-url", "http://"+s.Host, "-log-level", "warn")
	cmd.Dir = t.TempDir()
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("fake-gcs-server: start: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			t.Fatalf("fake-gcs-server exited while starting:\n%s", logs.tail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Host+"/storage/v1/b", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, proxy
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake-gcs-server not ready after a minute:\n%s", logs.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
