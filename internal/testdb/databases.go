package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// database is a fresh clone of the template.
type database struct {
	name     string
	took     time.Duration // CREATE DATABASE time
	spare    bool          // cloned ahead of time, in the background
	recycled bool          // used by an earlier test and reset
	pooled   bool          // reset by another test binary (pool.go)
}

type spare struct {
	db  database
	err error
}

// startBackground starts the goroutine that drops released databases, so
// a test's cleanup does not wait for DROP DATABASE.
func (s *server) startBackground() {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.spares = make(chan spare, 1)
	s.recycled = make(chan database, recycledKept)
	s.drops = make(chan string, 64)
	s.dropDone = make(chan struct{})
	go s.dropLoop()
}

// take returns a recycled database if one is waiting, one from the pool
// (pool.go), or one being reset (a reset costs the machine less than a
// clone and a drop), else the database cloned ahead of time if there is
// one, else clones one now. Unless resets are under way it then starts
// cloning the next one, so a test that runs longer than a clone never
// waits for its successor's database.
func (s *server) take(ctx context.Context) (database, error) {
	if s.pool { // rather than wait for a reset of our own
		select {
		case db := <-s.recycled:
			return db, nil
		default:
		}
		if db, ok, err := s.takePooled(ctx); err != nil || ok {
			return db, err
		}
	}
	if db, ok := s.takeRecycled(ctx); ok {
		return db, nil
	}
	select {
	case sp, ok := <-s.spares:
		s.refillUnlessRecycling()
		if ok && sp.err == nil {
			return sp.db, nil
		}
		// The background clone failed (perhaps transiently): retry here,
		// where the error reaches a test.
	default:
		s.refillUnlessRecycling()
	}
	return s.fresh(ctx)
}

// recycleWait bounds how long a test waits for a reset under way before it
// takes a clone instead.
const recycleWait = 5 * time.Second

func (s *server) takeRecycled(ctx context.Context) (database, bool) {
	deadline := time.After(recycleWait)
	for {
		select {
		case db := <-s.recycled:
			return db, true
		default:
		}
		if s.recycling.Load() == 0 {
			return database{}, false
		}
		select {
		case db := <-s.recycled:
			return db, true
		case <-time.After(20 * time.Millisecond): // the reset may end in a drop
		case <-deadline:
			return database{}, false
		case <-ctx.Done():
			return database{}, false
		}
	}
}

func (s *server) refillUnlessRecycling() {
	if s.recycling.Load() == 0 {
		s.refill()
	}
}

// refill clones one spare database in the background unless one is
// already being cloned.
func (s *server) refill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.refilling {
		return
	}
	s.refilling = true
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		db, err := s.fresh(s.ctx)
		db.spare = true
		s.mu.Lock()
		s.refilling = false
		s.mu.Unlock()
		select {
		case s.spares <- spare{db, err}:
		default: // a spare is already waiting
			if err == nil {
				s.release(db.name)
			}
		}
	}()
}

// clone creates a database from the template. FILE_COPY copies the
// template's files instead of WAL-logging every block (PG15's default),
// which is much faster for a schema with thousands of partitions.
func (s *server) clone(ctx context.Context) (database, error) {
	name := randomName()
	start := time.Now()
	sql := fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", ident(name), ident(s.template))
	if _, err := s.admin.Exec(ctx, sql); err != nil {
		return database{}, fmt.Errorf("clone template %s: %w", s.template, err)
	}
	return database{name: name, took: time.Since(start)}, nil
}

func randomName() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand docs)
	return "test_" + hex.EncodeToString(b[:])
}

// release queues a database for recycling or dropping.
func (s *server) release(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		if s.base != nil {
			s.recycling.Add(1)
		}
		s.drops <- name // blocks when 64 drops are pending: back-pressure
	}
}

// dropLoop recycles (recycle.go) or drops released databases one at a
// time. Errors are reported when the test binary ends (the test that
// owned the database is over).
func (s *server) dropLoop() {
	defer close(s.dropDone)
	for name := range s.drops {
		s.recycleOrDrop(name)
		if s.base != nil {
			s.recycling.Add(-1)
		}
	}
}

func (s *server) recycleOrDrop(name string) {
	if s.cluster != nil && s.ctx.Err() != nil {
		return // shutting down: the whole cluster is about to be removed
	}
	if s.base != nil && s.ctx.Err() == nil {
		var err error
		if name, err = s.recycle(name); err == nil {
			select {
			case s.recycled <- database{name: name, recycled: true}:
				return
			default: // enough are waiting
			}
			if s.givePooled(name) {
				return
			}
		}
	}
	if err := s.drop(name); err != nil {
		s.errMu.Lock()
		s.dropErrs = append(s.dropErrs, err)
		s.errMu.Unlock()
	}
}

// drop removes a database, disconnecting anything the test leaked.
func (s *server) drop(name string) error {
	// Generous: dropping ~20,000 relation files takes long on a busy CI
	// machine, and a timeout here would fail a binary whose tests passed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// stopBackground cancels background clones, then drops what is left when
// the server outlives us (TEST_DATABASE_URL) and waits for the drops. With
// the pool, the resets under way finish first and what is clean is given
// to it instead.
func (s *server) stopBackground() []error {
	if s.cancel == nil {
		return nil
	}
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	if s.pool {
		close(s.drops)
		<-s.dropDone
	}
	s.cancel()
	s.bg.Wait()
	close(s.spares)
	if !s.pool {
		close(s.drops)
		<-s.dropDone
	}
	close(s.recycled)
	errs := s.dropErrs
	leave := func(name string) {
		if !s.givePooled(name) && s.cluster == nil {
			errs = append(errs, s.drop(name))
		}
	}
	for sp := range s.spares {
		if sp.err == nil {
			leave(sp.db.name)
		}
	}
	for db := range s.recycled {
		leave(db.name)
	}
	return errs
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }
