package upstream

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
)

// spool holds the bytes of one fill as they arrive, for every reader to
// follow from byte 0 at its own pace: one writer appends, readers read
// what has been published so far and wait for more. Bytes below written
// never change, so readers copy them without holding the lock.
type spool struct {
	file *os.File // nil: in memory
	path string   // removed at close when the early unlink failed
	mem  []byte   // the memory spool, its full expected length

	mu      sync.Mutex
	written int64
	done    bool
	err     error // the fill's failure, nil once complete and verified
	wake    chan struct{}
	waiting bool
}

// newSpool spools a body of size bytes (< 0: unknown) in memory when it
// is known and at most memMax, otherwise in a file under dir.
func newSpool(dir string, size, memMax int64) (*spool, error) {
	s := &spool{wake: make(chan struct{})}
	if size >= 0 && size <= memMax {
		s.mem = make([]byte, size)
		return s, nil
	}
	f, err := os.CreateTemp(dir, "upstream-fill-*")
	if err != nil {
		return nil, err
	}
	s.file = f
	// Unlinked now, the data lives as long as the open file: nothing is
	// left behind by a crash. Where that is not possible, close removes
	// it.
	if os.Remove(f.Name()) != nil {
		s.path = f.Name()
	}
	return s, nil
}

var errSpoolOverflow = errors.New("body longer than its announced length")

// write appends p (the one writer only).
func (s *spool) write(p []byte) error {
	s.mu.Lock()
	off := s.written
	s.mu.Unlock()
	if s.file == nil {
		if off+int64(len(p)) > int64(len(s.mem)) {
			return errSpoolOverflow
		}
		copy(s.mem[off:], p)
	} else if _, err := s.file.Write(p); err != nil {
		return err
	}
	s.mu.Lock()
	s.written += int64(len(p))
	s.signal()
	s.mu.Unlock()
	return nil
}

// signal wakes the waiting readers (s.mu held).
func (s *spool) signal() {
	if s.waiting {
		close(s.wake)
		s.wake = make(chan struct{})
		s.waiting = false
	}
}

// finish ends the spool: err nil means complete and verified.
func (s *spool) finish(err error) {
	s.mu.Lock()
	s.done, s.err = true, err
	s.signal()
	s.mu.Unlock()
}

func (s *spool) close() {
	if s.file != nil {
		_ = s.file.Close()
		if s.path != "" {
			_ = os.Remove(s.path)
		}
	}
}

// follower reads a spool from byte 0. Read blocks until bytes are
// there, the spool finishes or ctx ends; it returns io.EOF only after
// the whole body has been received and verified, and the fill's error
// otherwise.
type follower struct {
	s   *spool
	ctx context.Context
	off int64
	eof bool
}

func (f *follower) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s := f.s
	for {
		s.mu.Lock()
		avail := s.written - f.off
		if avail > 0 {
			s.mu.Unlock()
			n := int(min(int64(len(p)), avail))
			var err error
			if s.file == nil {
				copy(p, s.mem[f.off:f.off+int64(n)])
			} else {
				n, err = s.file.ReadAt(p[:n], f.off)
				if err == io.EOF && n > 0 {
					err = nil
				}
			}
			f.off += int64(n)
			return n, err
		}
		if s.done {
			err := s.err
			s.mu.Unlock()
			if err == nil {
				f.eof = true
				return 0, io.EOF
			}
			return 0, err
		}
		s.waiting = true
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-f.ctx.Done():
			return 0, f.ctx.Err()
		}
	}
}

// copyBuffers are the buffers of WriteTo.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, fillBuffer); return &b }}

// WriteTo copies the rest of the body to w in large reads (io.Copy uses
// it; io.Discard's and most writers' ReadFrom would read 8-32 KiB at a
// time, one system call each on a file spool).
func (f *follower) WriteTo(w io.Writer) (int64, error) {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	var total int64
	for {
		n, err := f.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
			if m != n {
				return total, io.ErrShortWrite
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
