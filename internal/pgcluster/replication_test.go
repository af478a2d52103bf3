package pgcluster

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// A pair built the way the failover test builds it: the standby is
// synchronous (a commit on the primary is on the standby when it
// returns), read-only until promoted, and takes writes after the primary
// died and it was promoted.
func TestReplicationPair(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	popts := testOptions(t, true)
	popts.Replication = &Replication{Name: "primary", SynchronousStandbyNames: "standby"}
	primary := start(t, popts)
	if got := query(t, primary, "SELECT current_setting('synchronous_commit')"); got != "on" {
		t.Errorf("synchronous_commit = %q on a Fast primary, want on", got)
	}
	// Without its standby the primary's commits wait; synchronous_commit
	// local is how work is done before the standby exists.
	execSQL(t, primary, "SET synchronous_commit = local; CREATE TABLE acked (v int)")

	sopts := testOptions(t, true)
	sopts.Dir = filepath.Join(t.TempDir(), "standby")
	sopts.Replication = &Replication{Name: "standby"}
	standby, err := StartStandby(ctx, primary, sopts)
	if err != nil {
		t.Fatalf("StartStandby: %v", err)
	}
	t.Cleanup(func() { _ = standby.Stop(context.Background()) })
	if !standby.Created() {
		t.Error("standby not reported created")
	}
	assertOwnedByClusterUser(t, standby)
	waitFor(t, func() bool {
		return query(t, primary, "SELECT coalesce(string_agg(application_name || ':' || sync_state, ','), '') FROM pg_stat_replication") == "standby:sync"
	})
	execSQL(t, primary, "INSERT INTO acked VALUES (1)")
	// Synchronous commit waits for the standby's flush, not its replay:
	// the row is visible there shortly after.
	waitFor(t, func() bool { return query(t, standby, "SELECT count(*)::text FROM acked") == "1" })
	if got := query(t, standby, "SELECT pg_is_in_recovery()::text"); got != "true" {
		t.Fatalf("standby in recovery = %s", got)
	}

	if err := Kill(primary.Dir()); err != nil {
		t.Fatalf("kill primary: %v", err)
	}
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	execSQL(t, standby, "INSERT INTO acked VALUES (2)")
	if got := query(t, standby, "SELECT string_agg(v::text, ',' ORDER BY v) FROM acked"); got != "1,2" {
		t.Fatalf("rows on the promoted standby = %q, want 1,2", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
