package ocitools

import (
	"bytes"
	"net"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// serverProc is a server process a test started in its own process group.
type serverProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// stop ends the server's process group: SIGTERM, then SIGKILL if it has
// not exited within 15 seconds.
func (p *serverProc) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

// spawner is the goroutine, locked to its OS thread for the rest of the
// process, that starts the servers set to die with their parent thread
// (Pdeathsig): that thread never exits, so a server dies with the test
// process, even one that ends without running its cleanups.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

// startWithPdeathsig starts cmd from the spawner thread, set to be killed
// when that thread, so the process, exits.
func startWithPdeathsig(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread()
			for r := range spawner.reqs {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	setPdeathsig(cmd)
	errc := make(chan error, 1)
	spawner.reqs <- spawnRequest{cmd: cmd, errc: errc}
	return <-errc
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

// Write keeps the last 64 KiB: a server may run for a long test.
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
