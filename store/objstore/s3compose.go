package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

// S3 multipart limits: every part but the last is at least s3MinPart, no
// part exceeds s3MaxPart, at most s3MaxParts parts.
const (
	s3MinPart  = 5 << 20
	s3MaxPart  = 5 << 30
	s3MaxParts = 10000
	// s3CopyConcurrency is how many UploadPartCopy requests run at once:
	// each is a server-side copy, so the limit is the server's, not ours.
	s3CopyConcurrency = 4
)

// s3Target is what the AWS SDK client needs beyond gocloud's bucket to
// address objects itself: the bucket name, the key prefix of a prefixed
// bucket URL, and the server-side encryption gocloud's writer would use.
type s3Target struct {
	bucket string
	prefix string
	sse    s3types.ServerSideEncryption
	kmsKey string
}

// s3TargetOf reads the parts of an s3:// URL that gocloud's URL opener
// consumes and that our own requests must repeat (bucket, prefix, ssetype,
// kmskeyid).
func s3TargetOf(u *url.URL) (*s3Target, error) {
	q := u.Query()
	t := &s3Target{bucket: u.Host, prefix: q.Get("prefix"), kmsKey: q.Get("kmskeyid")}
	if v := q.Get("ssetype"); v != "" {
		for _, sse := range s3types.ServerSideEncryptionAes256.Values() {
			if strings.EqualFold(string(sse), v) {
				t.sse = sse
			}
		}
		if t.sse == "" {
			return nil, fmt.Errorf("objstore: unknown ssetype %q", v)
		}
	}
	return t, nil
}

// key is the S3 key of one of our keys. gocloud's s3blob escapes some
// characters in keys; ours contain only [0-9a-f/-], which it leaves alone.
func (t *s3Target) key(k string) string { return t.prefix + k }

// serverComposable reports whether S3 can assemble parts as the parts of
// one multipart upload (UploadPartCopy): 2 to 10,000 non-empty parts, none
// over 5 GiB, all but the last at least 5 MiB.
func serverComposable(parts []Part) bool {
	if len(parts) < 2 || len(parts) > s3MaxParts {
		return false
	}
	for i, p := range parts {
		if p.Size <= 0 || p.Size > s3MaxPart || (i < len(parts)-1 && p.Size < s3MinPart) {
			return false
		}
	}
	return true
}

// composeS3 composes parts into dst on the S3 server: one multipart upload
// of dst (carrying the upload's content type, metadata and the bucket's
// encryption settings), one UploadPartCopy per part in order, then
// CompleteMultipartUpload. No byte passes through this process. Any
// failure aborts the multipart upload, so nothing is left behind and dst
// is not created. done is false when the backend is not S3 or the parts
// do not fit S3's multipart limits, or the server does not implement
// UploadPartCopy: the caller streams the compose instead. A missing part
// is ErrNotFound, as in the streamed compose.
func (u *Upload) composeS3(ctx context.Context, parts []Part, dst string) (done bool, err error) {
	t := u.s.s3
	var client *s3.Client
	if t == nil || u.s.streamCompose.Load() || !serverComposable(parts) || !u.s.bucket.As(&client) {
		return false, nil
	}
	key := t.key(dst)
	in := &s3.CreateMultipartUploadInput{
		Bucket:      aws.String(t.bucket),
		Key:         aws.String(key),
		ContentType: aws.String(contentType),
		Metadata:    u.meta,
	}
	if t.sse != "" {
		in.ServerSideEncryption = t.sse
	}
	if t.kmsKey != "" {
		in.SSEKMSKeyId = aws.String(t.kmsKey)
	}
	mpu, err := client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return true, fmt.Errorf("objstore: compose %s: create multipart upload: %w", dst, err)
	}
	completed, err := u.copyParts(ctx, client, parts, key, mpu.UploadId)
	if err == nil {
		_, err = client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket:          aws.String(t.bucket),
			Key:             aws.String(key),
			UploadId:        mpu.UploadId,
			MultipartUpload: &s3types.CompletedMultipartUpload{Parts: completed},
		})
		if err != nil {
			err = fmt.Errorf("objstore: compose %s: complete multipart upload: %w", dst, err)
		}
	}
	if err == nil {
		return true, nil
	}
	_, aerr := client.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{
		Bucket:   aws.String(t.bucket),
		Key:      aws.String(key),
		UploadId: mpu.UploadId,
	})
	if aerr != nil {
		err = errors.Join(err, fmt.Errorf("objstore: compose %s: abort multipart upload: %w", dst, aerr))
	}
	if apiErrorCode(err) == "NotImplemented" {
		return false, nil
	}
	return true, err
}

// copyParts copies each part into the multipart upload, exactly its
// recorded size (a range copy: a part object shorter than recorded fails
// instead of composing a short blob), and returns the completed parts in
// order.
//
// After a failure no further copy starts, but the copies in flight are
// not cancelled: the server goes on with a copy whose client went away,
// and a part it stores after the caller's abort revives the multipart
// upload (S3 documents that a part upload in progress may succeed after
// the abort). Waiting for them means the abort comes last.
func (u *Upload) copyParts(ctx context.Context, client *s3.Client, parts []Part, key string, uploadID *string) ([]s3types.CompletedPart, error) {
	t := u.s.s3
	completed := make([]s3types.CompletedPart, len(parts))
	var g errgroup.Group
	g.SetLimit(s3CopyConcurrency)
	var failed atomic.Bool
	for i, p := range parts {
		src := t.key(partKey(u.prefix, p))
		g.Go(func() error {
			if failed.Load() {
				return nil
			}
			out, err := client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
				Bucket:          aws.String(t.bucket),
				Key:             aws.String(key),
				UploadId:        uploadID,
				PartNumber:      aws.Int32(int32(i + 1)),
				CopySource:      aws.String(copySource(t.bucket, src)),
				CopySourceRange: aws.String(fmt.Sprintf("bytes=0-%d", p.Size-1)),
			})
			if err != nil {
				failed.Store(true)
				if code := apiErrorCode(err); code == "NoSuchKey" || code == "NotFound" {
					return fmt.Errorf("objstore: compose: copy part %s: %w", src, ErrNotFound)
				}
				return fmt.Errorf("objstore: compose: copy part %s: %w", src, err)
			}
			if out.CopyPartResult == nil || out.CopyPartResult.ETag == nil {
				failed.Store(true)
				return fmt.Errorf("objstore: compose: copy part %s: no ETag in the answer", src)
			}
			completed[i] = s3types.CompletedPart{ETag: out.CopyPartResult.ETag, PartNumber: aws.Int32(int32(i + 1))}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return completed, nil
}

// apiErrorCode is the S3 error code in err's chain ("" when none). The
// SDK's API errors implement ErrorCode (smithy.APIError).
func apiErrorCode(err error) string {
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// copySource is the x-amz-copy-source of an object: bucket and key, each
// path segment URL-escaped (a prefix from the bucket URL may need it).
func copySource(bucket, key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return url.PathEscape(bucket) + "/" + strings.Join(segs, "/")
}
