package npm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ptySession runs a command on a pseudo-terminal, so that npm's prompts
// (which need a TTY for the password) can be answered like a user would.
type ptySession struct {
	t   testing.TB
	cmd *exec.Cmd
	ptm *os.File
	mu  sync.Mutex
	out bytes.Buffer
	eof chan struct{}
}

func startPTY(t testing.TB, dir string, env []string, name string, args ...string) *ptySession {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pts: %v", err)
	}
	s := &ptySession{t: t, ptm: ptm, eof: make(chan struct{})}
	s.cmd = exec.Command(name, args...)
	s.cmd.Dir, s.cmd.Env = dir, env
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = pts, pts, pts
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	pts.Close()
	go func() {
		defer close(s.eof)
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { ptm.Close(); _ = s.cmd.Process.Kill() })
	return s
}

// expect waits until the output (since the last expect) contains want.
func (s *ptySession) expect(want string) {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s.mu.Lock()
		got := s.out.String()
		if i := strings.Index(got, want); i >= 0 {
			rest := got[i+len(want):]
			s.out.Reset()
			s.out.WriteString(rest)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		select {
		case <-s.eof:
			s.t.Fatalf("waiting for %q, the program ended; output:\n%s", want, got)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waiting for %q; output:\n%s", want, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *ptySession) send(line string) {
	s.t.Helper()
	if _, err := s.ptm.Write([]byte(line + "\r")); err != nil {
		s.t.Fatal(err)
	}
}

// wait waits for the program to end and returns its error and output.
func (s *ptySession) wait() (string, error) {
	err := s.cmd.Wait()
	select {
	case <-s.eof:
	case <-time.After(5 * time.Second):
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String(), err
}
