package testdb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A database a test has finished with is reset and handed to a later test
// of the same binary instead of being dropped. Cloning and dropping copy
// and unlink the schema's ~25,000 relation files (about 265 MB) for every
// test; a reset deletes the rows the test left and rewrites only the
// tables it touched. A reset database is indistinguishable from a fresh
// clone for what tests can observe: the same schema, no rows but the
// template's, the template's sequence values, table sizes, planner
// statistics and activity counters. Anything the reset cannot vouch for
// (a schema the test changed, template rows it changed, a connection that
// would not go away) sends the database to the drop as before.
//
// Recycling needs a superuser (session_replication_role, pg_class and
// pg_statistic) and track_counts on; without them every database is
// dropped.

// baseline is what a fresh clone looks like, taken once per binary.
type baseline struct {
	settings string            // the database's settings, as schemaWritesSQL gives them
	seeded   map[string]string // tables the template has rows in → md5 of the rows
	// setvals restores every sequence to the template's state.
	setvals  string
	rels     relStats // planner statistics of every table and index
	statOIDs []uint32 // relations with pg_statistic rows in the template
}

// schemaWritesSQL counts the rows written, since the activity counters
// were last reset, to the catalogs that describe the schema: relations
// created or dropped, columns and their defaults, constraints, triggers
// (enabled or not), functions, types (a renamed table's too), schemas,
// indexes, partitions, enum labels. VACUUM, ANALYZE, TRUNCATE and
// autovacuum only update pg_class rows of existing relations, which do not
// count; a test's VACUUM FULL writes a transient relation and counts, so
// its database is dropped rather than reused. The second column is the
// database's settings (pg_db_role_setting is shared: its counters are not
// the database's). Reading these counters replaced comparing a
// fingerprint of the catalogs, about 20 ms of the server's time for every
// recycled database.
const schemaWritesSQL = `
SELECT coalesce(sum(pg_stat_get_tuples_inserted(c.oid) + pg_stat_get_tuples_deleted(c.oid)
	+ CASE WHEN c.relname = 'pg_class' THEN 0 ELSE pg_stat_get_tuples_updated(c.oid) END), 0)::bigint,
	(SELECT format('%s', array_agg(s.setconfig)) FROM pg_db_role_setting s
	  WHERE s.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()))
FROM pg_class c
WHERE c.relnamespace = 'pg_catalog'::regnamespace AND c.relname IN ('pg_class', 'pg_attribute', 'pg_attrdef',
	'pg_constraint', 'pg_trigger', 'pg_proc', 'pg_type', 'pg_namespace', 'pg_index', 'pg_inherits', 'pg_enum',
	'pg_rewrite', 'pg_sequence')`

// ourTables restricts a pg_class query to the schema's own tables.
const ourTables = `c.relnamespace IN ('public'::regnamespace, 'partitions'::regnamespace)`

// dirtyTablesSQL lists the tables rows were written to or deleted from
// since the activity counters were last reset: the tables a test touched.
// A backend's counts reach them when it ends, and recycling ends every
// backend of the database first.
const dirtyTablesSQL = `
SELECT format('%I.%I', c.relnamespace::regnamespace::text, c.relname) FROM pg_class c
WHERE c.relkind = 'r' AND ` + ourTables + `
  AND pg_stat_get_tuples_inserted(c.oid) + pg_stat_get_tuples_updated(c.oid) + pg_stat_get_tuples_deleted(c.oid) > 0`

