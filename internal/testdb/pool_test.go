package testdb

import (
	"context"
	"sync"
	"testing"
)

// Two binaries of one run, as Serve's pool lets them: what one gives after
// resetting it, the other takes, and each pooled database goes to exactly
// one taker however many ask at once.
func TestPoolPassesDatabasesBetweenBinaries(t *testing.T) {
	ctx := context.Background()
	s := recyclingServer(t)
	// A pool of its own: under Serve, the run's other binaries share the
	// server and would take from the pool of the real template.
	binary := func() *server {
		return &server{ctx: ctx, baseURL: s.baseURL, admin: s.admin, template: s.template + "_pooltest", base: s.base, pool: true}
	}
	giver, taker := binary(), binary()
	if _, ok, err := taker.takePooled(ctx); err != nil || ok {
		t.Fatalf("took from an empty pool: %v %v", ok, err)
	}

	used, err := s.clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := giver.connect(ctx, used.name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
		VALUES (gen_uuidv7(), 'acme', 'p', 't', 'e', 'b', 'b')`); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	reset, err := giver.recycle(used.name)
	if err != nil {
		t.Fatalf("recycle: %v", err)
	}
	if !giver.givePooled(reset) {
		t.Fatal("the reset database was not given to the pool")
	}
	got, ok, err := taker.takePooled(ctx)
	if err != nil || !ok || !got.pooled {
		t.Fatalf("take from the pool: %+v %v %v", got, ok, err)
	}
	t.Cleanup(func() { s.release(got.name) })
	fresh, err := s.clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.release(fresh.name) })
	if got, want := describe(ctx, t, s, got.name), describe(ctx, t, s, fresh.name); got != want {
		t.Errorf("database from the pool differs from a fresh clone:\n%s", lineDiff(got, want))
	}

	const pooled, takers = 2, 6
	for range pooled {
		db, err := s.clone(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !giver.givePooled(db.name) {
			t.Fatal("a fresh clone was not given to the pool")
		}
	}
	var mu sync.Mutex
	var taken []string
	var wg sync.WaitGroup
	for range takers {
		wg.Go(func() {
			db, ok, err := binary().takePooled(ctx)
			if err != nil {
				t.Errorf("take from the pool: %v", err)
			}
			if ok {
				mu.Lock()
				taken = append(taken, db.name)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, name := range taken {
		t.Cleanup(func() { s.release(name) })
	}
	if len(taken) != pooled {
		t.Errorf("%d takers got %d databases from a pool of %d: %v", takers, len(taken), pooled, taken)
	}
}
