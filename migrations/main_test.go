package migrations_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m, dropTemplates) }

// SQLSTATEs the constraint tests expect.
const (
	codeCheck      = "23514" // check_violation (also the immutable-slug trigger)
	codeUnique     = "23505" // unique_violation
	codeForeignKey = "23503" // foreign_key_violation (NO ACTION and RESTRICT refusals too)
	codeNotNull    = "23502" // not_null_violation
)

// db is what both *pgxpool.Pool and pgx.Tx offer.
type db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// v7 returns a fresh UUIDv7, as the application generates ids.
func v7(t testing.TB) uuid.UUID {
	t.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// digest returns a deterministic 32-byte sha256 for a label.
func digest(label string) []byte {
	s := sha256.Sum256([]byte(label))
	return s[:]
}

// row is an ordered column list for insert.
type row []any // col1, val1, col2, val2, ...

// insert runs INSERT INTO table (cols) VALUES (args).
func insert(ctx context.Context, q db, table string, r row) error {
	if len(r)%2 != 0 {
		return fmt.Errorf("insert %s: odd row", table)
	}
	cols := make([]string, 0, len(r)/2)
	ph := make([]string, 0, len(r)/2)
	args := make([]any, 0, len(r)/2)
	for i := 0; i < len(r); i += 2 {
		cols = append(cols, r[i].(string))
		args = append(args, r[i+1])
		ph = append(ph, fmt.Sprintf("$%d", len(args)))
	}
	_, err := q.Exec(ctx, fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)",
		table, strings.Join(cols, ", "), strings.Join(ph, ", ")), args...)
	return err
}

// sqlState returns the SQLSTATE of err, "" for nil, "?" for a non-PG error.
func sqlState(err error) string {
	if err == nil {
		return ""
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return "?"
}

// fixture builds rows through q, failing the test on any error.
type fixture struct {
	t   testing.TB
	ctx context.Context
	q   db
}

func newFixture(t testing.TB, q db) *fixture {
	return &fixture{t: t, ctx: context.Background(), q: q}
}

func (f *fixture) must(table string, r row) {
	f.t.Helper()
	if err := insert(f.ctx, f.q, table, r); err != nil {
		f.t.Fatalf("insert %s: %v", table, err)
	}
}

// namespace inserts a namespace with a unique slug and anchor.
func (f *fixture) namespace() uuid.UUID {
	f.t.Helper()
	id := v7(f.t)
	f.must("namespaces", row{"id", id, "slug", "ns-" + id.String(), "platform", "gitlab",
		"entity_type", "organization", "entity_id", id.String(),
		"billing_entity_type", "organization", "billing_entity_id", id.String()})
	return id
}

// collection inserts a repository collection.
func (f *fixture) collection(ns uuid.UUID, name string, isDefault bool) uuid.UUID {
	f.t.Helper()
	id := v7(f.t)
	f.must("repository_collections", row{"id", id, "namespace_id", ns, "name", name, "is_default", isDefault})
	return id
}

// repository inserts a repositories row.
func (f *fixture) repository(ns uuid.UUID, format, kind int16) uuid.UUID {
	f.t.Helper()
	id := v7(f.t)
	f.must("repositories", row{"id", id, "namespace_id", ns, "name", "repo-" + id.String(),
		"format", format, "kind", kind, "visibility", int16(1)})
	return id
}

// child inserts a format child row (id, namespace_id, repository_id) into
// table, e.g. container_repositories.
func (f *fixture) child(table string, ns, repo uuid.UUID) uuid.UUID {
	f.t.Helper()
	id := v7(f.t)
	f.must(table, row{"id", id, "namespace_id", ns, "repository_id", repo})
	return id
}

// key inserts an active namespace encryption key of the given version.
func (f *fixture) key(ns uuid.UUID, version int) uuid.UUID {
	f.t.Helper()
	id := v7(f.t)
	f.must("namespace_encryption_keys", row{"id", id, "namespace_id", ns, "version", version,
		"wrapped_key", []byte("wrapped"), "root_key_uri", "kms://root/1", "active", true})
	return id
}

// blob inserts a blob row and one attachment; it returns the attachment id.
func (f *fixture) blob(ns uuid.UUID, sha []byte, size int64) int64 {
	f.t.Helper()
	if _, err := f.q.Exec(f.ctx, `INSERT INTO blob_storage_blobs (namespace_id, sha256, size, object_storage_key)
		VALUES ($1, $2, $3, 'objects/' || encode($2, 'hex')) ON CONFLICT (namespace_id, sha256) DO NOTHING`,
		ns, sha, size); err != nil {
		f.t.Fatalf("insert blob: %v", err)
	}
	return f.attach(ns, sha)
}

// attach inserts an attachment of an existing blob and returns its id.
func (f *fixture) attach(ns uuid.UUID, sha []byte) int64 {
	f.t.Helper()
	var id int64
	if err := f.q.QueryRow(f.ctx, `INSERT INTO blob_storage_attachments (namespace_id, sha256)
		VALUES ($1, $2) RETURNING id`, ns, sha).Scan(&id); err != nil {
		f.t.Fatalf("insert attachment: %v", err)
	}
	return id
}

// count returns SELECT count(*) FROM table WHERE <where>.
func (f *fixture) count(table, where string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.q.QueryRow(f.ctx, "SELECT count(*) FROM "+table+" WHERE "+where, args...).Scan(&n); err != nil {
		f.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// queryStrings returns the single text column of every row, sorted.
func queryStrings(ctx context.Context, t testing.TB, q db, sql string, args ...any) []string {
	t.Helper()
	out := queryLines(ctx, t, q, sql, args...)
	sort.Strings(out)
	return out
}

// planOf returns the lines EXPLAIN prints for sql (which starts with
// EXPLAIN and its options), in order.
func planOf(ctx context.Context, t testing.TB, q db, sql string, args ...any) string {
	t.Helper()
	return strings.Join(queryLines(ctx, t, q, sql, args...), "\n") + "\n"
}

// queryLines returns the single text column of every row, in order.
func queryLines(ctx context.Context, t testing.TB, q db, sql string, args ...any) []string {
	t.Helper()
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("query: %v\n%s", err, sql)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("query: %v\n%s", err, sql)
	}
	return out
}
