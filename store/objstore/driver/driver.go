// Package driver is where the object store finds what a bucket scheme
// needs beyond gocloud's portable API: server-side compose, the response
// headers of signed URLs, metadata on a server-side copy, and which errors
// are the server's own failures. A scheme's package registers its Driver
// in init, next to the gocloud driver it imports, so that a program links
// the SDKs of the schemes it opens and no others: the Google Cloud SDK
// (gRPC, OpenTelemetry) alone is about 400 packages. S3, which every test
// binary of the store opens, is built into objstore itself.
package driver

import (
	"context"
	"net/url"
	"sync"

	"gocloud.dev/blob"
)

// Compose is one server-side compose: Sources (keys within the bucket,
// in order, at least two) concatenated into Dst.
type Compose struct {
	Sources []string
	Dst     string
	// Size is what the sources must add up to: Dst receives nothing when
	// they do not.
	Size int64
	// Temp is a key prefix where intermediate objects may be written; the
	// driver removes them.
	Temp string
	// ContentType and Metadata are Dst's.
	ContentType string
	Metadata    map[string]string
}

// Driver is a scheme's additions. It takes gocloud and standard types
// only, so that its package does not import the object store.
type Driver interface {
	// Compose runs c on the server holding b, opened from u. A missing
	// source is an error wrapping fs.ErrNotExist.
	Compose(ctx context.Context, b *blob.Bucket, u *url.URL, c Compose) error
	// SignGet makes a signed GET's response carry contentType and
	// disposition, through the signer's options (as is
	// blob.SignedURLOptions.BeforeSign's).
	SignGet(as func(any) bool, contentType, disposition string) error
	// ReplaceOnCopy makes a server-side copy write contentType and meta
	// instead of the source's (as is blob.CopyOptions.BeforeCopy's);
	// false when the copier does not let it.
	ReplaceOnCopy(as func(any) bool, contentType string, meta map[string]string) bool
	// ServerError reports whether err is the server's own failure (a
	// 5xx) in the driver's error types.
	ServerError(err error) bool
}

var registry struct {
	sync.RWMutex
	byScheme map[string]Driver
}

// Register makes d the driver of scheme; a second registration of one
// scheme panics, as gocloud's do.
func Register(scheme string, d Driver) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.byScheme[scheme]; dup {
		panic("objstore driver: scheme " + scheme + " registered twice")
	}
	if registry.byScheme == nil {
		registry.byScheme = map[string]Driver{}
	}
	registry.byScheme[scheme] = d
}

// Lookup returns the driver of scheme, nil when none is registered.
func Lookup(scheme string) Driver {
	registry.RLock()
	defer registry.RUnlock()
	return registry.byScheme[scheme]
}

// ServerError reports whether any registered driver calls err the
// server's own failure.
func ServerError(err error) bool {
	registry.RLock()
	defer registry.RUnlock()
	for _, d := range registry.byScheme {
		if d.ServerError(err) {
			return true
		}
	}
	return false
}
