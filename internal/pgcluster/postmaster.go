package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// pidFile is what we need from <data>/postmaster.pid (see PostgreSQL's
// miscadmin.h: line 1 pid, 4 port, 5 socket directory).
type pidFile struct {
	pid       int
	port      string
	socketDir string
}

func readPidFile(dataDir string) (pidFile, error) {
	return readLockFile(filepath.Join(dataDir, "postmaster.pid"))
}

// readLockFile parses a postmaster.pid or socket lock file: both start
// with the owner's pid.
func readLockFile(path string) (pidFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return pidFile{}, err
	}
	lines := strings.Split(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		// A torn or garbage file is as stale as one naming a dead pid.
		return pidFile{pid: -1}, nil
	}
	pf := pidFile{pid: pid}
	if len(lines) > 4 {
		pf.port = strings.TrimSpace(lines[3])
		pf.socketDir = strings.TrimSpace(lines[4])
	}
	return pf, nil
}

// procAvailable reports whether /proc can tell us what a process is; without
// it we cannot tell a postmaster from an unrelated process reusing its pid.
func procAvailable() bool {
	_, err := os.Stat("/proc/self/cwd")
	return err == nil
}

// isPostmasterOf reports whether pid is a live (not zombie) process whose
// working directory is dataDir: the postmaster chdirs into its data
// directory, so this tells it apart from any unrelated process that got the
// pid after a crash. Only meaningful when procAvailable().
func isPostmasterOf(pid int, dataDir string) bool {
	if pid <= 0 || processGone(pid) {
		return false
	}
	return cwdOf(pid) == resolve(dataDir)
}

// processGone reports whether pid no longer runs. A zombie counts as gone:
// a SIGKILLed postmaster whose parent never reaps it still has a pid.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		// Without /proc, kill(0) succeeding is all we know; with it, a
		// missing entry means the process just exited.
		return procAvailable()
	}
	// Format: "pid (comm) state ..."; comm may contain spaces and parens.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

func cwdOf(pid int) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return ""
	}
	return p
}

func resolve(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// serverProcesses lists live processes running in dataDir: the postmaster
// and, after the postmaster was killed, its orphaned children. Those still
// hold the old shared memory segment, and a new postmaster refuses to start
// until they are gone.
func serverProcesses(dataDir string) []int {
	want := resolve(dataDir)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cwdOf(pid) == want && !processGone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killServerProcesses waits up to grace for the processes running in
// dataDir to exit by themselves (orphaned backends notice the postmaster's
// death within milliseconds), then SIGKILLs what is left and waits again.
func killServerProcesses(dataDir string, grace time.Duration) error {
	if waitNoServerProcesses(dataDir, grace) {
		return nil
	}
	for _, pid := range serverProcesses(dataDir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if waitNoServerProcesses(dataDir, 5*time.Second) {
		return nil
	}
	return fmt.Errorf("processes %v still run in %s after SIGKILL", serverProcesses(dataDir), dataDir)
}

func waitNoServerProcesses(dataDir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if len(serverProcesses(dataDir)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops, without waiting for clients or a checkpoint, any PostgreSQL
// server running for the cluster in dir (same meaning as Options.Dir). It is
// for cleaning up after a process that died without calling Stop, such as a
// test binary killed by -timeout; the next start runs crash recovery.
// It does nothing when no server runs.
func Kill(dir string) error {
	dataDir := filepath.Join(dir, "data")
	pf, err := readPidFile(dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read postmaster.pid: %w", err)
	}
	if !procAvailable() {
		return errors.New("kill cluster: /proc is not available to identify the postmaster")
	}
	if isPostmasterOf(pf.pid, dataDir) {
		// SIGQUIT is PostgreSQL's "immediate shutdown".
		_ = syscall.Kill(pf.pid, syscall.SIGQUIT)
	}
	return killServerProcesses(dataDir, 5*time.Second)
}
