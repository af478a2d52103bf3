// Package gcs registers the gs:// scheme with the object store: gocloud's
// GCS driver, and server-side compose, signed URLs with response headers
// and metadata on copies through the GCS client. Import it for its side
// effects where gs:// buckets are opened.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/googleapi"

	"github.com/artifact-registry/artifact-registry/store/objstore/driver"
)

func init() { driver.Register(gcsblob.Scheme, gcsDriver{}) }

// maxCompose is the most source objects one GCS compose request takes.
const maxCompose = 32

type gcsDriver struct{}

// Compose composes on the GCS server: compose requests of up to 32
// sources, chained through intermediate objects under c.Temp when there
// are more, into a temporary object whose size is checked (GCS composes
// whatever the sources hold), then copied (a metadata-only rewrite inside
// the bucket) to c.Dst with c's content type and metadata. c.Dst only
// ever receives checked bytes; the intermediates are deleted here.
func (gcsDriver) Compose(ctx context.Context, b *blob.Bucket, u *url.URL, c driver.Compose) error {
	var client *storage.Client
	if !b.As(&client) {
		return errors.New("gcs: the bucket does not expose its GCS client")
	}
	// The client addresses the bucket itself, without gocloud's prefix.
	prefix := u.Query().Get("prefix")
	bkt := client.Bucket(u.Host)
	var temps []string
	defer func() {
		for _, k := range temps {
			_ = bkt.Object(k).Delete(context.WithoutCancel(ctx))
		}
	}()
	srcs := make([]string, len(c.Sources))
	for i, s := range c.Sources {
		srcs[i] = prefix + s
	}
	for level := 0; len(srcs) > 1; level++ {
		var next []string
		for i := 0; i < len(srcs); i += maxCompose {
			group := srcs[i:min(i+maxCompose, len(srcs))]
			if len(group) == 1 {
				next = append(next, group[0])
				continue
			}
			tmp := prefix + c.Temp + fmt.Sprintf("-%d-%d", level, i/maxCompose)
			temps = append(temps, tmp)
			if err := compose(ctx, bkt, tmp, group, c.ContentType); err != nil {
				return fmt.Errorf("gcs: compose %s: %w", c.Dst, err)
			}
			next = append(next, tmp)
		}
		srcs = next
	}
	attrs, err := bkt.Object(srcs[0]).Attrs(ctx)
	if err != nil {
		return fmt.Errorf("gcs: compose %s: %w", c.Dst, notExist(err))
	}
	if attrs.Size != c.Size {
		return fmt.Errorf("gcs: compose %s: parts hold %d bytes, expected %d", c.Dst, attrs.Size, c.Size)
	}
	cp := bkt.Object(prefix + c.Dst).CopierFrom(bkt.Object(srcs[0]))
	cp.ContentType = c.ContentType
	cp.Metadata = c.Metadata
	if _, err := cp.Run(ctx); err != nil {
		return fmt.Errorf("gcs: compose %s: copy: %w", c.Dst, notExist(err))
	}
	return nil
}

func compose(ctx context.Context, bkt *storage.BucketHandle, dst string, srcs []string, contentType string) error {
	objs := make([]*storage.ObjectHandle, len(srcs))
	for i, s := range srcs {
		objs[i] = bkt.Object(s)
	}
	c := bkt.Object(dst).ComposerFrom(objs...)
	c.ContentType = contentType
	if _, err := c.Run(ctx); err != nil {
		// GCS answers 404 for a missing source, but not every server
		// implementing its API does: look for one before reporting.
		for _, o := range objs {
			if _, aerr := o.Attrs(ctx); errors.Is(aerr, storage.ErrObjectNotExist) {
				return fmt.Errorf("%w: source %s: %w", fs.ErrNotExist, o.ObjectName(), err)
			}
		}
		return notExist(err)
	}
	return nil
}

// notExist marks a missing object with fs.ErrNotExist, as the streamed
// compose reports a missing part.
func notExist(err error) error {
	var gerr *googleapi.Error
	if errors.Is(err, storage.ErrObjectNotExist) || (errors.As(err, &gerr) && gerr.Code == http.StatusNotFound) {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

// SignGet signs with V4, whose signature covers the query, response
// overrides included.
func (gcsDriver) SignGet(as func(any) bool, contentType, disposition string) error {
	var opts *storage.SignedURLOptions
	if !as(&opts) {
		return errors.New("gcs: the signer does not expose its options")
	}
	opts.Scheme = storage.SigningSchemeV4
	opts.QueryParameters = url.Values{
		"response-content-type":        {contentType},
		"response-content-disposition": {disposition},
	}
	return nil
}

func (gcsDriver) ReplaceOnCopy(as func(any) bool, contentType string, meta map[string]string) bool {
	var c *storage.Copier
	if !as(&c) {
		return false
	}
	c.ObjectAttrs.Metadata = meta
	c.ObjectAttrs.ContentType = contentType
	return true
}

func (gcsDriver) ServerError(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code >= 500
}
