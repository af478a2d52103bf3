package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The test binaries of one `go test` run under Serve share its cluster
// and hand reset databases to each other: a binary gives the databases it
// has reset, and its unused spare, to the server when it has no use for
// them, and takes one from there before it clones. A database is passed on
// by renaming it to a name of the pool, and taken by renaming it to a test
// name of its own: the rename that wins is the one that finds the name,
// so two binaries never take the same database. Cloning and dropping a
// database cost the server several times a reset, and without the pool
// every binary cloned its own and dropped them all when it ended.
//
// Only databases a reset vouched for (or fresh clones) enter the pool, and
// only on a server Serve started for the run: it removes the whole
// cluster, pool included, when the run ends.

// poolEnv is set by Serve for the command it runs; the pool is only used
// on Serve's server, never on TEST_DATABASE_URL's.
const poolEnv = "TESTDB_POOL"

// poolPrefix names the pooled databases of the current migrations.
func (s *server) poolPrefix() string {
	return "testdb_free_" + strings.TrimPrefix(s.template, templatePrefix) + "_"
}

// fresh returns a database from the pool when there is one, else a clone.
func (s *server) fresh(ctx context.Context) (database, error) {
	if s.pool {
		if db, ok, err := s.takePooled(ctx); err != nil || ok {
			return db, err
		}
	}
	return s.clone(ctx)
}

// takePooled renames a pooled database to a test name of its own; false
// when the pool is empty or other binaries took what it held first.
func (s *server) takePooled(ctx context.Context) (database, bool, error) {
	rows, err := s.admin.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)
		ORDER BY random() LIMIT 8`, s.poolPrefix())
	if err != nil {
		return database{}, false, fmt.Errorf("list pooled databases: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return database{}, false, fmt.Errorf("list pooled databases: %w", err)
	}
	for _, pooled := range names {
		name := randomName()
		_, err := s.admin.Exec(ctx, "ALTER DATABASE "+ident(pooled)+" RENAME TO "+ident(name))
		if err == nil {
			return database{name: name, pooled: true}, true, nil
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "3D000" { // invalid_catalog_name: another binary took it
			return database{}, false, fmt.Errorf("take pooled database %s: %w", pooled, err)
		}
	}
	return database{}, false, nil
}

// givePooled passes a reset database (or an unused clone) on to the other
// binaries; false when it could not, and the caller drops it.
func (s *server) givePooled(name string) bool {
	if !s.pool || s.base == nil {
		return false
	}
	_, err := s.admin.Exec(context.Background(), "ALTER DATABASE "+ident(name)+" RENAME TO "+ident(s.poolPrefix()+randomName()[len("test_"):]))
	return err == nil
}

// sharedMaxConnections is max_connections of Serve's cluster: its test
// binaries each open a few pools and start servers that open their own,
// where PostgreSQL's default of 100 suits one binary.
const sharedMaxConnections = 400

// serverFileEnv names the file through which Serve tells the binaries of
// its command the URL of the cluster once it is ready, or why it failed.
// The command starts at once: on a fresh machine the cluster's first
// start (initdb and the migrations, half a minute of one core) then runs
// while go test compiles the test binaries.
const serverFileEnv = "TESTDB_SERVER_FILE"

const serverFailed = "error: "

// Serve starts a private cluster holding the migrated template (from the
// cache when it can) and runs fn meanwhile, with the environment that
// makes test binaries wait for it and share it (the server file and the
// pool). It stops and removes the cluster once fn has returned.
func Serve(ctx context.Context, fn func(env []string) error) error {
	dir, err := os.MkdirTemp("", "testdb-serve-")
	if err != nil {
		return fmt.Errorf("create server file dir: %w", err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "server")
	s := &server{maxConns: sharedMaxConnections}
	ready := make(chan error, 1)
	go func() { ready <- s.serve(ctx, file) }()
	runErr := fn([]string{serverFileEnv + "=" + file, poolEnv + "=1"})
	return errors.Join(runErr, <-ready, s.close())
}

// serve starts the cluster and writes its URL, or the error, to file.
func (s *server) serve(ctx context.Context, file string) error {
	var err error
	if s.template, err = templateName(); err == nil {
		if err = s.startCluster(ctx); err == nil {
			err = s.prepare(ctx)
		}
	}
	msg := serverFailed + fmt.Sprint(err)
	if err == nil {
		msg = s.baseURL
		fmt.Fprintf(os.Stderr, "testdb: %s\n", s.summary())
	}
	tmp := file + ".tmp"
	if werr := os.WriteFile(tmp, []byte(msg), 0o600); werr != nil {
		return errors.Join(err, werr)
	}
	return errors.Join(err, os.Rename(tmp, file))
}

// Shared reports whether the binary's server outlives it (TEST_DATABASE_URL,
// or Serve's cluster, which the run's other binaries go on using): a
// database a test creates there itself must be dropped, where a private
// cluster is removed whole when the binary ends.
func Shared() bool { return os.Getenv("TEST_DATABASE_URL") != "" || os.Getenv(serverFileEnv) != "" }

// awaitServer waits for Serve to write the file and returns the URL in it.
func awaitServer(ctx context.Context, file string) (string, error) {
	for {
		b, err := os.ReadFile(file)
		switch {
		case err == nil && strings.HasPrefix(string(b), serverFailed):
			return "", fmt.Errorf("the run's test database server: %s", strings.TrimPrefix(string(b), serverFailed))
		case err == nil:
			return string(b), nil
		case !errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("read %s: %w", file, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("wait for the run's test database server: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
