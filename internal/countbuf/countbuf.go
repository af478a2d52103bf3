// Package countbuf keeps counted requests (downloads, cache hits and
// misses) in memory and writes them about once a second in one batch, so
// that a request never waits for its counters. These feed the buffered
// counters (docs/schema.md, "Buffered counters"), which accept that a
// crash loses the last second of counts.
package countbuf

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

const (
	// Every is how long a counted request waits to be written.
	Every = time.Second
	// MaxPending bounds the memory a burst can take: requests counted
	// beyond it before the next write are dropped, and the drop logged.
	MaxPending = 50000
	// writeTimeout bounds one write.
	writeTimeout = 10 * time.Second
)

// Buffer holds counted requests of type T until its write takes them.
type Buffer[T any] struct {
	what  string
	log   *slog.Logger
	write func(context.Context, []T) error

	mu      sync.Mutex
	pending []T
	dropped int
	timer   *time.Timer
}

// New returns a buffer that hands what it holds to write; what names the
// counts in the log lines of a failed write.
func New[T any](what string, log *slog.Logger, write func(context.Context, []T) error) *Buffer[T] {
	return &Buffer[T]{what: what, log: log, write: write}
}

// Add counts x; the write follows within Every.
func (b *Buffer[T]) Add(x T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) >= MaxPending {
		b.dropped++
		return
	}
	b.pending = append(b.pending, x)
	if b.timer == nil {
		b.timer = time.AfterFunc(Every, b.Flush)
	}
}

// Flush writes what is pending now (at shutdown, and in tests).
func (b *Buffer[T]) Flush() {
	b.mu.Lock()
	batch, dropped := b.pending, b.dropped
	b.pending, b.dropped = nil, 0
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.mu.Unlock()
	if dropped > 0 {
		b.log.Warn(b.what+" dropped (buffer full)", "count", dropped)
	}
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := b.write(ctx, batch); err != nil {
		b.log.Warn(b.what+" lost", "count", len(batch), "err", err)
	}
}
