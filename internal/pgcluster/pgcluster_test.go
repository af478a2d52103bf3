package pgcluster

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func testOptions(t *testing.T, fast bool) Options {
	return Options{
		Dir:    filepath.Join(t.TempDir(), "postgres"),
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil)),
		Fast:   fast,
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func start(t *testing.T, opts Options) *Cluster {
	t.Helper()
	begin := time.Now()
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("Start took %v (created=%v adopted=%v)", time.Since(begin), c.Created(), c.Adopted())
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("Stop at cleanup: %v", err)
		}
	})
	return c
}

func query(t *testing.T, c *Cluster, sql string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL(Database))
	if err != nil {
		t.Fatalf("connect %s: %v", c.URL(Database), err)
	}
	defer conn.Close(ctx)
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func execSQL(t *testing.T, c *Cluster, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL(Database))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	opts := testOptions(t, true)
	c := start(t, opts)
	if !c.Created() || c.Adopted() {
		t.Fatalf("first start: created=%v adopted=%v, want true false", c.Created(), c.Adopted())
	}
	if got := query(t, c, "SELECT current_setting('listen_addresses')"); got != "" {
		t.Errorf("listen_addresses = %q, want empty (unix socket only)", got)
	}
	if got := query(t, c, "SELECT current_setting('fsync')"); got != "off" {
		t.Errorf("fsync = %q with Fast, want off", got)
	}
	if got := query(t, c, "SELECT current_setting('autovacuum')"); got != "on" {
		t.Errorf("autovacuum = %q by default, want on", got)
	}
	if got := query(t, c, "SELECT current_setting('autovacuum_naptime')"); got != "10s" {
		t.Errorf("autovacuum_naptime = %q by default, want 10s", got)
	}
	execSQL(t, c, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')")
	assertOwnedByClusterUser(t, c)
	for range 2 { // idempotent
		if err := c.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(c.DataDir(), "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid still present after Stop: %v", err)
	}

	opts.NoAutovacuum = true // settings are rewritten on every start
	opts.MaxConnections = 123
	c2 := start(t, opts)
	if c2.Created() || c2.Adopted() {
		t.Fatalf("restart: created=%v adopted=%v, want false false", c2.Created(), c2.Adopted())
	}
	if got := query(t, c2, "SELECT current_setting('autovacuum')"); got != "off" {
		t.Errorf("autovacuum = %q with NoAutovacuum, want off", got)
	}
	if got := query(t, c2, "SELECT current_setting('max_connections')"); got != "123" {
		t.Errorf("max_connections = %q with MaxConnections 123", got)
	}
	if got := query(t, c2, "SELECT v FROM kept"); got != "hello" {
		t.Fatalf("row after restart = %q", got)
	}
}

func assertOwnedByClusterUser(t *testing.T, c *Cluster) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	st, err := os.Stat(c.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; int(uid) != c.user.uid || uid == 0 {
		t.Errorf("data dir owned by uid %d, want postgres (%d)", uid, c.user.uid)
	}
}

// A second Start on a running cluster (our process was killed without
// Stop) adopts the running postmaster; Stop on it then stops the server.
func TestAdoptRunning(t *testing.T) {
	t.Parallel()
	opts := testOptions(t, true)
	c1 := start(t, opts)
	pid1 := pid(t, c1)
	c2 := start(t, opts)
	if !c2.Adopted() || pid(t, c2) != pid1 {
		t.Fatalf("second start: adopted=%v pid=%d, want adoption of pid %d", c2.Adopted(), pid(t, c2), pid1)
	}
	if err := c2.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid1)
}

func pid(t *testing.T, c *Cluster) int {
	t.Helper()
	p, err := c.PID()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SIGKILL of the postmaster leaves postmaster.pid, orphaned backends and
// possibly a zombie; the next Start must recover (durably: not Fast).
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	opts := testOptions(t, false)
	c := start(t, opts)
	execSQL(t, c, "CREATE TABLE survived (v int); INSERT INTO survived VALUES (42)")
	// An idle client keeps a backend process around as an orphan.
	conn, err := pgx.Connect(context.Background(), c.URL(Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	p := pid(t, c)
	if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)

	c2 := start(t, opts)
	if c2.Adopted() || pid(t, c2) == p {
		t.Fatalf("restart after crash adopted the dead postmaster")
	}
	if got := query(t, c2, "SELECT v::text FROM survived"); got != "42" {
		t.Fatalf("row after crash recovery = %q", got)
	}
}

func TestStalePidFile(t *testing.T) {
	t.Parallel()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for name, bogus := range map[string]int{
		"dead pid":         dead.Process.Pid,
		"unrelated live":   os.Getpid(), // alive, but not a postmaster: postgres alone would refuse to start
		"garbage contents": -1,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := testOptions(t, true)
			c := start(t, opts)
			if err := c.Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
			writeBogusPidFile(t, c, bogus)
			c2 := start(t, opts)
			if c2.Adopted() {
				t.Fatal("adopted a bogus postmaster")
			}
			if got := query(t, c2, "SELECT 'up'"); got != "up" {
				t.Fatal(got)
			}
		})
	}
}

func writeBogusPidFile(t *testing.T, c *Cluster, pid int) {
	t.Helper()
	first := strconv.Itoa(pid)
	if pid < 0 {
		first = "not-a-pid"
	}
	content := strings.Join([]string{first, c.DataDir(), "1700000000", port, c.SocketDir(), "", "0 0", "ready   ", ""}, "\n")
	if err := c.user.writeFile(filepath.Join(c.DataDir(), "postmaster.pid"), []byte(content)); err != nil {
		t.Fatal(err)
	}
}

func TestMissingBinaries(t *testing.T) {
	t.Parallel()
	empty := ""
	opts := testOptions(t, true)
	opts.searchPath = &empty
	opts.libGlob = filepath.Join(t.TempDir(), "none", "*", "bin")
	_, err := Start(context.Background(), opts)
	if err == nil {
		t.Fatal("Start succeeded without binaries")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "apt-get install -y postgresql") {
		t.Fatalf("want a one-line error with install hint, got %q", msg)
	}
}

// Debian installs binaries under /usr/lib/postgresql/<v>/bin, off PATH;
// the highest version wins (numerically: 15 > 9.6).
func TestFindBinariesInLibDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "13"} {
		dir := filepath.Join(root, v, "bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"initdb", "pg_ctl"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := findBinaries("", filepath.Join(root, "*", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "15", "bin", "pg_ctl"); b.pgctl != want {
		t.Fatalf("pg_ctl = %s, want %s", b.pgctl, want)
	}
}

// A Dir too long for a unix socket path puts the socket in the temp dir.
func TestLongDirUsesTempSocketDir(t *testing.T) {
	t.Parallel()
	opts := testOptions(t, true)
	opts.Dir = filepath.Join(opts.Dir, strings.Repeat("d", 100))
	t.Cleanup(func() { _ = os.RemoveAll(socketDirFor(opts.Dir)) }) // runs after Stop
	c := start(t, opts)
	if strings.HasPrefix(c.SocketDir(), c.Dir()) {
		t.Fatalf("socket dir %s is under the long Dir", c.SocketDir())
	}
	if got := query(t, c, "SELECT current_database()"); got != Database {
		t.Fatal(got)
	}
}
