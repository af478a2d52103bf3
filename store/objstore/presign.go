package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
)

// Presign is what a signed GET URL of an object makes the object store
// answer with. The response headers are part of the signature, so whoever
// holds the URL cannot change them: the bytes are users', and must never
// render as a page of the bucket's origin either.
type Presign struct {
	// Expiry is how long the URL is valid.
	Expiry time.Duration
	// ContentType replaces the stored object's type in the response.
	ContentType string
	// Disposition replaces its Content-Disposition ("attachment; ...").
	Disposition string
}

// ErrNoSigner reports a store that cannot sign download URLs.
var ErrNoSigner = errors.New("objstore: the object store cannot sign download URLs (s3:// or gs:// storage with signing credentials is needed)")

// CanSign reports whether the store can sign download URLs, by signing one
// for a key that need not exist (signing is local to this process on S3
// and on GCS with a private key). Only S3 and GCS are accepted: they are
// the backends whose signed URLs carry the response headers (Presign).
func (s *Store) CanSign(ctx context.Context) error {
	if s.s3 == nil && s.driver == nil {
		return ErrNoSigner
	}
	if _, err := s.SignedGetURL(ctx, "signer-check", Presign{Expiry: time.Minute, ContentType: contentType, Disposition: "attachment"}); err != nil {
		return fmt.Errorf("%w: %v", ErrNoSigner, err)
	}
	return nil
}

// SignedGetURL signs a GET URL of the object at key, valid for o.Expiry,
// whose response carries o's headers. Whether the object exists is not
// checked.
func (s *Store) SignedGetURL(ctx context.Context, key string, o Presign) (string, error) {
	var before func(as func(any) bool) error
	switch {
	case s.s3 != nil:
		before = func(as func(any) bool) error {
			var in *s3.GetObjectInput
			if !as(&in) {
				return errors.New("objstore: s3 signer does not expose its request")
			}
			in.ResponseContentType = aws.String(o.ContentType)
			in.ResponseContentDisposition = aws.String(o.Disposition)
			return nil
		}
	case s.driver != nil:
		before = func(as func(any) bool) error { return s.driver.SignGet(as, o.ContentType, o.Disposition) }
	default:
		return "", ErrNoSigner
	}
	u, err := s.bucket.SignedURL(ctx, key, &blob.SignedURLOptions{Expiry: o.Expiry, Method: http.MethodGet, BeforeSign: before})
	if err != nil {
		return "", fmt.Errorf("objstore: sign a download URL of %s: %w", key, err)
	}
	return u, nil
}
