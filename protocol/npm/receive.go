package npm

import (
	"context"
	"io"

	"github.com/artifact-registry/artifact-registry/protocol/npm/npmpublish"
	"github.com/artifact-registry/artifact-registry/store"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

// receivedTarball is a publish's tarball, staged in the blob layer while
// the body streamed in, with its facts.
type receivedTarball struct {
	npmpublish.Facts
	blob *store.StagedBlob
}

// discard drops the staged bytes of a tarball that is not published (a
// no-op once the publish took it, and on nil).
func (t *receivedTarball) discard(ctx context.Context) {
	if t != nil && t.blob != nil {
		t.blob.Close(ctx, false)
	}
}

// receiveTarball decodes the base64 of a publish's data string into a
// staged upload, in one pass and without holding the tarball (see
// npmpublish.Decoder). A refused tarball leaves nothing staged.
func (h *handler) receiveTarball(req *request, repo *npmstore.Repository, data io.Reader) (*receivedTarball, error) {
	ctx := req.r.Context()
	d := npmpublish.NewDecoder(data, h.opts.MaxTarballSize, h.opts.MaxUnpackedSize)
	blob, err := h.st.StageStream(ctx, store.UploadRef{NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID}, d)
	var size int64
	if blob != nil {
		size = blob.Size()
	}
	var overLimit error
	if store.HasCode(err, store.CodeBlobTooLarge) {
		overLimit = storeError(err)
	}
	facts, err := d.Finish(err, size, overLimit)
	t := &receivedTarball{Facts: facts, blob: blob}
	if err != nil {
		t.discard(ctx)
		return nil, publishError(err)
	}
	blob.SetSHA1(t.SHA1)
	// The bytes are all there: their sync may run while the rest of the
	// request is handled.
	blob.SealAsync()
	return t, nil
}
