package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

// TestConcurrentUploadsOnPosixGateway starts and removes uploads of one
// namespace from several goroutines on the S3 test server, a gateway over a
// POSIX file system: removing an upload's last part removes the directories
// left empty, and without the uploads directory marker a part written at
// that moment failed (409 ExistingObjectIsDirectory).
func TestConcurrentUploadsOnPosixGateway(t *testing.T) {
	ctx := context.Background()
	st, _ := openS3Bucket(t, ocitools.StartS3(t, "objstore-test"), "")
	ns := uuid.New()
	var g errgroup.Group
	for range 4 {
		g.Go(func() error {
			for range 50 {
				u, err := st.CreateOpenUpload(ctx, ns, uuid.New(), nil)
				if err != nil {
					return err
				}
				if _, err := u.Write(ctx, 0, bytes.NewReader([]byte("part")), sha256.New(), -1); err != nil {
					return err
				}
				if err := u.Remove(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}
