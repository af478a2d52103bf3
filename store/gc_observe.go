package store

import (
	"sync"
	"time"
)

// PushObserver receives the two push-path measurements
// (docs/garbage-collection.md "Operational controls") that
// decide the phase-3 gate: how long a push waited for blob-row locks, and
// how often a dedup skip had to check storage because of a live GC
// candidate. Package gc implements it with Prometheus metrics.
type PushObserver interface {
	// ObserveBlobLockWait: time spent acquiring the blob-row locks of one
	// attach, detach or dedup commit.
	ObserveBlobLockWait(d time.Duration)
	// ObserveDedupObjectCheck: one storage existence check made under the
	// lock; present reports whether the object was there (err != nil: the
	// check failed or timed out).
	ObserveDedupObjectCheck(present bool, err error)
}

// pushObservers maps *Store to its PushObserver. (Options is not the place:
// the observer belongs to the process's metrics, not to the store's
// configuration, and stores are created before metrics in tests.)
var pushObservers sync.Map

// SetPushObserver installs (nil: removes) the push-path observer of s.
func (s *Store) SetPushObserver(o PushObserver) {
	if o == nil {
		pushObservers.Delete(s)
		return
	}
	pushObservers.Store(s, o)
}

func (s *Store) pushObserver() PushObserver {
	if v, ok := pushObservers.Load(s); ok {
		return v.(PushObserver)
	}
	return nil
}

// ObserveBlobLockWait reports a blob-row lock wait that started at start
// to the observer, if any. The blob layer calls it right after its
// FOR UPDATE statement (lockBlobs, commitSQL) returns.
func (s *Store) ObserveBlobLockWait(start time.Time) {
	if o := s.pushObserver(); o != nil {
		o.ObserveBlobLockWait(time.Since(start))
	}
}

// ObserveDedupObjectCheck reports one existence check made by a dedup
// skip under the lock (checkObjects, commitBlob).
func (s *Store) ObserveDedupObjectCheck(present bool, err error) {
	if o := s.pushObserver(); o != nil {
		o.ObserveDedupObjectCheck(present, err)
	}
}
