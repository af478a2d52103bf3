package gc

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

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

// A manifest refused for a blob its image does not hold writes nothing:
// no blob row, no object, so nothing can leak (the references are checked
// before the payload is stored).
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
}

// When the transaction refuses the manifest after its payload was stored
// (here the image was deleted after the request resolved it, so the push
// lands in a new, empty image), the payload gets a GC candidate in time,
// and GC reclaims it once past the review delay and the grace window. A
// payload something else references gets no candidate and stays.
func TestRejectedManifestPayloadIsReclaimed(t *testing.T) {
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
	c := e.candidate(orphan.Payload)
	if c == nil {
		t.Fatal("the refused payload has no GC candidate: it would leak")
	}
	if c.ReviewAfter.Before(e.clock.Now().Add(testReviewDelay - time.Second)) {
		t.Fatalf("candidate %+v is due before the review delay", c)
	}
	if e.candidate(shared.Payload) != nil {
		t.Fatal("a referenced payload got a candidate")
	}

	e.pastDelayAndGrace()
	if out := e.runGC(); out[store.GCReclaimed] != 1 {
		t.Fatalf("outcomes %v, want the refused payload reclaimed", out)
	}
	e.assertGone(orphan.Payload)
	e.assertIntact(shared.Payload)
	e.assertIntact(layer)
}
