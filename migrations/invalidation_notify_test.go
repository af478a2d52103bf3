package migrations_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const invalidationNotifyVersion = 59

// TestInvalidationNotifyUpgrade: on a database of the release before
// 00059, populated, the upgrade adds the triggers that notify
// ar_invalidate: the changes the instances' caches follow notify once they
// commit, rolled-back ones and the frequent updates that change nothing
// cached stay silent.
func TestInvalidationNotifyUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, invalidationNotifyVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	tok := v7(t)
	f.must("access_tokens", row{"id", tok, "namespace_id", ns, "name", "old", "token_sha256", digest("old"), "scopes", []int16{0}})
	f.must("token_signing_keys", row{"key", digest("key 1")})

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN ar_invalidate"); err != nil {
		t.Fatal(err)
	}
	// expect runs sql and checks the notifications it caused ("" for none).
	expect := func(want, sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		switch {
		case want == "" && err == nil:
			t.Errorf("%s: notified %q, want nothing", sql, n.Payload)
		case want == "" && errors.Is(err, context.DeadlineExceeded):
		case err != nil:
			t.Errorf("%s: %v, want %q", sql, err, want)
		case n.Channel != "ar_invalidate" || n.Payload != want:
			t.Errorf("%s: notified %s %q, want %q", sql, n.Channel, n.Payload, want)
		}
	}
	tokWant := "token " + ns.String() + " " + tok.String()
	expect("", `UPDATE access_tokens SET last_used_at = now() WHERE id = $1`, tok)
	expect(tokWant, `UPDATE access_tokens SET expires_at = now() + interval '1 day' WHERE id = $1`, tok)
	expect(tokWant, `UPDATE access_tokens SET revoked_at = now() WHERE id = $1`, tok)
	expect("", `UPDATE access_tokens SET revoked_at = revoked_at WHERE id = $1`, tok)
	expect("", `UPDATE namespaces SET trash_retention_days = 3 WHERE id = $1`, ns)
	expect("namespace "+ns.String(), `UPDATE namespaces SET suspended_at = now() WHERE id = $1`, ns)
	expect("namespace "+ns.String(), `UPDATE namespaces SET blocked_at = now(), disabled_at = now() WHERE id = $1`, ns)
	expect("signing-keys", `UPDATE token_signing_keys SET retired_at = now() WHERE retired_at IS NULL`)
	expect("signing-keys", `INSERT INTO token_signing_keys (key) VALUES ($1)`, digest("key 2"))
	expect(tokWant, `DELETE FROM access_tokens WHERE id = $1`, tok)

	// A change rolled back notifies no one.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE namespaces SET deleted_at = now() WHERE id = $1`, ns); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil || err.Error() != "roll back" {
		t.Fatalf("rolled-back delete: %v", err)
	}
	expect("", `SELECT 1`)
}
