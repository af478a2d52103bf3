package gc

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// ociManifest is a valid OCI image manifest over a config and layers (the
// backfill parses it like a push would).
func ociManifest(config []byte, layers ...[]byte) container.ManifestPut {
	desc := func(mt string, b []byte) string {
		return fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d}`, mt, store.FormatSHA256(sha256.Sum256(b)), len(b))
	}
	payload := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` +
		desc("application/vnd.oci.image.config.v1+json", config) + `,"layers":[`
	refs := []container.BlobRef{{SHA256: sha256.Sum256(config), Size: int64(len(config))}}
	for i, l := range layers {
		if i > 0 {
			payload += ","
		}
		payload += desc("application/vnd.oci.image.layer.v1.tar+gzip", l)
		refs = append(refs, container.BlobRef{SHA256: sha256.Sum256(l), Size: int64(len(l))})
	}
	payload += "]}"
	return container.ManifestPut{Digest: sha256.Sum256([]byte(payload)), MediaType: "application/vnd.oci.image.manifest.v1+json",
		Payload: []byte(payload), Blobs: refs}
}

// pushOCI uploads config and layers to an image and pushes their manifest.
func (e *env) pushOCI(image, tag string, config []byte, layers ...[]byte) container.ManifestPut {
	e.t.Helper()
	cs := container.New(e.st)
	for _, b := range append([][]byte{config}, layers...) {
		if _, err := cs.PutBlob(e.ctx, e.containerTarget(image), bytes.NewReader(b), store.Expected{SHA256: sha256.Sum256(b), Size: int64(len(b))}); err != nil {
			e.t.Fatal(err)
		}
	}
	m := ociManifest(config, layers...)
	m.Tags = []string{tag}
	if _, err := cs.PutManifest(e.ctx, e.containerTarget(image), m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

func (e *env) links(image string, data []byte) int {
	e.t.Helper()
	return e.count(`SELECT count(*) FROM container_blobs cb JOIN container_images ci ON ci.namespace_id = cb.namespace_id AND ci.id = cb.container_image_id
		WHERE cb.namespace_id = $1 AND ci.name = $2 AND cb.digest = $3`, e.ns, image, digestOf(data))
}

func (e *env) emptyTrash() *catalog.Purged {
	e.t.Helper()
	p, err := catalog.New(e.st).EmptyTrash(e.ctx, e.ns)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// TestPurgeFreesUniqueLayers: purging a manifest frees the image's links
// to its config and layers that no other manifest of the image needs
// (their blobs become candidates); a layer another manifest of the image
// references (even one in the trash) keeps its link, and a layer another
// image holds stays attached through that image's own link.
func TestPurgeFreesUniqueLayers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	cfg1, l1, l2 := blobData("cfg1", 300), blobData("l1", 1000), blobData("l2", 1100)
	cfg2, l3 := blobData("cfg2", 301), blobData("l3", 1200)
	trashedKeeper := blobData("l4", 1300)
	gone := e.pushOCI("app", "v1", cfg1, l1, l2, trashedKeeper)
	e.pushOCI("app", "v2", cfg2, l2, l3) // shares l2 within the image
	e.pushOCI("other", "v1", blobData("cfg3", 302), l1)
	keeper := e.pushOCI("app", "v3", blobData("cfg4", 303), trashedKeeper)
	e.deleteManifest("app", keeper) // in the trash, not purged: still needs l4
	e.deleteManifest("app", gone)

	// Inside the grace window nothing but the payload is freed; the image
	// is left for the review.
	id := e.manifestID(gone)
	if _, err := catalog.New(e.st).PurgeTrash(e.ctx, e.ns, []uuid.UUID{id}); err != nil {
		t.Fatal(err)
	}
	if e.links("app", l1) != 1 || e.candidate(cfg1) != nil {
		t.Fatal("a link younger than the grace window was freed")
	}
	if n := e.count(`SELECT count(*) FROM container_images WHERE namespace_id = $1 AND unreferenced_links_pending`, e.ns); n != 1 {
		t.Fatalf("pending images: %d", n)
	}
	// Past the grace window the review frees them.
	e.clock.Advance(container.New(e.st).LinkGrace() + time.Minute)
	g := e.newGC(Config{ManifestParser: oci.BlobReferences})
	res, err := g.RecordReferences(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.LinksFreed != 2 { // cfg1 and l1 (l2 and l4 are still referenced)
		t.Fatalf("links freed by the review: %+v", res)
	}
	for name, data := range map[string][]byte{"config": cfg1} {
		if e.attachments(data) != 0 || e.candidate(data) == nil {
			t.Errorf("%s: %d attachments, candidate %v", name, e.attachments(data), e.candidate(data))
		}
	}
	if e.links("app", l1) != 0 || e.links("other", l1) != 1 || e.attachments(l1) != 1 || e.candidate(l1) != nil {
		t.Errorf("l1 shared with another image: app links %d, other links %d, attachments %d", e.links("app", l1), e.links("other", l1), e.attachments(l1))
	}
	for name, data := range map[string][]byte{"l2 (v2)": l2, "l4 (trashed v3)": trashedKeeper} {
		if e.links("app", data) != 1 || e.candidate(data) != nil {
			t.Errorf("%s lost its link", name)
		}
	}
	if n := e.count(`SELECT count(*) FROM container_images WHERE namespace_id = $1 AND unreferenced_links_pending`, e.ns); n != 0 {
		t.Fatalf("pending images after the review: %d", n)
	}
	// Purging the trashed v3 past the grace frees l4 at once.
	e.emptyTrash()
	if e.links("app", trashedKeeper) != 0 || e.candidate(trashedKeeper) == nil {
		t.Errorf("l4: links %d after its last manifest was purged", e.links("app", trashedKeeper))
	}
	e.pastDelayAndGrace()
	e.runGC()
	e.assertGone(cfg1)
	e.assertGone(trashedKeeper)
	e.assertIntact(l1)
	e.assertIntact(l2)
}

// TestPurgeOnlyManifestMakesLayersCandidates: the sweep purging an
// image's only manifest past the grace window makes its config and both
// layers candidates at once.
func TestPurgeOnlyManifestMakesLayersCandidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	cfg, l1, l2 := blobData("cfg", 300), blobData("L1", 1000), blobData("L2", 1100)
	m := e.pushOCI("app", "v1", cfg, l1, l2)
	e.deleteManifest("app", m)
	e.clock.Advance(8 * 24 * time.Hour)
	res := e.sweep()
	if res.Rows[catalog.TrashContainerManifest] != 1 {
		t.Fatalf("sweep: %v", res.Rows)
	}
	for name, data := range map[string][]byte{"config": cfg, "L1": l1, "L2": l2, "payload": m.Payload} {
		if e.attachments(data) != 0 || e.candidate(data) == nil {
			t.Errorf("%s: %d attachments", name, e.attachments(data))
		}
	}
}

func (e *env) manifestID(m container.ManifestPut) uuid.UUID {
	e.t.Helper()
	var id uuid.UUID
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM container_manifests WHERE namespace_id = $1 AND digest = $2`, e.ns, m.Digest[:]).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// TestBackfillRecordsOldManifests: manifests stored before references were
// recorded (simulated by removing their rows and the marker) keep every
// link through a purge; the backfill reads their payloads, records them,
// and the review then frees what the purged manifest alone used.
func TestBackfillRecordsOldManifests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	cfg1, l1, shared := blobData("old-cfg1", 300), blobData("old-l1", 1000), blobData("old-shared", 1100)
	gone := e.pushOCI("app", "v1", cfg1, l1, shared)
	kept := e.pushOCI("app", "v2", blobData("old-cfg2", 301), shared)
	e.exec(`DELETE FROM container_manifest_blob_references WHERE namespace_id = $1`, e.ns)
	e.exec(`UPDATE container_manifests SET blob_references_recorded = false WHERE namespace_id = $1`, e.ns)
	e.deleteManifest("app", gone)
	e.clock.Advance(container.New(e.st).LinkGrace() + time.Minute)
	e.emptyTrash()
	if e.links("app", l1) != 1 || e.links("app", cfg1) != 1 {
		t.Fatal("a purge freed links of an image with unrecorded manifests")
	}
	g := e.newGC(Config{ManifestParser: oci.BlobReferences})
	res, err := g.RecordReferences(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recorded != 1 || res.LinksFreed != 2 || res.Unreadable != 0 {
		t.Fatalf("backfill: %+v", res)
	}
	if n := e.count(`SELECT count(*) FROM container_manifest_blob_references WHERE namespace_id = $1 AND container_manifest_id = $2`, e.ns, e.manifestID(kept)); n != 2 {
		t.Fatalf("references recorded for v2: %d, want 2", n)
	}
	if e.candidate(l1) == nil || e.candidate(cfg1) == nil || e.links("app", shared) != 1 || e.candidate(shared) != nil {
		t.Fatal("after the backfill: unique blobs not candidates, or the shared layer lost")
	}
	if again, err := g.RecordReferences(e.ctx); err != nil || again.Recorded+again.LinksFreed != 0 {
		t.Fatalf("second run: %+v %v", again, err)
	}
}

// TestPurgeRacesPush: a purge freeing a layer races a push of a new
// manifest of the same image referencing it. The push either wins (the
// layer keeps its link and attachment) or fails with
// MANIFEST_BLOB_UNKNOWN; it never succeeds over a freed layer.
func TestPurgeRacesPush(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	cat := catalog.New(e.st)
	cs := container.New(e.st)
	grace := cs.LinkGrace()
	outcomes := map[string]int{}
	defer func() { t.Logf("outcomes: %v", outcomes) }()
	for i := range 8 {
		layer := blobData(fmt.Sprintf("race-layer-%d", i), 500)
		old := e.pushOCI("app", "old", blobData(fmt.Sprintf("race-cfg-%d", i), 200), layer)
		e.deleteManifest("app", old)
		e.clock.Advance(grace + time.Minute)
		id := e.manifestID(old)
		// The new manifest's own config is uploaded; its layer is found
		// linked already (a client's HEAD), so it is not uploaded again.
		cfg := blobData(fmt.Sprintf("race-newcfg-%d", i), 201)
		if _, err := cs.PutBlob(e.ctx, e.containerTarget("app"), bytes.NewReader(cfg), store.Expected{SHA256: sha256.Sum256(cfg), Size: int64(len(cfg))}); err != nil {
			t.Fatal(err)
		}
		next := ociManifest(cfg, layer)
		var (
			wg               sync.WaitGroup
			purgeErr, putErr error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			purgeErr = retry(func() error { _, err := cat.PurgeTrash(e.ctx, e.ns, []uuid.UUID{id}); return err })
		}()
		go func() {
			defer wg.Done()
			putErr = retry(func() error { _, err := cs.PutManifest(e.ctx, e.containerTarget("app"), next); return err })
		}()
		wg.Wait()
		if purgeErr != nil {
			t.Fatalf("round %d: purge: %v", i, purgeErr)
		}
		links, atts := e.links("app", layer), e.attachments(layer)
		switch {
		case putErr == nil:
			outcomes["push kept the layer"]++
			if links != 1 || atts != 1 || e.candidate(layer) != nil {
				t.Fatalf("round %d: push succeeded but the layer has %d links, %d attachments", i, links, atts)
			}
		case store.HasCode(putErr, container.CodeManifestBlobUnknown):
			outcomes["push refused"]++
			if links != 0 || atts != 0 || e.candidate(layer) == nil {
				t.Fatalf("round %d: push refused but the layer has %d links, %d attachments", i, links, atts)
			}
		default:
			t.Fatalf("round %d: push: %v", i, putErr)
		}
	}
}