// captureBaseline reads a fresh clone. It returns nil, nil when the role
// is not a superuser or the server does not count row changes.
func (s *server) captureBaseline(ctx context.Context, name string) (*baseline, error) {
	conn, err := s.connect(ctx, name)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// The reset finds the tables a test wrote to by their activity counters.
	var able bool
	if err := conn.QueryRow(ctx, `SELECT rolsuper AND current_setting('track_counts')::boolean
		FROM pg_roles WHERE rolname = current_user`).Scan(&able); err != nil || !able {
		return nil, err
	}
	b := &baseline{seeded: map[string]string{}}
	var writes int64
	if err := conn.QueryRow(ctx, schemaWritesSQL).Scan(&writes, &b.settings); err != nil {
		return nil, fmt.Errorf("schema writes: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT format('%I.%I', c.relnamespace::regnamespace::text, c.relname) FROM pg_class c
		WHERE c.relkind = 'r' AND `+ourTables+` AND pg_relation_size(c.oid) > 0`)
	if err != nil {
		return nil, fmt.Errorf("tables with rows: %w", err)
	}
	seeded, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("tables with rows: %w", err)
	}
	for _, table := range seeded {
		if b.seeded[table], err = tableDigest(ctx, conn, table); err != nil {
			return nil, err
		}
	}
	if b.rels, err = captureRelStats(ctx, conn); err != nil {
		return nil, err
	}
	if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(format('SELECT setval(%L, %s, %L);',
		format('%I.%I', schemaname, sequencename), coalesce(last_value, start_value), last_value IS NOT NULL), ''), '')
		FROM pg_sequences WHERE schemaname IN ('public', 'partitions')`).Scan(&b.setvals); err != nil {
		return nil, fmt.Errorf("sequences: %w", err)
	}
	rows, err = conn.Query(ctx, "SELECT DISTINCT starelid FROM pg_statistic")
	if err != nil {
		return nil, fmt.Errorf("statistics: %w", err)
	}
	if b.statOIDs, err = pgx.CollectRows(rows, pgx.RowTo[uint32]); err != nil {
		return nil, fmt.Errorf("statistics: %w", err)
	}
	// The clone starts with the counters the template had.
	if _, err := conn.Exec(ctx, "SELECT pg_stat_reset()"); err != nil {
		return nil, fmt.Errorf("reset activity counters: %w", err)
	}
	return b, nil
}

func tableDigest(ctx context.Context, conn *pgx.Conn, table string) (string, error) {
	var sum string
	err := conn.QueryRow(ctx, "SELECT coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM "+table+" t").Scan(&sum)
	if err != nil {
		return "", fmt.Errorf("digest %s: %w", table, err)
	}
	return sum, nil
}

func (s *server) connect(ctx context.Context, name string) (*pgx.Conn, error) {
	url, err := withDatabase(s.baseURL, name)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", name, err)
	}
	return conn, nil
}

var errNotReusable = errors.New("not reusable")

// recycle takes a released database away from whatever still holds it,
// under a new name (a leaked pool of the finished test cannot reconnect to
// it), and resets it. It returns the new name: the caller drops it when
// err is not nil.
func (s *server) recycle(name string) (string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	fresh := randomName()
	if err := s.takeOver(ctx, name, fresh); err != nil {
		return name, err
	}
	conn, err := s.connect(ctx, fresh)
	if err != nil {
		return fresh, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := s.allowConnections(ctx, fresh, false); err != nil {
		return fresh, err
	}
	if err := alone(ctx, conn); err != nil {
		return fresh, err
	}
	if err := s.base.reset(ctx, conn); err != nil {
		return fresh, err
	}
	return fresh, s.allowConnections(ctx, fresh, true)
}

// allowConnections closes the database to new connections while it is
// reset: an autovacuum worker that got in would hold back the rows the
// reset deletes.
func (s *server) allowConnections(ctx context.Context, name string, allow bool) error {
	if _, err := s.admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", ident(name), allow)); err != nil {
		return fmt.Errorf("allow connections %t to %s: %w", allow, name, err)
	}
	return nil
}

// alone ends every other session of conn's database and waits until they
// are gone.
func alone(ctx context.Context, conn *pgx.Conn) error {
	for range 250 {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			return fmt.Errorf("end other sessions: %w", err)
		}
		if others == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%w: other sessions would not end", errNotReusable)
}

