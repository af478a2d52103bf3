package lazytx_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/internal/lazytx"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// flushes counts the writes the pool's connections make to the server: a
// pipeline is one write, so the count is the round trips.
type flushes struct{ n atomic.Int64 }

type countingConn struct {
	net.Conn
	f *flushes
}

func (c countingConn) Write(b []byte) (int, error) {
	c.f.n.Add(1)
	return c.Conn.Write(b)
}

func newPool(t *testing.T) (*pgxpool.Pool, *flushes) {
	t.Helper()
	cfg := testdb.NewConfig(t)
	f := &flushes{}
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, f: f}, nil
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE lazy (k int PRIMARY KEY, v text)`); err != nil {
		t.Fatal(err)
	}
	return pool, f
}

var settings = []lazytx.Setting{{Name: "lock_timeout", Value: "1234ms"}, {Name: "artifact_registry.actor", Value: "admin:o'brien"}}

func begin(t *testing.T, pool *pgxpool.Pool) *lazytx.Tx {
	t.Helper()
	tx, err := lazytx.Begin(context.Background(), pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, settings...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// The first statement runs inside the transaction, with the settings
// applied, and costs the one round trip of its own: the BEGIN and the
// settings travel with it.
func TestFirstStatementCarriesTheBegin(t *testing.T) {
	ctx := context.Background()
	pool, f := newPool(t)
	const read = `SELECT current_setting('lock_timeout'), current_setting('artifact_registry.actor'),
		current_setting('transaction_isolation'), pg_current_xact_id()::text`
	run := func() (lock, actor, iso, xact string) {
		tx := begin(t, pool)
		if err := tx.QueryRow(ctx, read, pgx.QueryExecModeCacheStatement).Scan(&lock, &actor, &iso, &xact); err != nil {
			t.Fatal(err)
		}
		var again string
		if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&again); err != nil {
			t.Fatal(err)
		}
		if again != xact {
			t.Fatalf("the second statement ran in transaction %s, the first in %s", again, xact)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return
	}
	run() // prepares the statements on the connection
	before := f.n.Load()
	lock, actor, iso, _ := run()
	if lock != "1234ms" || actor != "admin:o'brien" || iso != "read committed" {
		t.Fatalf("settings in the transaction: lock_timeout %q, actor %q, isolation %q", lock, actor, iso)
	}
	// The first statement with its BEGIN, the second, the COMMIT.
	if got := f.n.Load() - before; got != 3 {
		t.Fatalf("%d round trips for two statements and a commit, want 3", got)
	}
	var outside string
	if err := pool.QueryRow(ctx, `SELECT current_setting('lock_timeout')`).Scan(&outside); err != nil {
		t.Fatal(err)
	}
	if outside == "1234ms" {
		t.Fatal("the transaction's lock timeout outlived it")
	}
}

// A batch sent before the transaction began travels with the BEGIN too:
// its statements run inside the transaction, with the settings applied,
// and their results come back in order.
func TestFirstBatchCarriesTheBegin(t *testing.T) {
	ctx := context.Background()
	pool, f := newPool(t)
	run := func() (lock string, xacts [2]string, k int) {
		tx := begin(t, pool)
		b := &pgx.Batch{}
		b.Queue(`SELECT current_setting('lock_timeout'), pg_current_xact_id()::text`)
		b.Queue(`INSERT INTO lazy VALUES (1 + (SELECT count(*) FROM lazy), 'b') RETURNING k`)
		b.Queue(`SELECT pg_current_xact_id()::text`)
		br := tx.SendBatch(ctx, b)
		if err := br.QueryRow().Scan(&lock, &xacts[0]); err != nil {
			t.Fatal(err)
		}
		if err := br.QueryRow().Scan(&k); err != nil {
			t.Fatal(err)
		}
		if err := br.QueryRow().Scan(&xacts[1]); err != nil {
			t.Fatal(err)
		}
		if err := br.Close(); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return lock, xacts, k
	}
	run() // prepares the statements on the connection
	before := f.n.Load()
	lock, xacts, k := run()
	if lock != "1234ms" || xacts[0] != xacts[1] || k != 2 {
		t.Fatalf("lock_timeout %q, transactions %q, inserted %d: want the settings, one transaction, the second row", lock, xacts, k)
	}
	// The batch with its BEGIN, the COMMIT.
	if got := f.n.Load() - before; got != 2 {
		t.Fatalf("%d round trips for a batch and a commit, want 2", got)
	}
}

func count(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM lazy`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCommitAndRollback(t *testing.T) {
	ctx := context.Background()
	pool, _ := newPool(t)
	tx := begin(t, pool)
	if _, err := tx.Exec(ctx, `INSERT INTO lazy VALUES (1, 'a')`); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool); n != 0 {
		t.Fatalf("another connection sees %d rows before the commit", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("rollback after commit: %v, want ErrTxClosed", err)
	}
	tx = begin(t, pool)
	rows, err := tx.Query(ctx, `INSERT INTO lazy VALUES (2, 'b'), (3, 'c') RETURNING k`)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil || len(ks) != 2 {
		t.Fatalf("rows %v, %v", ks, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, pool); n != 1 {
		t.Fatalf("%d rows after a commit of one and a rollback of two", n)
	}
	if s := pool.Stat(); s.AcquiredConns() != 0 {
		t.Fatalf("%d connections still acquired", s.AcquiredConns())
	}
}

// A transaction that runs nothing sends nothing, and gives its
// connection back.
func TestEmptyTransactionSendsNothing(t *testing.T) {
	ctx := context.Background()
	pool, f := newPool(t)
	before := f.n.Load()
	tx := begin(t, pool)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.n.Load() - before; got != 0 {
		t.Fatalf("%d round trips for an empty transaction", got)
	}
	if s := pool.Stat(); s.AcquiredConns() != 0 {
		t.Fatalf("%d connections still acquired", s.AcquiredConns())
	}
}

// A failing first statement fails the transaction like any statement: the
// error is the statement's, later statements are refused, and a rollback
// leaves a clean connection in the pool.
func TestFailingFirstStatement(t *testing.T) {
	ctx := context.Background()
	pool, _ := newPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO lazy VALUES (1, 'a')`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func(tx pgx.Tx) error
	}{
		{"exec", func(tx pgx.Tx) error { _, err := tx.Exec(ctx, `INSERT INTO lazy VALUES (1, 'dup')`); return err }},
		{"query row", func(tx pgx.Tx) error {
			var k int
			return tx.QueryRow(ctx, `INSERT INTO lazy VALUES (1, 'dup') RETURNING k`).Scan(&k)
		}},
		{"query", func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `INSERT INTO lazy VALUES (1, 'dup') RETURNING k`)
			if err != nil {
				return err
			}
			_, err = pgx.CollectRows(rows, pgx.RowTo[int])
			return err
		}},
		{"batch", func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO lazy VALUES (2, 'b')`)
			b.Queue(`INSERT INTO lazy VALUES (1, 'dup')`)
			br := tx.SendBatch(ctx, b)
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("the statement before the failing one: %w", err)
			}
			_, err := br.Exec()
			_ = br.Close()
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := begin(t, pool)
			err := tc.run(tx)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
				t.Fatalf("first statement: %v, want a unique violation", err)
			}
			if _, err := tx.Exec(ctx, `SELECT 1`); err == nil {
				t.Fatal("a statement after the failure ran")
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM lazy`).Scan(&n); err != nil || n != 1 {
				t.Fatalf("after the rollback: %d rows, %v", n, err)
			}
		})
	}
}

// A setting the server refuses fails the first statement, which does not
// run outside a transaction.
func TestRefusedSetting(t *testing.T) {
	ctx := context.Background()
	pool, _ := newPool(t)
	tx, err := lazytx.Begin(ctx, pool, pgx.TxOptions{}, lazytx.Setting{Name: "lock_timeout", Value: "soon"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO lazy VALUES (7, 'x')`); err == nil {
		t.Fatal("the statement ran despite the refused setting")
	}
	_ = tx.Rollback(ctx)
	if n := count(t, pool); n != 0 {
		t.Fatalf("%d rows after a refused begin", n)
	}
}

