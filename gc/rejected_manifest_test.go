package gc

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// manifestOf is an image manifest payload over blobs (by content).
func manifestOf(name string, blobs ...[]byte) container.ManifestPut {
	var refs []container.BlobRef
	payload := fmt.Sprintf(`{"schemaVersion":2,"name":%q,"layers":[`, name)
	for i, b := range blobs {
		d := sha256.Sum256(b)
		refs = append(refs, container.BlobRef{SHA256: d, Size: int64(len(b))})
		if i > 0 {
			payload += ","
		}
		payload += fmt.Sprintf(`{"digest":%q,"size":%d}`, store.FormatSHA256(d), len(b))
	}
	payload += "]}"
	return container.ManifestPut{
		Digest: sha256.Sum256([]byte(payload)), MediaType: "application/vnd.oci.image.manifest.v1+json",
		Payload: []byte(payload), Blobs: refs,
	}
}

func (e *env) containerTarget(image string) *container.Target {
	e.t.Helper()
	var slug string
	if err := e.pool.QueryRow(e.ctx, `SELECT slug FROM namespaces WHERE id = $1`, e.ns).Scan(&slug); err != nil {
		e.t.Fatal(err)
	}
	t, err := container.New(e.st).ResolveTarget(e.ctx, slug, "images", image)
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

// A manifest refused for a blob or child its image does not hold leaves
// nothing: no blob row, no object, no upload session.
func TestRejectedManifestStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	layer := blobData("layer", 3000)
	tgt := e.containerTarget("app")
	if _, err := container.New(e.st).PutBlob(e.ctx, tgt, bytes.NewReader(layer),
		store.Expected{SHA256: sha256.Sum256(layer), Size: int64(len(layer))}); err != nil {
		t.Fatal(err)
	}
	// One blob held, one missing; and a manifest pushed to an image that
	// does not exist yet.
	m := manifestOf("missing-layer", layer, blobData("never pushed", 100))
	_, err := container.New(e.st).PutManifest(e.ctx, e.containerTarget("app"), m)
	if !store.HasCode(err, container.CodeManifestBlobUnknown) {
		t.Fatalf("push: %v, want ErrContainerManifestBlobUnknown", err)
	}
	fresh := manifestOf("fresh-image", layer)
	_, err = container.New(e.st).PutManifest(e.ctx, e.containerTarget("other"), fresh)
	if !store.HasCode(err, container.CodeManifestBlobUnknown) {
		t.Fatalf("push to a new image: %v, want ErrContainerManifestBlobUnknown", err)
	}
	index := container.ManifestPut{
		Digest: sha256.Sum256([]byte(`{"index":1}`)), MediaType: "application/vnd.oci.image.index.v1+json",
		Payload: []byte(`{"index":1}`), Children: [][32]byte{sha256.Sum256([]byte("no such child"))},
	}
	_, err = container.New(e.st).PutManifest(e.ctx, e.containerTarget("app"), index)
	if !store.HasCode(err, container.CodeManifestChildUnknown) {
		t.Fatalf("index push: %v, want ErrContainerManifestChildUnknown", err)
	}
	for _, p := range [][]byte{m.Payload, fresh.Payload, index.Payload} {
		e.assertGone(p)
	}
	e.assertNoUploadSessions()
}

// When the transaction refuses the manifest for a reference its image
// lost (here the image was deleted after the request resolved it, so the
// push lands in a new, empty image), the payload's blob row goes
// with the transaction and its bytes never leave the upload: nothing is
// stored, no session is left, and there is nothing for GC to reclaim. A
// payload that something else references is only locked by the refused
// push: it stays, with no candidate.
func TestRejectedManifestLeavesNoPayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	layer := blobData("layer", 3000)
	put := func(image string) {
		t.Helper()
		if _, err := container.New(e.st).PutBlob(e.ctx, e.containerTarget(image), bytes.NewReader(layer),
			store.Expected{SHA256: sha256.Sum256(layer), Size: int64(len(layer))}); err != nil {
			t.Fatal(err)
		}
	}
	put("app")
	put("kept")
	orphan := manifestOf("refused", layer)
	shared := manifestOf("shared", layer)
	if _, err := container.New(e.st).PutManifest(e.ctx, e.containerTarget("kept"), shared); err != nil {
		t.Fatal(err)
	}

	stale := e.containerTarget("app")
	if _, err := e.pool.Exec(e.ctx, `UPDATE container_images SET soft_deleted_at = now()
		WHERE namespace_id = $1 AND id = $2`, e.ns, stale.ImageID); err != nil {
		t.Fatal(err)
	}
	for _, m := range []container.ManifestPut{orphan, shared} {
		tgt := *stale
		if _, err := container.New(e.st).PutManifest(e.ctx, &tgt, m); !store.HasCode(err, container.CodeManifestBlobUnknown) {
			t.Fatalf("push into the deleted image: %v, want ErrContainerManifestBlobUnknown", err)
		}
	}
	e.assertGone(orphan.Payload)
	for _, m := range []container.ManifestPut{orphan, shared} {
		if e.candidate(m.Payload) != nil {
			t.Fatalf("the payload %s of a refused push got a GC candidate", m.Digest)
		}
	}
	e.assertNoUploadSessions()
	e.assertIntact(shared.Payload)
	e.assertIntact(layer)
}

func (e *env) assertNoUploadSessions() {
	e.t.Helper()
	if n := e.count(`SELECT count(*) FROM upload_sessions WHERE namespace_id = $1`, e.ns); n != 0 {
		e.t.Fatalf("%d upload sessions left behind", n)
	}
}
