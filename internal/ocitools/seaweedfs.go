package ocitools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
)

// SeaweedFS is the S3-compatible server of the object-storage tests: its
// weed binary, run as `weed mini`, serves a real S3 API (multipart uploads
// with UploadPartCopy included) on loopback.
const (
	SeaweedFSModule  = "github.com/seaweedfs/seaweedfs"
	SeaweedFSVersion = "v0.0.0-20261109003541-7506e5f91cd6"
)

// weedBuildTimeout: weed is a large program (a cold build takes about
// twenty minutes on two busy cores), so scripts/ensure-test-tools builds it
// before the tests run (EnsureWeed) instead of a test paying for it inside
// its package's timeout.
const weedBuildTimeout = 60 * time.Minute

// Weed returns the path of SeaweedFS's weed binary, building it when the
// cache lacks it (the test fails when CI=true and it cannot be built, and
// is skipped otherwise).
func Weed(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := "weed@" + SeaweedFSVersion
	if p, ok := built[key]; ok {
		return p
	}
	p, err := EnsureWeed()
	if err != nil {
		testtools.Unavailable(t, fmt.Sprintf("cannot fetch/build weed %s from the Go module proxy: %v", SeaweedFSVersion, err))
	}
	built[key] = p
	return p
}

// EnsureWeed builds SeaweedFS's weed binary into the tool cache unless it
// is there, and returns its path. The module's go.mod has replace
// directives, so `go install pkg@version` refuses it: it is built inside
// the downloaded module, like the conformance suite.
func EnsureWeed() (string, error) {
	return ensure("weed", SeaweedFSVersion, weedBuildTimeout, func(ctx context.Context, out string) error {
		var info struct{ Dir, Error string }
		o, err := goCmd(ctx, "", "mod", "download", "-json", SeaweedFSModule+"@"+SeaweedFSVersion)
		if jerr := json.Unmarshal(o, &info); jerr != nil || info.Dir == "" {
			return fmt.Errorf("go mod download %s@%s: %v %s %s", SeaweedFSModule, SeaweedFSVersion, err, info.Error, o)
		}
		_, err = goCmd(ctx, info.Dir, "build", "-o", out, "./weed")
		return err
	})
}

// S3Server is a running SeaweedFS S3 gateway with one bucket and one
// access key. Clients sign with AccessKey/SecretKey (region us-east-1,
// path-style addressing).
type S3Server struct {
	Endpoint  string // http://127.0.0.1:<port>
	Bucket    string
	AccessKey string
	SecretKey string
}

// URL is the gocloud s3:// URL of the server's bucket.
func (s *S3Server) URL() string {
	return "s3://" + s.Bucket + "?endpoint=" + s.Endpoint + "&region=us-east-1&use_path_style=true"
}

// SetEnv points the AWS SDK's default credential chain of this process at
// the server's key, and away from any shared AWS configuration (t.Setenv:
// restored after the test; the test cannot be parallel).
func (s *S3Server) SetEnv(t testing.TB) {
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// StartS3 runs `weed mini` with its data in a temporary directory, every
// listener on a free loopback port and the extras (WebDAV, admin UI,
// Iceberg and Lance endpoints, telemetry) off, creates bucket and waits
// until it serves. The server is stopped when the test ends.
func StartS3(t testing.TB, bucket string) *S3Server {
	t.Helper()
	weed := Weed(t)
	s, w, err := launchS3(weed, t.TempDir(), bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stop)
	return s
}

var shared struct {
	once sync.Once
	s    *S3Server
	err  error
}

// SharedS3 returns the S3 server of this test process, started on first
// use with one bucket ("shared"), for tests that each create their own
// bucket (the key is an admin identity) and would otherwise pay a server
// start each. It lives until the process exits: the kernel kills it then
// (PR_SET_PDEATHSIG, from a thread that never exits), and its data
// directory, left behind, is removed by the next process that starts one.
func SharedS3(t testing.TB) *S3Server {
	t.Helper()
	weed := Weed(t)
	shared.once.Do(func() {
		removeStaleSharedDirs()
		dir, err := os.MkdirTemp("", sharedDirPrefix)
		if err != nil {
			shared.err = err
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			shared.err = err
			return
		}
		shared.s, _, shared.err = launchS3(weed, dir, "shared", startOnLockedThread)
	})
	if shared.err != nil {
		t.Fatalf("seaweedfs: shared server: %v", shared.err)
	}
	return shared.s
}

const sharedDirPrefix = "artifact-registry-s3-"

// removeStaleSharedDirs deletes the data directories of shared servers
// whose test process is gone.
func removeStaleSharedDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), sharedDirPrefix+"*"))
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "owner.pid"))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(d)
		}
	}
}

