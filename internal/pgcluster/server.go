package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// mkdirPrivate creates a 0700 directory. Missing parents get 0711 so the
// postgres account can traverse them without being able to list them.
func mkdirPrivate(path string, parents bool) error {
	if parents {
		if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
	}
	err := os.Mkdir(path, 0o700)
	if err == nil || !errors.Is(err, os.ErrExist) {
		return wrap(err, "create "+path)
	}
	st, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", path)
	}
	return nil
}

func wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (c *Cluster) prepareDirs() error {
	logDir := filepath.Dir(c.logFile)
	if err := mkdirPrivate(logDir, false); err != nil {
		return err
	}
	if err := c.prepareSocketDir(); err != nil {
		return err
	}
	for _, d := range []string{c.dir, logDir, c.socketDir} {
		if err := c.user.own(d); err != nil {
			return err
		}
	}
	return c.user.makeTraversable(filepath.Dir(c.dir), c.log)
}

// prepareSocketDir creates the socket directory. A directory in the shared
// temp dir could have been planted by another user to intercept
// connections, so it must be ours (or the cluster user's) and 0700.
func (c *Cluster) prepareSocketDir() error {
	if err := mkdirPrivate(c.socketDir, false); err != nil {
		return err
	}
	if strings.HasPrefix(c.socketDir, c.dir+string(filepath.Separator)) {
		return nil
	}
	st, err := os.Lstat(c.socketDir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", c.socketDir, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || st.Mode().Perm() != 0o700 {
		return fmt.Errorf("refusing socket directory %s: mode %v, want 0700", c.socketDir, st.Mode().Perm())
	}
	if int(sys.Uid) != os.Geteuid() && int(sys.Uid) != c.user.uid {
		return fmt.Errorf("refusing socket directory %s: owned by uid %d", c.socketDir, sys.Uid)
	}
	return nil
}

// initIfNeeded runs initdb unless the data directory exists. initdb writes
// into a temporary directory renamed into place at the end, so a crash
// during initdb never leaves a half-built cluster that looks usable.
func (c *Cluster) initIfNeeded(ctx context.Context) error {
	ver, err := os.ReadFile(filepath.Join(c.dataDir, "PG_VERSION"))
	if err == nil {
		return c.checkVersion(strings.TrimSpace(string(ver)))
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read PG_VERSION: %w", err)
	}
	if _, err := os.Stat(c.dataDir); err == nil {
		return fmt.Errorf("%s exists but holds no PostgreSQL cluster (no PG_VERSION); remove it", c.dataDir)
	}
	tmp := c.dataDir + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove leftover %s: %w", tmp, err)
	}
	if c.standbyOf != nil {
		if err := c.baseBackup(ctx, tmp); err != nil {
			return err
		}
	} else if err := c.initdb(ctx, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, c.dataDir); err != nil {
		return fmt.Errorf("move initialized cluster into place: %w", err)
	}
	c.created = true
	return nil
}

func (c *Cluster) initdb(ctx context.Context, dataDir string) error {
	start := time.Now()
	if err := c.run(ctx, c.bins.initdb, c.initdbArgs(dataDir)...); err != nil {
		return err
	}
	if err := appendInclude(filepath.Join(dataDir, "postgresql.conf")); err != nil {
		return err
	}
	c.log.Info("initialized postgres cluster", "dir", c.dataDir, "took", time.Since(start))
	return nil
}

func (c *Cluster) initdbArgs(dataDir string) []string {
	args := []string{
		"-D", dataDir, "-U", Superuser,
		// Trust only the unix socket; TCP is not even listened on.
		"--auth-local=trust", "--auth-host=reject",
		// C collation: index order does not change with glibc upgrades.
		"--encoding=UTF8", "--locale=C", "--no-instructions",
	}
	if c.fast {
		args = append(args, "--no-sync")
	}
	return args
}

// appendInclude makes postgresql.conf read our settings file last, so it
// overrides initdb's defaults; the file itself is rewritten on each start.
func appendInclude(conf string) error {
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", conf, err)
	}
	_, err = f.WriteString("\n# Managed by internal/pgcluster.\ninclude_if_exists = 'pgcluster.conf'\n")
	return errors.Join(wrap(err, "append to "+conf), wrap(f.Close(), "close "+conf))
}

func (c *Cluster) checkVersion(dataVersion string) error {
	binVersion, err := c.bins.majorVersion()
	if err != nil {
		return err
	}
	if binVersion != dataVersion {
		return fmt.Errorf("cluster in %s was created by PostgreSQL %s but the binaries in %s are version %s; "+
			"remove the directory or install PostgreSQL %s", c.dataDir, dataVersion, filepath.Dir(c.bins.pgctl), binVersion, dataVersion)
	}
	return nil
}

