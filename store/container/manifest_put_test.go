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

// TestManifestPushOfACandidatePayload: pushing into another image a
// manifest whose payload's blob row is a live GC candidate (its object
// already deleted by a collector that then crashed) clears the
// candidate, puts the object back and attaches the payload to the new
// manifest row, in the manifest's own insert.
func TestManifestPushOfACandidatePayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, tg := acmeTarget(t, "app")
	payload, _ := json.Marshal(map[string]any{"schemaVersion": 2, "candidate": true})
	in := ManifestPut{Digest: sha256.Sum256(payload), MediaType: MediaTypeOCIManifest, Payload: payload}
	if _, err := cs.PutManifest(ctx, tg, in); err != nil {
		t.Fatal(err)
	}
	var key string
	if err := st.Pool().QueryRow(ctx, `SELECT object_storage_key FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`,
		tg.NamespaceID, in.Digest[:]).Scan(&key); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after) VALUES ($1, $2, now())`,
		tg.NamespaceID, in.Digest[:]); err != nil {
		t.Fatal(err)
	}
	if err := st.Objects().Delete(ctx, key); err != nil {
		t.Fatal(err)
	}

	other := *tg
	other.ImageName, other.ImageID = "other", uuid.Nil
	res, err := cs.PutManifest(ctx, &other, in)
	if err != nil || !res.Created {
		t.Fatalf("push into the other image: %+v %v", res, err)
	}
	var candidates, attachments int
	var attached bool
	if err := st.Pool().QueryRow(ctx, `SELECT
		(SELECT count(*) FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 = $2),
		(SELECT count(*) FROM blob_storage_attachments WHERE namespace_id = $1 AND sha256 = $2),
		EXISTS (SELECT 1 FROM container_manifests m JOIN blob_storage_attachments a
		        ON a.id = m.blob_storage_attachment_id AND a.namespace_id = m.namespace_id
		        WHERE m.namespace_id = $1 AND m.id = $3 AND a.sha256 = $2)`,
		tg.NamespaceID, in.Digest[:], res.ManifestID).Scan(&candidates, &attachments, &attached); err != nil {
		t.Fatal(err)
	}
	if candidates != 0 || attachments != 2 || !attached {
		t.Fatalf("after the push: %d candidates, %d attachments, new row attached to the payload: %v; want 0, 2, true",
			candidates, attachments, attached)
	}
	if ok, err := st.Objects().Exists(ctx, key); err != nil || !ok {
		t.Fatalf("object after the push: exists %v, %v", ok, err)
	}
}