// startOnLockedThread starts cmd, set to die with its parent thread
// (Pdeathsig), from a goroutine locked to its thread for the rest of the
// process: the thread never exits, so the server dies with the process.
func startOnLockedThread(cmd *exec.Cmd) error {
	setPdeathsig(cmd)
	errc := make(chan error)
	go func() {
		runtime.LockOSThread()
		errc <- cmd.Start()
		select {}
	}()
	return <-errc
}

type weedProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func (w *weedProc) stop() {
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.exited
	}
}

// launchS3 starts weed mini in dir and waits until it serves bucket; start
// starts the command (nil: cmd.Start). On error the process is stopped.
func launchS3(weed, dir, bucket string, start func(*exec.Cmd) error) (*S3Server, *weedProc, error) {
	ports, err := freePorts(12)
	if err != nil {
		return nil, nil, fmt.Errorf("seaweedfs: free ports: %w", err)
	}
	p := func(i int) string { return strconv.Itoa(ports[i]) }
	s := &S3Server{
		Endpoint:  "http://127.0.0.1:" + p(6),
		Bucket:    bucket,
		AccessKey: "artifactregistrytest",
		SecretKey: "artifact-registry-test-secret",
	}
	cmd := exec.Command(weed, "mini",
		"-dir="+dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port="+p(0), "-master.port.grpc="+p(1),
		"-volume.port="+p(2), "-volume.port.grpc="+p(3),
		"-filer.port="+p(4), "-filer.port.grpc="+p(5),
		"-s3.port="+p(6), "-s3.port.grpc="+p(7),
		"-admin.port="+p(8), "-admin.port.grpc="+p(9), "-admin.port.legacy=0",
		"-webdav.port="+p(10), "-metricsPort=0", "-debug.port="+p(11), "-s3.debug.port="+p(11),
		"-s3.port.iceberg=0", "-s3.port.lance=0",
		"-webdav=false", "-admin.ui=false", "-master.telemetry=false",
		"-bucket="+bucket,
	)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s.AccessKey, "AWS_SECRET_ACCESS_KEY="+s.SecretKey, "S3_BUCKET=")
	// Its own process group, so a stop reaches every child it may start.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(cmd); err != nil {
		return nil, nil, fmt.Errorf("seaweedfs: start: %w", err)
	}
	w := &weedProc{cmd: cmd, exited: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(io.TeeReader(out, logs))
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "All enabled components are running") {
				close(ready)
				signalled = true
			}
		}
		_ = cmd.Wait()
		close(w.exited)
	}()
	select {
	case <-ready:
		return s, w, nil
	case <-w.exited:
		return nil, nil, fmt.Errorf("seaweedfs exited while starting:\n%s", logs.tail())
	case <-time.After(2 * time.Minute):
		w.stop()
		return nil, nil, fmt.Errorf("seaweedfs not ready after 2 minutes:\n%s", logs.tail())
	}
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// lockedBuffer collects a server's output for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write keeps the last 64 KiB: a shared server runs for the whole process.
func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		l.b.Next(l.b.Len() - 32<<10)
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > 8000 {
		s = s[len(s)-8000:]
	}
	return s
}
