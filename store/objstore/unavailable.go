package objstore

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/artifact-registry/artifact-registry/store/objstore/driver"
)

// ErrUnavailable marks a failure to reach the object store: its endpoint
// refused, reset or dropped a request, or answered with a server error.
// Like a database outage it is temporary, so every surface answers it 503
// with Retry-After instead of 500 (store.IsUnavailable).
var ErrUnavailable = errors.New("objstore: object storage unavailable")

// unavailable wraps a transport failure so that errors.Is(err,
// ErrUnavailable) holds while the original error stays in the chain.
type unavailable struct{ err error }

func (e *unavailable) Error() string        { return e.err.Error() }
func (e *unavailable) Unwrap() error        { return e.err }
func (e *unavailable) Is(target error) bool { return target == ErrUnavailable }

// bucketErr marks err, returned by a call to the bucket, as ErrUnavailable
// when it is a transport failure or a server error. Only errors of bucket
// calls go through it: a client's broken request body is also a network
// error or an EOF, and must stay a client error (see partWriter).
func bucketErr(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) || !transportFailure(err) {
		return err
	}
	return &unavailable{err: err}
}

func transportFailure(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the request's own end, not the store's
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return true
	}
	var status interface{ HTTPStatusCode() int } // the AWS SDK's response errors
	if errors.As(err, &status) && status.HTTPStatusCode() >= 500 {
		return true
	}
	return driver.ServerError(err)
}

// partWriter marks the errors of the bucket's writer, so that a copy from a
// client's body into it tells the two sides apart.
type partWriter struct{ w io.Writer }

func (p partWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	return n, bucketErr(err)
}