// takeOver disconnects everyone from the database and renames it.
func (s *server) takeOver(ctx context.Context, name, fresh string) error {
	var err error
	for range 10 {
		if _, err = s.admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name); err != nil {
			return fmt.Errorf("disconnect %s: %w", name, err)
		}
		if _, err = s.admin.Exec(ctx, "ALTER DATABASE "+ident(name)+" RENAME TO "+ident(fresh)); err == nil {
			return nil
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "55006" { // object_in_use: a client reconnected meanwhile
			return fmt.Errorf("rename %s: %w", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("rename %s: %w", name, err)
}

// reset brings the database back to the baseline, or says why it cannot.
func (b *baseline) reset(ctx context.Context, conn *pgx.Conn) error {
	var writes int64
	var settings string
	if err := conn.QueryRow(ctx, schemaWritesSQL).Scan(&writes, &settings); err != nil {
		return fmt.Errorf("schema writes: %w", err)
	}
	if writes != 0 || settings != b.settings {
		return fmt.Errorf("%w: the test changed the schema", errNotReusable)
	}
	for table, want := range b.seeded {
		got, err := tableDigest(ctx, conn, table)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%w: the test changed the rows of %s", errNotReusable, table)
		}
	}
	dirty, err := b.dirtyTables(ctx, conn)
	if err != nil {
		return err
	}
	var sql strings.Builder
	sql.WriteString("SET session_replication_role = replica;")
	for _, t := range dirty {
		fmt.Fprintf(&sql, "DELETE FROM ONLY %s;", t)
	}
	sql.WriteString(b.setvals)
	sql.WriteString("RESET session_replication_role;")
	sql.WriteString("SELECT pg_current_xact_id()::text;")
	// One simple-protocol string: an implicit transaction.
	results, err := conn.PgConn().Exec(ctx, sql.String()).ReadAll()
	if err != nil {
		return fmt.Errorf("delete rows: %w", err)
	}
	last := results[len(results)-1]
	if len(last.Rows) != 1 {
		return fmt.Errorf("delete rows: no transaction id")
	}
	if err := awaitOlderTransactions(ctx, conn, string(last.Rows[0][0])); err != nil {
		return err
	}
	if err := rewriteEmpty(ctx, conn, dirty); err != nil {
		return err
	}
	return b.restoreStatistics(ctx, conn)
}

// horizonWait bounds how long a reset waits for the transactions that
// could still see the rows it deleted; rewriteEmpty retries after it.
var horizonWait = 3 * time.Second

// awaitOlderTransactions waits until every transaction that began before
// xid (the deletion's) has ended, in any database of the cluster: until
// then VACUUM FULL keeps the deleted rows (a clone of the template, which
// other tests start all the time, is such a transaction), and rewriting
// the tables again and again while it runs cost more than the rewrite.
func awaitOlderTransactions(ctx context.Context, conn *pgx.Conn, xid string) error {
	deadline := time.Now().Add(horizonWait)
	for {
		var passed bool
		if err := conn.QueryRow(ctx, "SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8", xid).Scan(&passed); err != nil {
			return fmt.Errorf("oldest running transaction: %w", err)
		}
		if passed || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rewriteEmpty rewrites the tables and their indexes to their empty size
// (VACUUM FULL). A transaction older than the deletion still running in
// any database of the cluster makes it keep the deleted rows: a table left
// with pages is rewritten again shortly after, and one that stays so makes
// the database not reusable.
func rewriteEmpty(ctx context.Context, conn *pgx.Conn, tables []string) error {
	for range 100 {
		if len(tables) == 0 {
			return nil
		}
		if _, err := conn.Exec(ctx, "VACUUM FULL "+strings.Join(tables, ", ")); err != nil {
			return fmt.Errorf("vacuum: %w", err)
		}
		rows, err := conn.Query(ctx, "SELECT t FROM unnest($1::text[]) AS t WHERE pg_relation_size(t::regclass) > 0", tables)
		if err != nil {
			return fmt.Errorf("table sizes: %w", err)
		}
		if tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return fmt.Errorf("table sizes: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%w: %d tables kept their deleted rows", errNotReusable, len(tables))
}

// dirtyTables lists the tables a test wrote to, but the seeded ones.
func (b *baseline) dirtyTables(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, dirtyTablesSQL)
	if err != nil {
		return nil, fmt.Errorf("touched tables: %w", err)
	}
	touched, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("touched tables: %w", err)
	}
	return slices.DeleteFunc(touched, func(t string) bool {
		_, seeded := b.seeded[t]
		return seeded
	}), nil
}

// restoreStatistics puts back the template's relpages, reltuples and
// relallvisible (VACUUM and ANALYZE set them), drops planner statistics
// ANALYZE gathered, and zeroes the activity counters autovacuum acts on.
func (b *baseline) restoreStatistics(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, `WITH `+b.rels.ctes+`, stats AS (
	DELETE FROM pg_statistic s USING pg_class c
	WHERE c.oid = s.starelid AND `+ourTables+` AND s.starelid <> ALL($5::oid[])
)
SELECT pg_stat_force_next_flush()`,
		append(b.rels.restoreArgs(), b.statOIDs)...)
	if err != nil {
		return fmt.Errorf("restore statistics: %w", err)
	}
	// This connection's own counts were flushed when it went idle after
	// the statement above; the test's connections flushed theirs as they
	// exited.
	if _, err := conn.Exec(ctx, "SELECT pg_stat_reset()"); err != nil {
		return fmt.Errorf("reset activity counters: %w", err)
	}
	return nil
}
