package container

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
)

// TestManifestPutSizeAndRepush: a new manifest's size is its payload plus
// each distinct blob it references once; pushing the same manifest again
// with another tag creates no row and only adds the tag.
func TestManifestPutSizeAndRepush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, tg := acmeTarget(t, "app")
	config, layer := []byte(`{"os":"linux"}`), bytes.Repeat([]byte("layer"), 1000)
	for _, b := range [][]byte{config, layer} {
		if _, err := cs.PutBlob(ctx, tg, bytes.NewReader(b), store.Expected{SHA256: sha256.Sum256(b), Size: int64(len(b))}); err != nil {
			t.Fatal(err)
		}
	}
	payload, _ := json.Marshal(map[string]any{"schemaVersion": 2, "layers": 2})
	in := ManifestPut{Digest: sha256.Sum256(payload), MediaType: MediaTypeOCIManifest, Payload: payload, Tags: []string{"v1"},
		Blobs: []BlobRef{{SHA256: sha256.Sum256(config)}, {SHA256: sha256.Sum256(layer)}, {SHA256: sha256.Sum256(layer)}}}
	first, err := cs.PutManifest(ctx, tg, in)
	if err != nil || !first.Created {
		t.Fatalf("first push: %+v %v", first, err)
	}
	var size int64
	if err := st.Pool().QueryRow(ctx, `SELECT size FROM container_manifests WHERE id = $1`, first.ManifestID).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if want := int64(len(payload) + len(config) + len(layer)); size != want {
		t.Fatalf("size %d, want %d (the payload and each blob once)", size, want)
	}

	in.Tags = []string{"v2"}
	again, err := cs.PutManifest(ctx, tg, in)
	if err != nil || again.Created || again.ManifestID != first.ManifestID {
		t.Fatalf("second push: %+v %v, want the first row (%s) not created again", again, err, first.ManifestID)
	}
	var rows, tags, attachments int
	if err := st.Pool().QueryRow(ctx, `SELECT
		(SELECT count(*) FROM container_manifests WHERE digest = $1),
		(SELECT count(*) FROM container_tags WHERE container_manifest_id = $2),
		(SELECT count(*) FROM blob_storage_attachments WHERE sha256 = $1)`, in.Digest[:], first.ManifestID).Scan(&rows, &tags, &attachments); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || tags != 2 || attachments != 1 {
		t.Fatalf("after the second push: %d manifest rows, %d tags, %d attachments of the payload; want 1, 2, 1", rows, tags, attachments)
	}
}

// TestManifestPushIntoAnImageDeletedSinceResolve: a manifest push takes
// the image its request resolved without reading it first, so an image
// moved to the trash in between must not receive the manifest: the push
// lands in a new active image, where a pull by tag finds it.
func TestManifestPushIntoAnImageDeletedSinceResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, tg := acmeTarget(t, "app")
	first, _ := json.Marshal(map[string]any{"schemaVersion": 2, "first": true})
	if _, err := cs.PutManifest(ctx, tg, ManifestPut{Digest: sha256.Sum256(first), MediaType: MediaTypeOCIManifest,
		Payload: first, Tags: []string{"v1"}}); err != nil {
		t.Fatal(err)
	}
	stale, deleted := staleTarget(t, st, cs)

	payload, _ := json.Marshal(map[string]any{"schemaVersion": 2, "after": "the delete"})
	res, err := cs.PutManifest(ctx, stale, ManifestPut{Digest: sha256.Sum256(payload), MediaType: MediaTypeOCIManifest,
		Payload: payload, Tags: []string{"v2"}})
	if err != nil || !res.Created {
		t.Fatalf("push after the delete: %+v %v", res, err)
	}
	var image uuid.UUID
	if err := st.Pool().QueryRow(ctx, `SELECT container_image_id FROM container_manifests WHERE id = $1`, res.ManifestID).Scan(&image); err != nil {
		t.Fatal(err)
	}
	if image == deleted {
		t.Fatal("the manifest was inserted into the image in the trash")
	}
	fresh, row, err := cs.ResolveTargetTagIn(ctx, stale.NamespaceID, "acme", "images", "app", "v2")
	if err != nil {
		t.Fatal(err)
	}
	if fresh.ImageID != image || row == nil || row.ID != res.ManifestID {
		t.Fatalf("pull by tag: image %v, row %+v; want image %v, manifest %v", fresh.ImageID, row, image, res.ManifestID)
	}
}