// Statements that ask for another mode than the cached statement, and the
// methods that hand out the connection, begin on their own first: they
// too run inside the transaction.
func TestOtherModesRunInTheTransaction(t *testing.T) {
	ctx := context.Background()
	pool, _ := newPool(t)
	for name, first := range map[string]func(tx pgx.Tx) error{
		"simple protocol": func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO lazy VALUES (1, 'a')`, pgx.QueryExecModeSimpleProtocol)
			return err
		},
		"describe": func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO lazy VALUES ($1, 'a')`, pgx.QueryExecModeCacheDescribe, 1)
			return err
		},
		"conn": func(tx pgx.Tx) error {
			return tx.Conn().PgConn().Exec(ctx, `INSERT INTO lazy VALUES (1, 'a')`).Close()
		},
		"batch": func(tx pgx.Tx) error {
			b := &pgx.Batch{}
			b.Queue(`INSERT INTO lazy VALUES (1, 'a')`)
			return tx.SendBatch(ctx, b).Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			tx := begin(t, pool)
			if err := first(tx); err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			if n := count(t, pool); n != 0 {
				t.Fatalf("%d rows left by a rolled-back transaction", n)
			}
		})
	}
}

// Transactions on one pool, concurrently (run with -race).
func TestConcurrentTransactions(t *testing.T) {
	ctx := context.Background()
	pool, _ := newPool(t)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				tx, err := lazytx.Begin(ctx, pool, pgx.TxOptions{}, settings...)
				if err != nil {
					t.Error(err)
					return
				}
				k := w*100 + i
				if _, err := tx.Exec(ctx, `INSERT INTO lazy VALUES ($1, 'x')`, k); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					err = tx.Commit(ctx)
				} else {
					err = tx.Rollback(ctx)
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := count(t, pool); n != 8*13 {
		t.Fatalf("%d rows, want %d", n, 8*13)
	}
}

