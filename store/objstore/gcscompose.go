package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
)

// gcsMaxCompose is the most source objects one GCS compose request takes.
const gcsMaxCompose = 32

// gcsTarget is what the GCS client needs beyond gocloud's bucket: the
// bucket name and the key prefix of a prefixed bucket URL.
type gcsTarget struct {
	bucket string
	prefix string
}

// composeGCS composes parts into dst on the GCS server: compose requests of
// up to 32 sources, chained through intermediate objects under the upload's
// prefix when there are more parts, into a temporary object whose size is
// checked against size (GCS composes whatever the sources hold), then
// copied (a metadata-only rewrite inside the bucket) to dst with the
// upload's content type and metadata. dst only ever receives checked
// bytes; the intermediates are deleted here, and with the upload in any
// case. done is false when the backend is not GCS: the caller streams.
func (u *Upload) composeGCS(ctx context.Context, parts []Part, size int64, dst string) (done bool, err error) {
	t := u.s.gcs
	var client *storage.Client
	if t == nil || u.s.streamCompose.Load() || len(parts) < 2 || !u.s.bucket.As(&client) {
		return false, nil
	}
	bkt := client.Bucket(t.bucket)
	var temps []string
	defer func() {
		for _, k := range temps {
			_ = bkt.Object(k).Delete(context.WithoutCancel(ctx))
		}
	}()
	srcs := make([]string, len(parts))
	for i, p := range parts {
		srcs[i] = t.prefix + partKey(u.prefix, p)
	}
	for level := 0; len(srcs) > 1; level++ {
		var next []string
		for i := 0; i < len(srcs); i += gcsMaxCompose {
			group := srcs[i:min(i+gcsMaxCompose, len(srcs))]
			if len(group) == 1 {
				next = append(next, group[0])
				continue
			}
			tmp := t.prefix + u.prefix + fmt.Sprintf("/compose-%d-%d", level, i/gcsMaxCompose)
			temps = append(temps, tmp)
			if err := gcsCompose(ctx, bkt, tmp, group); err != nil {
				return true, fmt.Errorf("objstore: compose %s: %w", dst, err)
			}
			next = append(next, tmp)
		}
		srcs = next
	}
	attrs, err := bkt.Object(srcs[0]).Attrs(ctx)
	if err != nil {
		return true, fmt.Errorf("objstore: compose %s: %w", dst, gcsErr(err))
	}
	if attrs.Size != size {
		return true, fmt.Errorf("objstore: compose %s: parts hold %d bytes, expected %d", dst, attrs.Size, size)
	}
	cp := bkt.Object(t.prefix + dst).CopierFrom(bkt.Object(srcs[0]))
	cp.ContentType = contentType
	cp.Metadata = u.meta
	if _, err := cp.Run(ctx); err != nil {
		return true, fmt.Errorf("objstore: compose %s: copy: %w", dst, gcsErr(err))
	}
	return true, nil
}

func gcsCompose(ctx context.Context, bkt *storage.BucketHandle, dst string, srcs []string) error {
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
				return fmt.Errorf("%w: source %s: %w", ErrNotFound, o.ObjectName(), err)
			}
		}
		return gcsErr(err)
	}
	return nil
}

// gcsErr maps a missing object to ErrNotFound, as the streamed compose
// reports a missing part.
func gcsErr(err error) error {
	var gerr *googleapi.Error
	if errors.Is(err, storage.ErrObjectNotExist) || (errors.As(err, &gerr) && gerr.Code == http.StatusNotFound) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}
