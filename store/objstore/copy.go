package objstore

import (
	"errors"
	"hash"
	"io"
	"sync"
	"sync/atomic"
)

// Streaming parameters: memory per copy is copyBuffers*copyBufSize whatever
// the size of the stream, and the buffers are pooled across copies.
const (
	copyBufSize = 1 << 20
	copyBuffers = 4
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// smallCopySize bounds the streams copied in one step, without the
// pipeline: most blobs (manifests, image configs, package metadata, small
// layers) end within it, and the pipeline's four 1 MiB buffers and two
// goroutines cost each of them more than its bytes do (with a few such
// uploads at once, tens of MiB of buffers that the heap then keeps).
const smallCopySize = 128 << 10

var smallBufPool = sync.Pool{New: func() any { b := make([]byte, smallCopySize); return &b }}

// ErrTooLarge reports a stream longer than the limit given to CopyHash.
var ErrTooLarge = errors.New("objstore: stream exceeds the size limit")

type copyBuf struct {
	p    *[]byte
	n    int
	refs atomic.Int32
}

// CopyHash copies src to dst until EOF and feeds every byte into h exactly
// once. A stream that ends within smallCopySize is copied in one step;
// past that, reading, hashing and writing overlap (a three-stage pipeline
// over a few pooled 1 MiB buffers), so on a multi-core machine the
// throughput is that of the slowest stage rather than the sum of the
// three. With limit >= 0 a stream longer than limit bytes fails with
// ErrTooLarge.
//
// On error, dst and h may have consumed a prefix of the stream; callers throw
// both away.
func CopyHash(dst io.Writer, src io.Reader, h hash.Hash, limit int64) (int64, error) {
	if limit >= 0 {
		src = io.LimitReader(src, limit+1)
	}
	total, err := copySmall(dst, src, h)
	if err == nil {
		var rest int64
		rest, err = copyPipelined(dst, src, h)
		total += rest
	}
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return total, err
	}
	if limit >= 0 && total > limit {
		return total, ErrTooLarge
	}
	return total, nil
}

// copySmall copies what of src fits in one small buffer to h and dst: io.EOF
// when that was all of it, nil when more follows.
func copySmall(dst io.Writer, src io.Reader, h hash.Hash) (int64, error) {
	p := smallBufPool.Get().(*[]byte)
	defer smallBufPool.Put(p)
	n, err := fill(src, *p)
	if n > 0 {
		h.Write((*p)[:n]) // hash.Hash.Write never fails
		if werr := writeAll(dst, (*p)[:n]); werr != nil {
			return int64(n), werr
		}
	}
	return int64(n), err
}

// copyPipelined is CopyHash's pipeline for the rest of a long stream: nil
// at its end.
func copyPipelined(dst io.Writer, src io.Reader, h hash.Hash) (int64, error) {
	free := make(chan *copyBuf, copyBuffers)
	for range copyBuffers {
		free <- &copyBuf{p: bufPool.Get().(*[]byte)}
	}
	release := func(b *copyBuf) {
		if b.refs.Add(-1) == 0 {
			free <- b
		}
	}
	hashCh := make(chan *copyBuf, copyBuffers)
	writeCh := make(chan *copyBuf, copyBuffers)
	var (
		wg      sync.WaitGroup
		werr    error
		failed  atomic.Bool
		stopped = make(chan struct{})
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for b := range hashCh {
			h.Write((*b.p)[:b.n]) // hash.Hash.Write never fails
			release(b)
		}
	}()
	go func() {
		defer wg.Done()
		for b := range writeCh {
			if werr == nil {
				if werr = writeAll(dst, (*b.p)[:b.n]); werr != nil {
					failed.Store(true)
					close(stopped)
				}
			}
			release(b)
		}
	}()

	var total int64
	var rerr error
	for rerr == nil && !failed.Load() {
		var b *copyBuf
		select {
		case b = <-free:
		case <-stopped:
		}
		if b == nil {
			break
		}
		n, err := fill(src, *b.p)
		if n > 0 {
			total += int64(n)
			b.n = n
			b.refs.Store(2)
			hashCh <- b
			writeCh <- b
		} else {
			free <- b
		}
		switch {
		case err == io.EOF:
			rerr = io.EOF
		case err != nil:
			rerr = err
		}
	}
	close(hashCh)
	close(writeCh)
	wg.Wait()
	close(free)
	for b := range free {
		bufPool.Put(b.p)
	}
	if werr != nil {
		return total, werr
	}
	if rerr != nil && rerr != io.EOF {
		return total, rerr
	}
	return total, nil
}

// writeAll writes p to dst, a short write without an error being one.
func writeAll(dst io.Writer, p []byte) error {
	n, err := dst.Write(p)
	if err == nil && n != len(p) {
		err = io.ErrShortWrite
	}
	return err
}

// fill reads into p until it is full or src ends. Unlike io.ReadFull it
// passes src's own io.ErrUnexpectedEOF on (what a request body cut short
// returns) instead of taking it for a clean end of the data.
func fill(src io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := src.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
