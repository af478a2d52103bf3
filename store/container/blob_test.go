package container

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
)

// TestCommitUploadLinksInOneTransaction: the commit of a resumable upload
// and the blob's link to the image are one transaction. A link that fails
// (here: the image cannot be created) commits nothing, neither the blob row
// nor the end of the session, and leaves the bytes received before the
// last request, so that the client can send it again; a commit of the same
// bytes into an image that has them adds no second link.
func TestCommitUploadLinksInOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, tg := acmeTarget(t, "app")
	blob := bytes.Repeat([]byte("layer "), 1000)
	head, last := blob[:4000], blob[4000:]
	want := store.Expected{SHA256: sha256.Sum256(blob), Size: -1}
	u, err := st.StartUpload(ctx, tg.NamespaceID, tg.RepositoryID, store.UploadResumable)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendUpload(ctx, tg.UploadRef(u.UploadID), 0, bytes.NewReader(head)); err != nil {
		t.Fatal(err)
	}
	counts := func() [3]int { return blobRows(t, st, tg.NamespaceID, want.SHA256) }

	broken := *tg
	broken.ContainerRepositoryID = uuid.New() // no such repository: the image insert fails
	if _, err := cs.CommitUpload(ctx, &broken, u.UploadID, bytes.NewReader(last), want); err == nil {
		t.Fatal("commit with a failing link succeeded")
	}
	if got := counts(); got != [3]int{} {
		t.Fatalf("after a failed link: blob rows, attachments, links = %v, want none", got)
	}
	left, err := st.UploadStatus(ctx, tg.UploadRef(u.UploadID))
	if err != nil || left.Size != int64(len(head)) {
		t.Fatalf("session after a failed link: %+v, %v; want it open with %d bytes", left, err, len(head))
	}

	if _, err := cs.CommitUpload(ctx, tg, u.UploadID, bytes.NewReader(last), want); err != nil {
		t.Fatalf("the same request again: %v", err)
	}
	if got := counts(); got != [3]int{1, 1, 1} {
		t.Fatalf("after the commit: blob rows, attachments, links = %v, want 1 each", got)
	}
	if _, err := st.UploadStatus(ctx, tg.UploadRef(u.UploadID)); !store.HasCode(err, store.CodeUploadUnknown) {
		t.Fatalf("session after its commit: %v, want it gone", err)
	}
	tg, err = cs.ResolveTarget(ctx, "acme", "images", "app")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cs.Blob(ctx, tg, want.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := st.OpenBlobObject(ctx, b, 0, b.Size)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(rc); err != nil || !bytes.Equal(got.Bytes(), blob) {
		t.Fatalf("stored bytes: %d bytes, %v; want the upload's %d", got.Len(), err, len(blob))
	}

	if _, err := cs.PutBlob(ctx, tg, bytes.NewReader(blob), store.Expected{SHA256: want.SHA256, Size: int64(len(blob))}); err != nil {
		t.Fatal(err)
	}
	if got := counts(); got != [3]int{1, 1, 1} {
		t.Fatalf("after a second push of the same bytes: blob rows, attachments, links = %v, want 1 each", got)
	}
}

// TestConcurrentPushesOfOneBlob: pushes of the same bytes into a new image
// at once all succeed and leave one blob row, one attachment and one link
// (the image is created once, the commits wait on the blob row, and each
// later one finds the link made).
func TestConcurrentPushesOfOneBlob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, tg := acmeTarget(t, "fresh")
	blob := bytes.Repeat([]byte("same "), 2000)
	want := store.Expected{SHA256: sha256.Sum256(blob), Size: int64(len(blob))}
	const pushers = 8
	errs := make(chan error, pushers)
	start := make(chan struct{})
	for i := range pushers {
		go func() {
			<-start
			mine := *tg
			if i%2 == 0 {
				_, err := cs.PutBlob(ctx, &mine, bytes.NewReader(blob), want)
				errs <- err
				return
			}
			u, err := st.StartUpload(ctx, mine.NamespaceID, mine.RepositoryID, store.UploadResumable)
			if err == nil {
				_, err = cs.CommitUpload(ctx, &mine, u.UploadID, bytes.NewReader(blob), store.Expected{SHA256: want.SHA256, Size: -1})
			}
			errs <- err
		}()
	}
	close(start)
	for range pushers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := blobRows(t, st, tg.NamespaceID, want.SHA256); n != [3]int{1, 1, 1} {
		t.Fatalf("blob rows, attachments, links = %v, want 1 each", n)
	}
}

