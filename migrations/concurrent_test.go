package migrations_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/migrations"
)

// Several instances starting together on a fresh database each run Up:
// the advisory lock makes them take turns, so all succeed and the schema
// is applied once.
func TestUpConcurrentProcesses(t *testing.T) {
	ctx := context.Background()
	first := emptyDatabase(t)
	const instances = 3
	pools := []*pgxpool.Pool{first}
	for range instances - 1 {
		p, err := pgxpool.NewWithConfig(ctx, first.Config().Copy())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		pools = append(pools, p)
	}
	start := make(chan struct{})
	errs := make([]error, instances)
	var wg sync.WaitGroup
	for i, p := range pools {
		wg.Go(func() {
			<-start
			errs[i] = migrations.Up(ctx, p)
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d concurrent Up calls took %s", instances, time.Since(began).Round(time.Millisecond))
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: Up: %v", i, err)
		}
	}
	st, err := migrations.Check(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Current() {
		t.Fatalf("schema not current after concurrent Up: %+v", st)
	}
	var locks int
	if err := first.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'`).Scan(&locks); err != nil {
		t.Fatal(err)
	}
	if locks != 0 {
		t.Fatalf("%d advisory locks still held after Up returned", locks)
	}
}
