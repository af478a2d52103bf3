package testdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
	"github.com/artifact-registry/artifact-registry/migrations"
)

const (
	// templateLockKey serializes template builds across test binaries
	// sharing one server ("testdbtp" in ASCII).
	templateLockKey int64 = 0x7465737464627470
	// ownerFile records which process owns a temp cluster dir, so a later
	// run can clean up after a test binary killed by -timeout.
	ownerFile  = "owner.pid"
	tempPrefix = "testdb-"
)

type server struct {
	cluster *pgcluster.Cluster // nil with TEST_DATABASE_URL
	tmpDir  string
	baseURL string // maintenance database: CREATE/DROP DATABASE run here
	admin   *pgxpool.Pool

	template      string
	templateBuilt bool
	clusterStart  time.Duration
	templateTime  time.Duration
}

func setup() (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := &server{baseURL: os.Getenv("TEST_DATABASE_URL")}
	if s.baseURL == "" {
		if err := s.startCluster(ctx); err != nil {
			return nil, err
		}
	}
	if err := s.prepare(ctx); err != nil {
		return nil, errors.Join(err, s.close())
	}
	return s, nil
}

func (s *server) prepare(ctx context.Context) error {
	var err error
	if s.admin, err = pgxpool.New(ctx, s.baseURL); err != nil {
		return fmt.Errorf("open maintenance pool: %w", err)
	}
	if err := s.admin.Ping(ctx); err != nil {
		return fmt.Errorf("connect to test database server: %w", err)
	}
	return s.ensureTemplate(ctx)
}

func (s *server) startCluster(ctx context.Context) error {
	sweepLeaked()
	dir, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return fmt.Errorf("create cluster temp dir: %w", err)
	}
	s.tmpDir = dir
	// As root the cluster runs as user postgres, which must traverse this
	// (0700 by default) directory; 0711 still hides its listing.
	if err := os.Chmod(dir, 0o711); err != nil {
		return errors.Join(fmt.Errorf("chmod cluster temp dir: %w", err), s.close())
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return errors.Join(fmt.Errorf("write owner file: %w", err), s.close())
	}
	start := time.Now()
	c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(dir, "postgres"), Fast: true})
	if err != nil {
		return errors.Join(fmt.Errorf("start test cluster: %w", err), s.close())
	}
	s.cluster, s.clusterStart, s.baseURL = c, time.Since(start), c.URL("postgres")
	return nil
}

// close stops and removes what setup created; safe on a partial setup.
func (s *server) close() error {
	if s.admin != nil {
		s.admin.Close()
	}
	var errs []error
	if s.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.cluster.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop test cluster: %w", err))
		}
	}
	if s.tmpDir != "" && len(errs) == 0 {
		if err := os.RemoveAll(s.tmpDir); err != nil {
			errs = append(errs, fmt.Errorf("remove cluster temp dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ensureTemplate makes sure the migrated template for the current
// migrations exists. Its name carries the migrations' fingerprint, so on a
// shared server a template built from other migrations is never used.
func (s *server) ensureTemplate(ctx context.Context) error {
	fp, err := migrations.Fingerprint()
	if err != nil {
		return err
	}
	s.template = "testdb_tpl_" + fp[:16]
	start := time.Now()
	conn, err := s.admin.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire maintenance connection: %w", err)
	}
	defer conn.Release()
	// A session lock, so a crashed builder releases it by disconnecting.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return fmt.Errorf("lock template build: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey) //nolint:errcheck // disconnect releases it too
	var isTemplate *bool
	err = conn.QueryRow(ctx, "SELECT (SELECT datistemplate FROM pg_database WHERE datname = $1)", s.template).Scan(&isTemplate)
	if err != nil {
		return fmt.Errorf("look up template %s: %w", s.template, err)
	}
	if isTemplate == nil || !*isTemplate {
		if err := s.buildTemplate(ctx, isTemplate != nil); err != nil {
			return err
		}
		s.templateBuilt = true
	}
	s.templateTime = time.Since(start)
	return nil
}

// buildTemplate creates and migrates the template, then freezes it. A
// database by that name that is not yet a template is a build that died
// half-way (we hold the lock, so nobody else is building it): drop it.
func (s *server) buildTemplate(ctx context.Context, leftover bool) error {
	if leftover {
		if err := s.drop(s.template); err != nil {
			return fmt.Errorf("drop half-built template: %w", err)
		}
	}
	if _, err := s.admin.Exec(ctx, "CREATE DATABASE "+ident(s.template)+" TEMPLATE template0"); err != nil {
		return fmt.Errorf("create template %s: %w", s.template, err)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	// No connections allowed: CREATE DATABASE ... TEMPLATE fails while
	// anyone is connected to the template.
	for _, opt := range []string{"IS_TEMPLATE true", "ALLOW_CONNECTIONS false"} {
		if _, err := s.admin.Exec(ctx, "ALTER DATABASE "+ident(s.template)+" WITH "+opt); err != nil {
			return fmt.Errorf("mark %s %s: %w", s.template, opt, err)
		}
	}
	return nil
}

func (s *server) migrate(ctx context.Context) error {
	url, err := withDatabase(s.baseURL, s.template)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("open template pool: %w", err)
	}
	defer pool.Close() // before ALTER ... ALLOW_CONNECTIONS false
	if err := migrations.Up(ctx, pool); err != nil {
		return fmt.Errorf("migrate template %s: %w", s.template, err)
	}
	return nil
}

func (s *server) summary() string {
	tpl := "reused"
	if s.templateBuilt {
		tpl = "built and migrated"
	}
	srv := "server from TEST_DATABASE_URL"
	if s.cluster != nil {
		srv = fmt.Sprintf("cluster started in %v (initdb=%v)", s.clusterStart.Round(time.Millisecond), s.cluster.Created())
	}
	return fmt.Sprintf("%s; template %s %s in %v", srv, s.template, tpl, s.templateTime.Round(time.Millisecond))
}

// withDatabase returns connString pointing at database db. It accepts both
// forms pgx does: URLs and keyword/value strings.
func withDatabase(connString, db string) (string, error) {
	if !strings.HasPrefix(connString, "postgres://") && !strings.HasPrefix(connString, "postgresql://") {
		// In keyword/value strings the last occurrence of a key wins.
		return connString + " dbname=" + db, nil
	}
	u, err := url.Parse(connString)
	if err != nil {
		return "", fmt.Errorf("parse database URL: %w", err)
	}
	q := u.Query()
	q.Del("dbname") // would override the path
	u.RawQuery = q.Encode()
	u.Path, u.RawPath = "/"+db, ""
	return u.String(), nil
}

// sweepLeaked stops and removes temp clusters left by test binaries that
// died without cleaning up (-timeout, SIGKILL): the cluster runs in its own
// process group and would otherwise live on.
func sweepLeaked() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being set up
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // owner still alive (or unreadable): leave it
		}
		if pgcluster.Kill(filepath.Join(dir, "postgres")) == nil {
			_ = os.RemoveAll(dir)
		}
	}
}