// After Commit or Rollback, a transaction that never began refuses
// statements as pgx's does, with ErrTxClosed.
func TestStatementsAfterTheEnd(t *testing.T) {
	ctx := context.Background()
	pool, _ := newPool(t)
	for name, end := range map[string]func(*lazytx.Tx) error{
		"commit":   func(tx *lazytx.Tx) error { return tx.Commit(ctx) },
		"rollback": func(tx *lazytx.Tx) error { return tx.Rollback(ctx) },
	} {
		t.Run(name, func(t *testing.T) {
			tx := begin(t, pool)
			if err := end(tx); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO lazy VALUES (1, 'late')`); !errors.Is(err, pgx.ErrTxClosed) {
				t.Fatalf("exec after %s: %v, want ErrTxClosed", name, err)
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&n); !errors.Is(err, pgx.ErrTxClosed) {
				t.Fatalf("query after %s: %v, want ErrTxClosed", name, err)
			}
			if err := tx.Commit(ctx); !errors.Is(err, pgx.ErrTxClosed) {
				t.Fatalf("second commit after %s: %v, want ErrTxClosed", name, err)
			}
		})
	}
}

// A first statement's error is reported once, not once per layer that
// saw it.
func TestFirstErrorReportedOnce(t *testing.T) {
	ctx := context.Background()
	pool, _ := newPool(t)
	tx := begin(t, pool)
	_, err := tx.Exec(ctx, `SELECT 1/0`)
	if err == nil {
		t.Fatal("division by zero succeeded")
	}
	if n := strings.Count(err.Error(), "division by zero"); n != 1 {
		t.Fatalf("the error names its cause %d times: %v", n, err)
	}
}
