package testdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Two binaries of one run, as Serve's pool lets them: what one gives after
// resetting it, the other takes, and each pooled database goes to exactly
// one taker however many ask at once.
func TestPoolPassesDatabasesBetweenBinaries(t *testing.T) {
	ctx := context.Background()
	s := recyclingServer(t)
	// A pool of its own, named apart from the real template's (not a
	// prefix of it): under Serve, the run's other binaries share the
	// server and would take from that pool.
	binary := func() *server {
		return &server{ctx: ctx, baseURL: s.baseURL, admin: s.admin, template: templatePrefix + "pooltest", base: s.base, pool: true}
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

// A binary under Serve waits for the server file, and reports Serve's
// failure as its own.
func TestAwaitServer(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "server")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := awaitServer(ctx, file); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("no file yet: %v, want the context's deadline", err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = os.WriteFile(file, []byte("postgres://host/postgres"), 0o600)
	}()
	if url, err := awaitServer(context.Background(), file); err != nil || url != "postgres://host/postgres" {
		t.Fatalf("awaitServer = %q, %v", url, err)
	}
	if err := os.WriteFile(file, []byte(serverFailed+"initdb failed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := awaitServer(context.Background(), file); err == nil || !strings.Contains(err.Error(), "initdb failed") {
		t.Fatalf("after a failed start: %v", err)
	}
}
