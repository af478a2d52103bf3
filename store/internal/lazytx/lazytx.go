// Package lazytx opens transactions whose BEGIN travels with their first
// statement. A foreground transaction of the store begins with BEGIN and
// a few set_config calls (its lock timeout, the actor its audit triggers
// record): sent on their own they cost a round trip to the server before
// the first statement can go, one of the five to ten a blob or manifest
// push makes. Here they are queued in one pipeline with the first
// statement (pgx's Batch.BeginTx), so a transaction costs its statements
// and its COMMIT and nothing more.
package lazytx

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Setting is a transaction-local setting applied right after BEGIN
// (set_config(Name, Value, true), as SET LOCAL does).
type Setting struct{ Name, Value string }

// setConfigSQLs[n] is the one statement that applies n settings, built
// once rather than at every begin.
var setConfigSQLs = func() (out [8]string) {
	for n := 1; n < len(out); n++ {
		out[n] = setConfigSQL(n)
	}
	return out
}()

// setConfigSQL builds the statement that applies n settings.
func setConfigSQL(n int) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "set_config($%d, $%d, true)", 2*i+1, 2*i+2)
	}
	return b.String()
}

// settingsSQL is setConfigSQLs[n], or the statement built for n beyond.
func settingsSQL(n int) string {
	if n < len(setConfigSQLs) {
		return setConfigSQLs[n]
	}
	return setConfigSQL(n)
}

// Tx is a pgx.Tx on a pooled connection that is begun by its first
// statement. Commit and Rollback return the connection to the pool; a
// transaction that ran no statement sends nothing at all.
type Tx struct {
	c        *pgxpool.Conn // held from Begin until Commit or Rollback
	opts     pgx.TxOptions
	settings []Setting
	tx       pgx.Tx // the transaction once begun
	done     bool
	// cacheMode: the connections run batches as cached statements, so a
	// statement asking for that mode may join the pipeline.
	cacheMode bool
}

// cacheModes remembers, per pool, whether its connections' default mode
// is the cached statement (reading it copies the pool's configuration).
// A DATABASE_URL may choose another mode, for a pooler in front of
// PostgreSQL; the pipeline then runs in that mode, and a statement that
// asked for the cached one begins on its own instead.
var cacheModes sync.Map // *pgxpool.Pool -> bool

func cacheMode(pool *pgxpool.Pool) bool {
	if v, ok := cacheModes.Load(pool); ok {
		return v.(bool)
	}
	m := pool.Config().ConnConfig.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
	cacheModes.Store(pool, m)
	return m
}

var _ pgx.Tx = (*Tx)(nil)

// Begin acquires a connection from pool for a transaction of opts whose
// settings take effect before its first statement runs.
func Begin(ctx context.Context, pool *pgxpool.Pool, opts pgx.TxOptions, settings ...Setting) (*Tx, error) {
	c, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &Tx{c: c, opts: opts, settings: settings, cacheMode: cacheMode(pool)}, nil
}

// start sends BEGIN and the settings, then the queued statements in the
// same pipeline, and reads the results up to theirs, which are left to
// the caller in br (nil without statements). On an error, nothing is
// left open but the transaction, which Rollback ends.
func (t *Tx) start(ctx context.Context, queued ...*pgx.QueuedQuery) (pgx.BatchResults, error) {
	if t.done {
		return nil, pgx.ErrTxClosed
	}
	b := &pgx.Batch{}
	b.BeginTx(t.opts)
	if len(t.settings) > 0 {
		pairs := make([]any, 0, 2*len(t.settings))
		for _, s := range t.settings {
			pairs = append(pairs, s.Name, s.Value)
		}
		b.Queue(settingsSQL(len(t.settings)), pairs...)
	}
	lead := b.Len() // the results read here
	b.QueuedQueries = append(b.QueuedQueries, queued...)
	br := t.c.Conn().SendBatch(ctx, b)
	t.tx = br.Tx()
	for range lead {
		if _, err := br.Exec(); err != nil {
			_ = br.Close() // it reports the same error
			return nil, err
		}
	}
	if len(queued) == 0 {
		return nil, br.Close()
	}
	return br, nil
}

// begun makes sure the transaction has begun, for the methods that hand
// the connection to other code.
func (t *Tx) begun(ctx context.Context) error {
	if t.tx != nil {
		return nil
	}
	_, err := t.start(ctx)
	return err
}

