package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// readyTimeout bounds one instance's start: two busy cores and a cold
// pool can make the first /-/ready slow.
const readyTimeout = 3 * time.Minute

// stopGrace is how long Stop waits after SIGTERM before SIGKILL; the
// instances run with a short --shutdown-timeout, so it is rarely reached.
const stopGrace = 30 * time.Second

// Instance is one serve process of the cluster. Its address stays the
// same across restarts, so URL can be kept.
type Instance struct {
	Index int
	Addr  string // 127.0.0.1:<port>
	URL   string // http://Addr

	bin, dataDir, logFile string
	env                   []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

func newInstance(i int, bin, dataDir, logFile string, env []string) (*Instance, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return &Instance{Index: i, Addr: addr, URL: "http://" + addr, bin: bin, dataDir: dataDir, logFile: logFile, env: env}, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Running reports whether the process is alive (started and not exited).
func (in *Instance) Running() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.runningLocked()
}

func (in *Instance) runningLocked() bool {
	if in.cmd == nil {
		return false
	}
	select {
	case <-in.exited:
		return false
	default:
		return true
	}
}

// start launches the process and waits until its /-/ready answers 200.
func (in *Instance) start(ctx context.Context) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.runningLocked() {
		return fmt.Errorf("instance %d already runs", in.Index)
	}
	log, err := os.OpenFile(in.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("instance %d: open log: %w", in.Index, err)
	}
	in.starts++
	fmt.Fprintf(log, "=== cluster: start %d of instance %d at %s ===\n", in.starts, in.Index, time.Now().UTC().Format(time.RFC3339Nano))
	cmd := exec.Command(in.bin, "serve", "--listen", in.Addr, "--data-dir", in.dataDir, "--shutdown-timeout", "5s")
	cmd.Env = in.env
	cmd.Stdout, cmd.Stderr = log, log
	if err := ocitools.StartChild(cmd); err != nil {
		log.Close()
		return fmt.Errorf("instance %d: start: %w", in.Index, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(exited)
	}()
	in.cmd, in.exited = cmd, exited
	if err := waitReady(ctx, in.URL, exited); err != nil {
		return fmt.Errorf("instance %d: %w; log:\n%s", in.Index, err, tailFile(in.logFile, 60))
	}
	return nil
}

// kill sends SIGKILL to the process group and waits for the exit.
func (in *Instance) kill() error {
	return in.signal(syscall.SIGKILL, 0)
}

// stop sends SIGTERM, then SIGKILL after stopGrace.
func (in *Instance) stop() error {
	return in.signal(syscall.SIGTERM, stopGrace)
}

func (in *Instance) signal(sig syscall.Signal, grace time.Duration) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.runningLocked() {
		return nil
	}
	pid := in.cmd.Process.Pid
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("instance %d: signal %v: %w", in.Index, sig, err)
	}
	if sig != syscall.SIGKILL {
		select {
		case <-in.exited:
			return nil
		case <-time.After(grace):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	<-in.exited
	return nil
}

// waitReady polls url/-/ready until it answers 200, the process exits or
// ctx ends.
func waitReady(ctx context.Context, base string, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		ok, last := probe(ctx, client, base+"/-/ready")
		if ok {
			return nil
		}
		select {
		case <-exited:
			return errors.New("exited while starting")
		case <-ctx.Done():
			return fmt.Errorf("not ready (last: %s): %w", last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probe GETs url and reports whether it answered 200, and if not why.
func probe(ctx context.Context, client *http.Client, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}

// tailFile returns the last n lines of path.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