func (c *Cluster) writeConfig() error {
	var b strings.Builder
	b.WriteString("# Written by internal/pgcluster on every start; edits are lost.\n")
	setting := func(k, v string) { fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(v, "'", "''")) }
	setting("listen_addresses", "")
	setting("port", port)
	setting("unix_socket_directories", c.socketDir)
	// Migrations create ~60 tables x 64 hash partitions (plus indexes) in
	// one transaction; the default 64 locks per transaction is far too few.
	setting("max_locks_per_transaction", "512")
	// A single-node default: nothing streams or archives WAL, so only
	// crash recovery needs it. Keep 32 MB of it between checkpoints
	// instead of the 80 MB default and remove surplus segments rather than
	// keeping them for reuse, so the burst of the first migrations (over
	// 200 MB of WAL) is given back at the next checkpoint.
	setting("wal_level", "minimal")
	setting("max_wal_senders", "0")
	setting("min_wal_size", "32MB")
	setting("wal_recycle", "off")
	if c.fast {
		setting("fsync", "off")
		setting("synchronous_commit", "off")
		setting("full_page_writes", "off")
	}
	if c.noAutovacuum {
		setting("autovacuum", "off")
	} else {
		// Autovacuum looks at each database every 10 s instead of every
		// minute. A new namespace's partitions start empty and unanalysed,
		// and the plans a connection caches for them then read every row
		// of an image (a manifest push locked its blobs and checked its
		// foreign keys by scanning the image) until the first ANALYZE
		// replans them: 8,000 tag pushes into a new image read about
		// 6,700 buffers each with the default and 1,100 with this, and
		// ran 9 % faster. Idle, a database of this schema (some 25,000
		// relations) costs about 0.4 % of a core in autovacuum's visits.
		setting("autovacuum_naptime", "10s")
	}
	if c.maxConns > 0 {
		setting("max_connections", strconv.Itoa(c.maxConns))
	}
	if c.replication != nil {
		// Later lines win: the replication settings replace the
		// single-node ones above.
		c.replication.settings(setting)
	}
	return c.user.writeFile(filepath.Join(c.dataDir, "pgcluster.conf"), []byte(b.String()))
}

// adoptOrClear handles a postmaster.pid left by an earlier run: it adopts a
// healthy postmaster serving our socket, stops an unusable one, and removes
// a pid file naming a dead or unrelated process (postgres itself refuses to
// start while that pid is alive, whatever the process is).
func (c *Cluster) adoptOrClear(ctx context.Context) (bool, error) {
	pf, err := readPidFile(c.dataDir)
	if errors.Is(err, os.ErrNotExist) || !procAvailable() {
		return false, nil // without /proc, leave stale-pid checks to postgres
	}
	if err != nil {
		return false, fmt.Errorf("read postmaster.pid: %w", err)
	}
	if isPostmasterOf(pf.pid, c.dataDir) {
		if c.tryAdopt(ctx, pf) {
			return true, nil
		}
		c.log.Warn("stopping running postgres that cannot be used", "pid", pf.pid)
		if err := c.stopServer(ctx); err != nil {
			c.log.Warn("clean stop failed, killing", "err", err)
			if err := Kill(c.dir); err != nil {
				return false, err
			}
		}
	}
	return false, c.clearStale()
}

func (c *Cluster) tryAdopt(ctx context.Context, pf pidFile) bool {
	if pf.socketDir != c.socketDir || pf.port != port {
		return false // settings changed: needs a restart
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := c.waitReady(wctx); err != nil {
		return false
	}
	// fsync and friends are reloadable: apply this run's Fast setting.
	if err := c.pgctl(ctx, "reload"); err != nil {
		c.log.Warn("reload adopted postgres", "err", err)
	}
	c.adopted = true
	c.log.Info("adopted running postgres", "pid", pf.pid, "dir", c.dir)
	return true
}

func (c *Cluster) clearStale() error {
	pf, err := readPidFile(c.dataDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read postmaster.pid: %w", err)
	}
	if isPostmasterOf(pf.pid, c.dataDir) {
		return fmt.Errorf("postgres (pid %d) still runs in %s", pf.pid, c.dataDir)
	}
	c.log.Warn("removing stale postmaster.pid", "pid", pf.pid, "dir", c.dataDir)
	if err := os.Remove(filepath.Join(c.dataDir, "postmaster.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale postmaster.pid: %w", err)
	}
	// Orphaned backends of a killed postmaster hold its shared memory.
	if err := killServerProcesses(c.dataDir, 10*time.Second); err != nil {
		return err
	}
	return c.clearStaleSocketLock()
}

// clearStaleSocketLock removes the socket lock file a dead postmaster left:
// postgres refuses to start while the pid it names exists, and a SIGKILLed
// postmaster that nobody reaps stays a zombie with that pid.
func (c *Cluster) clearStaleSocketLock() error {
	lock := filepath.Join(c.socketDir, socketName[1:]+".lock")
	pf, err := readLockFile(lock)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", lock, err)
	}
	if isPostmasterOf(pf.pid, c.dataDir) {
		return fmt.Errorf("postgres (pid %d) still holds socket %s", pf.pid, lock)
	}
	for _, p := range []string{lock, strings.TrimSuffix(lock, ".lock")} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", p, err)
		}
	}
	return nil
}

