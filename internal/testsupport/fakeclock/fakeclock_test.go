package fakeclock

import (
	"sync"
	"testing"
	"time"
)

var start = time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)

func TestNowMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	c := New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	c.Advance(time.Hour)
	if got := c.Now(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("after Advance: Now = %v", got)
	}
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("after Set: Now = %v", got)
	}
}

func TestConcurrentAdvance(t *testing.T) {
	t.Parallel()
	c := New(start)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			c.Advance(time.Second)
			_ = c.Now()
		})
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(start.Add(50 * time.Second)) {
		t.Fatalf("Now = %v, want 50 s after start", got)
	}
}