// blobRows counts the blob rows, attachments and container_blobs links of
// a digest in a namespace.
func blobRows(t *testing.T, st *store.Store, nsID uuid.UUID, sha [32]byte) [3]int {
	t.Helper()
	var n [3]int
	if err := st.Pool().QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2),
		(SELECT count(*) FROM blob_storage_attachments WHERE namespace_id = $1 AND sha256 = $2),
		(SELECT count(*) FROM container_blobs WHERE namespace_id = $1 AND digest = $2)`,
		nsID, sha[:]).Scan(&n[0], &n[1], &n[2]); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPushOfACandidateBlob: a push of bytes whose blob row is a live GC
// candidate (its object here already deleted by a collector that then
// crashed) clears the candidate, puts the object back and links the blob
// to the image, with an attachment of its own, in the commit.
func TestPushOfACandidateBlob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, tg := acmeTarget(t, "app")
	blob := bytes.Repeat([]byte("candidate "), 700)
	want := store.Expected{SHA256: sha256.Sum256(blob), Size: int64(len(blob))}
	b, err := cs.PutBlob(ctx, tg, bytes.NewReader(blob), want)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after) VALUES ($1, $2, now())`,
		tg.NamespaceID, want.SHA256[:]); err != nil {
		t.Fatal(err)
	}
	if err := st.Objects().Delete(ctx, b.ObjectStorageKey); err != nil {
		t.Fatal(err)
	}

	other := *tg
	other.ImageName, other.ImageID = "other", uuid.Nil
	if _, err := cs.PutBlob(ctx, &other, bytes.NewReader(blob), want); err != nil {
		t.Fatal(err)
	}
	var candidates int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 = $2`,
		tg.NamespaceID, want.SHA256[:]).Scan(&candidates); err != nil {
		t.Fatal(err)
	}
	if candidates != 0 {
		t.Error("the push left the candidate")
	}
	if ok, err := st.Objects().Exists(ctx, b.ObjectStorageKey); err != nil || !ok {
		t.Errorf("object after the push: exists %v, %v", ok, err)
	}
	if n := blobRows(t, st, tg.NamespaceID, want.SHA256); n != [3]int{1, 2, 2} {
		t.Fatalf("blob rows, attachments, links = %v, want 1, 2, 2", n)
	}
}

// TestPushIntoAnImageDeletedSinceResolve: a blob commit takes the image
// its request resolved without reading it again, so an image moved to the
// trash in between must not receive the link: the push links the blob to
// a new active image instead, where a pull finds it.
func TestPushIntoAnImageDeletedSinceResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, tg := acmeTarget(t, "app")
	first := bytes.Repeat([]byte("first "), 500)
	if _, err := cs.PutBlob(ctx, tg, bytes.NewReader(first), store.Expected{SHA256: sha256.Sum256(first), Size: int64(len(first))}); err != nil {
		t.Fatal(err)
	}
	stale, deleted := staleTarget(t, st, cs)

	blob := bytes.Repeat([]byte("after the delete "), 300)
	sum := sha256.Sum256(blob)
	if _, err := cs.PutBlob(ctx, stale, bytes.NewReader(blob), store.Expected{SHA256: sum, Size: int64(len(blob))}); err != nil {
		t.Fatal(err)
	}
	var inDeleted int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM container_blobs WHERE namespace_id = $1 AND container_image_id = $2 AND digest = $3`,
		stale.NamespaceID, deleted, sum[:]).Scan(&inDeleted); err != nil {
		t.Fatal(err)
	}
	if inDeleted != 0 {
		t.Fatal("the blob was linked to the image in the trash")
	}
	fresh, err := cs.ResolveTarget(ctx, "acme", "images", "app")
	if err != nil {
		t.Fatal(err)
	}
	if fresh.ImageID == uuid.Nil || fresh.ImageID == deleted {
		t.Fatalf("image after the push: %v, want a new active one (the deleted one was %v)", fresh.ImageID, deleted)
	}
	if _, err := cs.Blob(ctx, fresh, sum); err != nil {
		t.Fatalf("a pull from the image does not find the pushed blob: %v", err)
	}
}