func (c *Cluster) startServer(ctx context.Context) error {
	c.rotateLog()
	start := time.Now()
	err := c.pgctl(ctx, "start", "-l", c.logFile, "-w", "-t", secondsLeft(ctx, time.Minute))
	if err != nil {
		return fmt.Errorf("start postgres: %w%s", err, c.logTail())
	}
	if err := c.waitReady(ctx); err != nil {
		return fmt.Errorf("postgres started but refuses connections: %w%s", err, c.logTail())
	}
	c.log.Info("postgres started", "dir", c.dir, "socket", c.socketDir, "took", time.Since(start))
	return nil
}

// stopServer runs pg_ctl stop -m fast unless no server is running.
func (c *Cluster) stopServer(ctx context.Context) error {
	pidPath := filepath.Join(c.dataDir, "postmaster.pid")
	if _, err := os.Stat(pidPath); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	// The shutdown checkpoint fsyncs every one of the schema's ~20,000 relation
	// files: on a busy machine that alone can take minutes, and returning
	// early would leave a server running behind a process that has exited.
	err := c.pgctl(ctx, "stop", "-m", "fast", "-w", "-t", secondsLeft(ctx, 10*time.Minute))
	if _, statErr := os.Stat(pidPath); err == nil || errors.Is(statErr, os.ErrNotExist) {
		return nil
	}
	if pf, perr := readPidFile(c.dataDir); perr == nil && procAvailable() && !isPostmasterOf(pf.pid, c.dataDir) {
		return nil // the pid file is stale: nothing to stop
	}
	return fmt.Errorf("stop postgres: %w%s", err, c.logTail())
}

// waitReady polls with real connections: pg_ctl -w only knows the
// postmaster reported "ready", not that our socket and role work.
func (c *Cluster) waitReady(ctx context.Context) error {
	for {
		err := c.ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for postgres: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

// ConnectMaintenance connects to the maintenance database "postgres" as
// the superuser, with commits that do not wait for a standby: a new
// replication primary has none yet, and with synchronous_standby_names
// set, a commit waiting for one would hang.
func (c *Cluster) ConnectMaintenance(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(c.URL("postgres"))
	if err != nil {
		return nil, fmt.Errorf("parse cluster url: %w", err)
	}
	cfg.RuntimeParams["synchronous_commit"] = "local"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	return conn, nil
}

func (c *Cluster) ensureDatabase(ctx context.Context) error {
	conn, err := c.ConnectMaintenance(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", Database).Scan(&exists)
	if err != nil || exists {
		return wrap(err, "look up database "+Database)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{Database}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.DuplicateDatabase { // lost a race, fine
		return nil
	}
	return wrap(err, "create database "+Database)
}

func (c *Cluster) pgctl(ctx context.Context, action string, args ...string) error {
	return c.run(ctx, c.bins.pgctl, append([]string{action, "-D", c.dataDir, "-s"}, args...)...)
}

// run executes a PostgreSQL program as the cluster user, in its own process
// group so a Ctrl-C in the terminal reaches us, not the database (pg_ctl
// also detaches the postmaster with setsid).
func (c *Cluster) run(ctx context.Context, bin string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.dir // our cwd may not be readable by postgres
	cmd.Env = serverEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: c.user.cred}
	// Never hang on output pipes a forked postmaster might have inherited.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), args[0], err, oneLine(out))
	}
	return nil
}

// serverEnv drops PG* variables: PGDATA, PGPORT, PGHOST etc. from the
// developer's shell would otherwise redirect initdb and pg_ctl.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

// rotateLog keeps one previous log: pg_ctl -l appends forever otherwise.
func (c *Cluster) rotateLog() {
	if st, err := os.Stat(c.logFile); err == nil && st.Size() > 16<<20 {
		_ = os.Rename(c.logFile, c.logFile+".1")
	}
}

// logTail returns the end of the server log, for startup errors: pg_ctl
// only says "examine the log output".
func (c *Cluster) logTail() string {
	f, err := os.Open(c.logFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 4 << 10
	if st, err := f.Stat(); err == nil && st.Size() > window {
		_, _ = f.Seek(-window, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	lines = lines[max(0, len(lines)-15):]
	return fmt.Sprintf("\nlast lines of %s:\n%s", c.logFile, bytes.Join(lines, []byte("\n")))
}
