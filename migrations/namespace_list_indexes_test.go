package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const namespaceListIndexesVersion = 51

// TestNamespaceListIndexesUpgrade: a database of the release before 00051,
// holding namespaces, upgrades with migrations.Up; the list's indexes
// exist and serve its queries over the existing rows (a slug prefix as a
// range of the byte-ordered index; the newest first).
func TestNamespaceListIndexesUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, namespaceListIndexesVersion)
	f := newFixture(t, pool)
	for range 5 {
		f.namespace()
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// Five rows: without this the planner reads the table whole.
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sql, index string }{
		{`SELECT slug FROM namespaces WHERE (slug COLLATE "C") >= 'ns-' AND (slug COLLATE "C") < 'ns-` + "\uffff" + `' ORDER BY (slug COLLATE "C") LIMIT 3`, "namespaces_slug_c_idx"},
		{`SELECT slug FROM namespaces ORDER BY created_at DESC, id DESC LIMIT 3`, "namespaces_created_at_idx"},
	} {
		plan := planOf(ctx, t, tx, "EXPLAIN "+c.sql)
		if !strings.Contains(plan, c.index) || strings.Contains(plan, "Sort") {
			t.Errorf("%s: want a scan of %s in order:\n%s", c.sql, c.index, plan)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM (`+c.sql+`) x`).Scan(&n); err != nil || n != 3 {
			t.Errorf("%s: %d rows, %v", c.sql, n, err)
		}
	}
}
