package store

import (
	"context"
	"time"

	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// DownloadURLExpiry is how long a signed download URL is valid. The object
// store checks it when the download starts, not while it runs, so it only
// has to cover the client following the redirect (and a retry of it); a
// leaked URL is useless soon after.
const DownloadURLExpiry = 10 * time.Minute

// RedirectsDownloads reports whether blob downloads go to signed URLs of
// the object store (Options.RedirectDownloads).
func (s *Store) RedirectsDownloads() bool { return s.opts.RedirectDownloads }

// DownloadURL signs a short-lived GET URL of blob b's object whose
// response carries contentType and the attachment disposition
// (objstore.Presign). The caller has authorized the download.
func (s *Store) DownloadURL(ctx context.Context, b *Blob, contentType, disposition string) (string, error) {
	return s.objects.SignedGetURL(ctx, b.ObjectStorageKey, objstore.Presign{
		Expiry: DownloadURLExpiry, ContentType: contentType, Disposition: disposition,
	})
}
