// Package fakeclock is a clock for tests that moves only when told to: it
// satisfies store.Clock (Now() time.Time), so a test can create something
// valid and then make it expire without sleeping.
//
// It imports nothing of this module, so any test can use it, including
// the internal tests of package store.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a stopped clock; it is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New is a clock stopped at t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now is the current test time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d (backwards when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set stops the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
