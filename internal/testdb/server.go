package testdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
	"github.com/artifact-registry/artifact-registry/migrations"
)

// templateLockKey serializes template builds across test binaries sharing
// one server ("testdbtp" in ASCII).
const templateLockKey int64 = 0x7465737464627470

type server struct {
	baseURL  string // maintenance database: CREATE/DROP DATABASE run here
	admin    *pgxpool.Pool
	template string // named after the migrations' fingerprint

	// The private cluster (cluster.go); nil with TEST_DATABASE_URL.
	cluster     *pgcluster.Cluster
	tmpDir      string
	clusterDir  string
	cache       *cache
	unlockCache func() // set while this binary builds the cache entry
	seeded      bool   // the cluster was copied from the cache
	maxConns    int    // PostgreSQL's max_connections when set (Serve)

	seedTime, clusterStart time.Duration
	templateTime           time.Duration
	templateBuilt          bool
	cacheNote              string

	// Background clones and drops (databases.go).
	ctx       context.Context
	cancel    context.CancelFunc
	mu        sync.Mutex
	closing   bool
	refilling bool
	bg        sync.WaitGroup
	spares    chan spare
	drops     chan string
	dropDone  chan struct{}
	errMu     sync.Mutex
	dropErrs  []error

	// Recycling (recycle.go): nil base means every database is dropped.
	base      *baseline
	recycled  chan database
	recycling atomic.Int32 // released databases the drop loop has not finished with
	pool      bool         // databases are shared with the run's other binaries (pool.go)
}

// recycledKept bounds the reset databases waiting for a test, each a full
// copy of the schema's files.
const recycledKept = 3

const recycleOverride = "TESTDB_RECYCLE"

func setup() (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tpl, err := templateName()
	if err != nil {
		return nil, err
	}
	s := &server{baseURL: os.Getenv("TEST_DATABASE_URL"), template: tpl}
	if file := os.Getenv(serverFileEnv); s.baseURL == "" && file != "" {
		if s.baseURL, err = awaitServer(ctx, file); err != nil {
			return nil, err
		}
		s.pool = os.Getenv(poolEnv) == "1"
	}
	if s.baseURL == "" {
		if err := s.startCluster(ctx); err != nil {
			return nil, errors.Join(err, s.close())
		}
	}
	if err := s.prepare(ctx); err != nil {
		return nil, errors.Join(err, s.close())
	}
	s.startBackground()
	s.startRecycling(ctx)
	return s, nil
}

// templateName names the template after the migrations' fingerprint.
func templateName() (string, error) {
	fp, err := migrations.Fingerprint()
	if err != nil {
		return "", err
	}
	return templatePrefix + fp[:16], nil
}

const templatePrefix = "testdb_tpl_"

// startRecycling reads the baseline of recycle.go from a fresh clone, which
// then waits for the first test. Recycling stays off when that fails, and
// with TESTDB_RECYCLE=0 (to rule it out when a test misbehaves).
func (s *server) startRecycling(ctx context.Context) {
	if os.Getenv(recycleOverride) == "0" {
		s.cacheNote += "; databases are not recycled (" + recycleOverride + "=0)"
		return
	}
	db, err := s.fresh(ctx)
	if err != nil {
		s.cacheNote += fmt.Sprintf("; databases are not recycled: %v", err)
		return
	}
	s.base, err = s.captureBaseline(ctx, db.name)
	switch {
	case err != nil:
		s.cacheNote += fmt.Sprintf("; databases are not recycled: %v", err)
	case s.base == nil:
		s.cacheNote += "; databases are not recycled: the role is not a superuser, or track_counts is off"
	}
	s.recycled <- db
}

func (s *server) prepare(ctx context.Context) error {
	if err := s.openAdmin(ctx); err != nil {
		return err
	}
	if err := s.ensureTemplate(ctx); err != nil {
		return err
	}
	return s.fillCache(ctx)
}

func (s *server) openAdmin(ctx context.Context) error {
	var err error
	if s.admin, err = pgxpool.New(ctx, s.baseURL); err != nil {
		return fmt.Errorf("open maintenance pool: %w", err)
	}
	if err := s.admin.Ping(ctx); err != nil {
		return fmt.Errorf("connect to test database server: %w", err)
	}
	return nil
}

// close stops and removes what setup created; safe on a partial setup.
func (s *server) close() error {
	errs := s.stopBackground()
	if s.unlockCache != nil {
		s.unlockCache()
	}
	if s.admin != nil {
		s.admin.Close()
	}
	return errors.Join(append(errs, s.removeCluster())...)
}

// ensureTemplate makes sure the migrated template for the current
// migrations exists. Its name carries the migrations' fingerprint, so on a
// shared server a template built from other migrations is never used.
func (s *server) ensureTemplate(ctx context.Context) error {
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
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey) //nolint:errcheck // disconnecting releases it too
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
	if err := s.settleTemplate(ctx); err != nil {
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

// settleTemplate vacuums and analyzes the template's tables that the
// migrations wrote to. Autovacuum would otherwise do it on its own, a
// minute or so into some test binary's run (it ignores ALLOW_CONNECTIONS
// false): databases cloned before and after would differ in planner
// statistics, and a recycled database would be reset to statistics that
// fresh clones no longer have.
func (s *server) settleTemplate(ctx context.Context) error {
	url, err := withDatabase(s.baseURL, s.template)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to template %s: %w", s.template, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The migrations' sessions count their writes when they end.
	if err := alone(ctx, conn); err != nil {
		return err
	}
	var written []string
	rows, err := conn.Query(ctx, `SELECT format('%I.%I', schemaname, relname) FROM pg_stat_user_tables
		WHERE n_tup_ins + n_tup_upd + n_tup_del > 0 ORDER BY 1`)
	if err == nil {
		written, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return fmt.Errorf("list written template tables: %w", err)
	}
	if len(written) == 0 {
		return nil
	}
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(written, ", ")); err != nil {
		return fmt.Errorf("vacuum template %s: %w", s.template, err)
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
	srv := "server from TEST_DATABASE_URL"
	if s.cluster != nil {
		how := "initdb"
		if s.seeded {
			how = fmt.Sprintf("copied from cache in %v", s.seedTime.Round(time.Millisecond))
		}
		srv = fmt.Sprintf("cluster in %s started in %v (%s)", s.clusterDir, s.clusterStart.Round(time.Millisecond), how)
	}
	tpl := "found"
	if s.templateBuilt {
		tpl = "built and migrated"
	}
	return fmt.Sprintf("%s; template %s %s in %v%s", srv, s.template, tpl, s.templateTime.Round(time.Millisecond), s.cacheNote)
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