// pipelined returns the arguments of a statement that may join the
// pipeline (ok), without its mode argument: a batch runs in the
// connection's default mode and takes no mode argument, so a statement
// asking for another mode than the cached statement (the default, which
// every hot statement uses) goes on its own after the begin.
func (t *Tx) pipelined(args []any) (rest []any, ok bool) {
	if !t.cacheMode {
		return nil, false
	}
	if len(args) == 0 {
		return args, true
	}
	mode, isMode := args[0].(pgx.QueryExecMode)
	if !isMode {
		return args, true
	}
	return args[1:], mode == pgx.QueryExecModeCacheStatement
}

// first sends sql as the transaction's first statement, in one pipeline
// with the begin, and returns the results to read its own from (br); or,
// once begun or when sql cannot join the pipeline, the transaction to run
// it on (tx).
func (t *Tx) first(ctx context.Context, sql string, args []any) (br pgx.BatchResults, tx pgx.Tx, err error) {
	if t.tx != nil {
		return nil, t.tx, nil
	}
	if t.done {
		return nil, nil, pgx.ErrTxClosed
	}
	rest, ok := t.pipelined(args)
	if !ok {
		if err := t.begun(ctx); err != nil {
			return nil, nil, err
		}
		return nil, t.tx, nil
	}
	br, err = t.start(ctx, &pgx.QueuedQuery{SQL: sql, Arguments: rest})
	return br, nil, err
}

func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	br, tx, err := t.first(ctx, sql, args)
	switch {
	case err != nil:
		return pgconn.CommandTag{}, err
	case tx != nil:
		return tx.Exec(ctx, sql, args...)
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	br, tx, err := t.first(ctx, sql, args)
	switch {
	case err != nil:
		return nil, err
	case tx != nil:
		return tx.Query(ctx, sql, args...)
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close() // it reports the same error
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	return &row{rows: rows, err: err}
}

func (t *Tx) Begin(ctx context.Context) (pgx.Tx, error) {
	if err := t.begun(ctx); err != nil {
		return nil, err
	}
	return t.tx.Begin(ctx)
}

// SendBatch sends b, in one pipeline with the begin when the transaction
// has not begun yet: a batch runs in the connection's default mode
// either way.
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.tx != nil || b.Len() == 0 {
		if err := t.begun(ctx); err != nil {
			return pgx.FailedBatchResults(b, err)
		}
		return t.tx.SendBatch(ctx, b)
	}
	br, err := t.start(ctx, b.QueuedQueries...)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return br
}

func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.begun(ctx); err != nil {
		return 0, err
	}
	return t.tx.CopyFrom(ctx, table, columns, src)
}

func (t *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.begun(ctx); err != nil {
		return nil, err
	}
	return t.tx.Prepare(ctx, name, sql)
}

// LargeObjects and Conn hand out the connection with no context to begin
// under: they begin without one, and when that fails they close the
// connection, so that nothing can run on it outside the transaction.
func (t *Tx) LargeObjects() pgx.LargeObjects {
	t.mustBegin()
	if t.tx == nil {
		return pgx.LargeObjects{}
	}
	return t.tx.LargeObjects()
}

func (t *Tx) Conn() *pgx.Conn {
	if t.c == nil {
		return nil
	}
	t.mustBegin()
	return t.c.Conn()
}

func (t *Tx) mustBegin() {
	if t.c == nil || t.begun(context.Background()) == nil {
		return
	}
	_ = t.c.Conn().Close(context.Background())
}

// Commit commits the transaction, if it began, and returns the
// connection to the pool.
func (t *Tx) Commit(ctx context.Context) error { return t.end(ctx, pgx.Tx.Commit) }

// Rollback rolls the transaction back, if it began, and returns the
// connection to the pool; after Commit it returns pgx.ErrTxClosed.
func (t *Tx) Rollback(ctx context.Context) error { return t.end(ctx, pgx.Tx.Rollback) }

// end ends the transaction with how (pgx's Commit or Rollback) if it
// began, and returns the connection.
func (t *Tx) end(ctx context.Context, how func(pgx.Tx, context.Context) error) error {
	if t.done {
		return pgx.ErrTxClosed
	}
	var err error
	if t.tx != nil {
		err = how(t.tx, ctx)
	}
	t.release()
	return err
}

// release returns the connection; the pool destroys it instead when it
// is still inside a transaction or busy (a commit that failed midway).
func (t *Tx) release() {
	t.done = true
	t.c.Release()
	t.c = nil
}

// batchRows are the rows of a pipeline's last statement: closing them
// closes the pipeline, which frees the connection for the next one.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// row is QueryRow's pgx.Row, as pgx's own: the first row, ErrNoRows
// without one.
type row struct {
	rows pgx.Rows
	err  error
}

func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	_ = r.rows.Scan(dest...) // its error is the rows' Err, as in pgx's Row
	r.rows.Close()
	return r.rows.Err()
}
