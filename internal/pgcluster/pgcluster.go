// Package pgcluster runs a private PostgreSQL cluster for the server (when
// no DATABASE_URL is given) and for tests.
//
// Layout under Options.Dir:
//
//	data/               PGDATA (initdb on first use, reused afterwards)
//	data/pgcluster.conf settings we own, rewritten on every Start
//	log/postgres.log    server log
//	run/                unix socket directory (when the path is short enough)
//	pgcluster.lock      serializes Start/Stop of the same Dir
//
// The server listens on a unix socket only and trusts local connections, so
// access is controlled by the socket directory's permissions (0700).
//
// Crashes: if Start finds a healthy postmaster already running for Dir
// (our process was killed without calling Stop), it adopts it instead of
// restarting it, so in-flight work is not interrupted; Stop then stops it.
// A postmaster.pid naming a dead or unrelated process is removed first.
//
// Replication: with Options.Replication a cluster streams WAL to standbys
// that StartStandby builds from a base backup; Promote turns a standby
// into a primary. Tests use this to fail the registry over.
package pgcluster

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// Superuser is the cluster's superuser role; URL connects as it.
	Superuser = "artifact_registry"
	// Database is created on Start so the server can connect by default.
	Database = "artifact_registry"

	port                = "5432"
	defaultStartTimeout = 2 * time.Minute
	// sun_path holds 108 bytes including the terminating NUL.
	maxSocketPath = 107
	socketName    = "/.s.PGSQL." + port
)

// Options configures Start.
type Options struct {
	Dir    string       // cluster home, e.g. <data-dir>/postgres; created if missing
	Logger *slog.Logger // may be nil
	// Fast trades durability for speed, for tests: fsync=off,
	// synchronous_commit=off, full_page_writes=off, wal_recycle=off, initdb --no-sync.
	Fast bool
	// NoAutovacuum turns autovacuum off, for clusters of short-lived test
	// databases that analyze what they need themselves: in a test run,
	// its workers analyzing tables the tests had just filled cost as much
	// CPU as a large test package.
	NoAutovacuum bool
	// MaxConnections replaces PostgreSQL's default (100) when set.
	MaxConnections int
	// StartTimeout bounds Start as a whole (initdb, startup, crash
	// recovery); zero means 2 minutes.
	StartTimeout time.Duration
	// Replication, when set, makes the cluster a replication primary or,
	// through StartStandby, a standby (see Replication).
	Replication *Replication

	// searchPath replaces $PATH when looking for binaries (tests).
	searchPath *string
	// libGlob replaces /usr/lib/postgresql/*/bin (tests).
	libGlob string
}

// Cluster is a running PostgreSQL cluster started or adopted by Start.
type Cluster struct {
	dir, dataDir, logFile, socketDir string

	bins         binaries
	user         osUser
	log          *slog.Logger
	fast         bool
	noAutovacuum bool
	maxConns     int
	timeout      time.Duration

	replication *Replication
	standbyOf   *Cluster // set by StartStandby: initialize from a base backup

	created, adopted bool

	mu      sync.Mutex
	stopped bool
}

// Start initializes the cluster in opts.Dir if needed, starts it (or adopts
// one already running there) and waits until it accepts connections.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := mkdirPrivate(c.dir, true); err != nil {
		return nil, err
	}
	unlock, err := c.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func newCluster(opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("pgcluster: Options.Dir is empty")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("resolve cluster dir: %w", err)
	}
	pathList := os.Getenv("PATH")
	if opts.searchPath != nil {
		pathList = *opts.searchPath
	}
	bins, err := findBinaries(pathList, cmp.Or(opts.libGlob, defaultLibGlob))
	if err != nil {
		return nil, err
	}
	u, err := clusterUser()
	if err != nil {
		return nil, err
	}
	return &Cluster{
		dir:          dir,
		dataDir:      filepath.Join(dir, "data"),
		logFile:      filepath.Join(dir, "log", "postgres.log"),
		socketDir:    socketDirFor(dir),
		bins:         bins,
		user:         u,
		log:          cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		fast:         opts.Fast,
		noAutovacuum: opts.NoAutovacuum,
		maxConns:     opts.MaxConnections,
		timeout:      cmp.Or(opts.StartTimeout, defaultStartTimeout),
		replication:  opts.Replication,
	}, nil
}

func (c *Cluster) start(ctx context.Context) error {
	if err := c.prepareDirs(); err != nil {
		return err
	}
	if err := c.initIfNeeded(ctx); err != nil {
		return err
	}
	if err := c.writeConfig(); err != nil {
		return err
	}
	adopted, err := c.adoptOrClear(ctx)
	if err != nil {
		return err
	}
	if !adopted {
		if err := c.startServer(ctx); err != nil {
			return err
		}
	}
	if err := c.ensureDatabase(ctx); err != nil {
		// Do not leave a server behind that the caller cannot Stop.
		_ = c.stopServer(context.WithoutCancel(ctx))
		return err
	}
	return nil
}

// socketDirFor picks <dir>/run unless the socket path would exceed the
// kernel's limit, then a private directory in the temp dir named after dir
// (stable, so a later Start finds a server it adopts at the same place).
func socketDirFor(dir string) string {
	run := filepath.Join(dir, "run")
	if len(run)+len(socketName) <= maxSocketPath {
		return run
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(os.TempDir(), "pgcluster-"+hex.EncodeToString(sum[:6]))
}

// URL returns a pgx-usable connection string for database, connecting as
// the cluster superuser over the unix socket.
func (c *Cluster) URL(database string) string {
	q := url.Values{"host": {c.socketDir}, "port": {port}, "sslmode": {"disable"}}
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Path: "/" + database, RawQuery: q.Encode()}
	return u.String()
}

// Stop shuts the server down cleanly (pg_ctl stop -m fast: clients are
// disconnected, a checkpoint is written). Calling it again does nothing.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	unlock, err := c.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.stopServer(ctx); err != nil {
		return err
	}
	c.stopped = true
	c.log.Info("postgres stopped", "dir", c.dir)
	return nil
}

// Dir is the cluster home (absolute).
func (c *Cluster) Dir() string { return c.dir }

// DataDir is PGDATA.
func (c *Cluster) DataDir() string { return c.dataDir }

// SocketDir is the directory holding the server's unix socket.
func (c *Cluster) SocketDir() string { return c.socketDir }

// LogFile is the server log.
func (c *Cluster) LogFile() string { return c.logFile }

// Created reports whether this Start ran initdb.
func (c *Cluster) Created() bool { return c.created }

// Adopted reports whether Start found the server already running.
func (c *Cluster) Adopted() bool { return c.adopted }

// PID returns the postmaster's process id.
func (c *Cluster) PID() (int, error) {
	pf, err := readPidFile(c.dataDir)
	if err != nil {
		return 0, fmt.Errorf("read postmaster.pid: %w", err)
	}
	return pf.pid, nil
}

// lock serializes Start and Stop on the same Dir, across processes.
func (c *Cluster) lock() (func(), error) {
	path := filepath.Join(c.dir, "pgcluster.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil // closing releases the flock
}

func secondsLeft(ctx context.Context, fallback time.Duration) string {
	d := fallback
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	return fmt.Sprint(max(1, int(d.Seconds())))
}

func oneLine(b []byte) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(string(b), "\n", "; ")), " ")
}
