package countbuf

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type sink struct {
	mu      sync.Mutex
	batches [][]int
	err     error
}

func (s *sink) write(_ context.Context, b []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, slices.Clone(b))
	return s.err
}

func (s *sink) got() [][]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestWritesOnceASecond: counts added within a second are written
// together one second after the first, not one by one; the next count
// starts a new second.
func TestWritesOnceASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s sink
		b := New("test counts", quiet, s.write)
		b.Add(1)
		time.Sleep(Every / 2)
		b.Add(2)
		synctest.Wait()
		if got := s.got(); len(got) != 0 {
			t.Fatalf("written before the second was up: %v", got)
		}
		time.Sleep(Every / 2)
		synctest.Wait()
		if got := s.got(); len(got) != 1 || !slices.Equal(got[0], []int{1, 2}) {
			t.Fatalf("batches %v, want [[1 2]]", got)
		}
		b.Add(3)
		time.Sleep(Every)
		synctest.Wait()
		if got := s.got(); len(got) != 2 || !slices.Equal(got[1], []int{3}) {
			t.Fatalf("batches %v, want [[1 2] [3]]", got)
		}
	})
}

// TestFlushWritesAtOnce: Flush writes what is pending without waiting,
// and the timer it cancels writes nothing twice.
func TestFlushWritesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s sink
		b := New("test counts", quiet, s.write)
		b.Flush() // nothing pending: no write
		b.Add(7)
		b.Flush()
		time.Sleep(2 * Every)
		synctest.Wait()
		if got := s.got(); len(got) != 1 || !slices.Equal(got[0], []int{7}) {
			t.Fatalf("batches %v, want [[7]]", got)
		}
	})
}

// TestBoundedAndFailures: past MaxPending counts are dropped, not
// queued; a failed write loses its batch and the buffer keeps working.
func TestBoundedAndFailures(t *testing.T) {
	s := sink{err: errors.New("database down")}
	b := New("test counts", quiet, s.write)
	for i := range MaxPending + 10 {
		b.Add(i)
	}
	b.Flush()
	if got := s.got(); len(got) != 1 || len(got[0]) != MaxPending {
		t.Fatalf("wrote %d batches, the first of %d counts; want one of %d", len(got), len(got[0]), MaxPending)
	}
	s.err = nil
	b.Add(1)
	b.Flush()
	if got := s.got(); len(got) != 2 || !slices.Equal(got[1], []int{1}) {
		t.Fatalf("after a failed write: %v", got[1:])
	}
}

// TestConcurrentAdds: every count added from many goroutines is written
// exactly once (run with -race).
func TestConcurrentAdds(t *testing.T) {
	var s sink
	b := New("test counts", quiet, s.write)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				b.Add(g*1000 + i)
				if i%100 == 0 {
					b.Flush()
				}
			}
		})
	}
	wg.Wait()
	b.Flush()
	var all []int
	for _, batch := range s.got() {
		all = append(all, batch...)
	}
	slices.Sort(all)
	n := len(all)
	if distinct := len(slices.Compact(all)); n != 8*500 || distinct != n {
		t.Fatalf("wrote %d counts (%d distinct), want %d", n, distinct, 8*500)
	}
}
