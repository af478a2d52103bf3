package container

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store/enum"

	"github.com/artifact-registry/artifact-registry/store"
)

// TestResolveTargetTag: the resolve that also reads a tag finds the
// manifest the tag of this image points at, and nothing for a tag of
// another image, an unknown tag, an image that does not exist yet or a
// deleted manifest; the target is the one ResolveTargetIn returns. The
// resolve by digest finds the image's own active manifests only.
func TestResolveTargetTag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, cs := acmeImages(t)
	config := []byte(`{}`)
	push := func(image, tag string, n int) [32]byte {
		t.Helper()
		tg, err := cs.ResolveTarget(ctx, "acme", "images", image)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.PutBlob(ctx, tg, bytes.NewReader(config), store.Expected{SHA256: sha256.Sum256(config), Size: int64(len(config))}); err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(map[string]any{"schemaVersion": 2, "n": n})
		in := ManifestPut{Digest: sha256.Sum256(payload), MediaType: MediaTypeOCIManifest, Payload: payload,
			Blobs: []BlobRef{{SHA256: sha256.Sum256(config), Size: int64(len(config))}}, Tags: []string{tag}}
		if _, err := cs.PutManifest(ctx, tg, in); err != nil {
			t.Fatal(err)
		}
		return in.Digest
	}
	app := push("app", "v1", 1)
	other := push("other", "v2", 2)
	nsID, err := cs.NamespaceID(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(image, tag string) (*Target, *ManifestRow) {
		t.Helper()
		tg, m, err := cs.ResolveTargetTagIn(ctx, nsID, "acme", "images", image, tag)
		if err != nil {
			t.Fatalf("%s:%s: %v", image, tag, err)
		}
		plain, err := cs.ResolveTargetIn(ctx, nsID, "acme", "images", image)
		if err != nil || *plain != *tg {
			t.Fatalf("%s:%s: target %+v, ResolveTargetIn %+v (%v)", image, tag, tg, plain, err)
		}
		return tg, m
	}

	tg, m := resolve("app", "v1")
	if m == nil || m.Digest != app || m.MediaType != MediaTypeOCIManifest {
		t.Fatalf("app:v1: manifest %+v, want %x", m, app)
	}
	for _, c := range []struct{ image, tag string }{{"app", "v2"}, {"app", "nope"}, {"new", "v1"}} {
		if _, m := resolve(c.image, c.tag); m != nil {
			t.Errorf("%s:%s: manifest %x, want none", c.image, c.tag, m.Digest)
		}
	}
	byDigest := func(image string, sha [32]byte) *ManifestRow {
		t.Helper()
		tg, m, err := cs.ResolveTargetDigestIn(ctx, nsID, "acme", "images", image, sha)
		if err != nil || tg.ImageName != image {
			t.Fatalf("%s@%x: %+v %v", image, sha[:4], tg, err)
		}
		return m
	}
	if m := byDigest("app", app); m == nil || m.Digest != app || m.MediaType != MediaTypeOCIManifest {
		t.Fatalf("app@digest: manifest %+v, want %x", m, app)
	}
	for _, c := range []struct {
		image string
		sha   [32]byte
	}{{"app", other}, {"new", app}, {"other", app}} {
		if m := byDigest(c.image, c.sha); m != nil {
			t.Errorf("%s@%x: manifest %x, want none", c.image, c.sha[:4], m.Digest)
		}
	}
	if err := cs.DeleteManifestByDigest(ctx, tg, app); err != nil {
		t.Fatal(err)
	}
	if _, m := resolve("app", "v1"); m != nil {
		t.Errorf("app:v1 after its manifest's delete: manifest %x, want none", m.Digest)
	}
	if m := byDigest("app", app); m != nil {
		t.Errorf("app@digest after its delete: manifest %x, want none", m.Digest)
	}
	if _, _, err := cs.ResolveTargetTagIn(ctx, nsID, "acme", "missing", "app", "v1"); !store.HasCode(err, CodeNameUnknown) {
		t.Errorf("unknown repository: %v, want %s", err, CodeNameUnknown.Name)
	}
}

// acmeImages is a store holding the namespace acme with its private OCI
// repository images, and the container store on it.
func acmeImages(t *testing.T) (*store.Store, *Store) {
	t.Helper()
	st := testsupport.Store(t, testsupport.StoreOptions{})
	testsupport.Namespace(t, st, "acme")
	testsupport.Repository(t, st, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	return st, New(st)
}

// acmeTarget is acmeImages with the target of an image of images.
func acmeTarget(t *testing.T, image string) (*store.Store, *Store, *Target) {
	t.Helper()
	st, cs := acmeImages(t)
	tg, err := cs.ResolveTarget(context.Background(), "acme", "images", image)
	if err != nil {
		t.Fatal(err)
	}
	return st, cs, tg
}

// staleTarget resolves the acme image "app", which a push has created,
// then moves the image to the trash: the target is what a request that
// resolved just before the delete holds. It returns the deleted image.
func staleTarget(t *testing.T, st *store.Store, cs *Store) (*Target, uuid.UUID) {
	t.Helper()
	stale, err := cs.ResolveTarget(context.Background(), "acme", "images", "app")
	if err != nil {
		t.Fatal(err)
	}
	if stale.ImageID == uuid.Nil {
		t.Fatal("the resolve found no image after a push into it")
	}
	if _, err := st.Pool().Exec(context.Background(), `UPDATE container_images SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = $2`,
		stale.NamespaceID, stale.ImageID); err != nil {
		t.Fatal(err)
	}
	return stale, stale.ImageID
}

// TestResolveTargetBlobIn: the resolve of a blob read returns the blob row
// only when the image itself links the digest: not for another image of
// the repository that lacks it, nor for a digest nobody pushed; a name
// that does not resolve is still CodeNameUnknown.
func TestResolveTargetBlobIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, cs, tg := acmeTarget(t, "app")
	blob := bytes.Repeat([]byte("resolve "), 600)
	sum := sha256.Sum256(blob)
	if _, err := cs.PutBlob(ctx, tg, bytes.NewReader(blob), store.Expected{SHA256: sum, Size: int64(len(blob))}); err != nil {
		t.Fatal(err)
	}
	other := *tg
	other.ImageName, other.ImageID = "other", uuid.Nil
	if _, err := cs.PutBlob(ctx, &other, bytes.NewReader([]byte("another blob")), store.Expected{SHA256: sha256.Sum256([]byte("another blob")), Size: -1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		image string
		sha   [32]byte
		found bool
	}{{"app", sum, true}, {"other", sum, false}, {"never-pushed", sum, false}, {"app", sha256.Sum256([]byte("nobody")), false}} {
		got, b, err := cs.ResolveTargetBlobIn(ctx, tg.NamespaceID, "acme", "images", c.image, c.sha)
		if err != nil {
			t.Fatalf("%s: %v", c.image, err)
		}
		if got.ImageName != c.image || (b != nil) != c.found {
			t.Errorf("%s %x: target %q, blob %+v, want found %v", c.image, c.sha[:4], got.ImageName, b, c.found)
		}
		if b != nil && (b.SHA256 != sum || b.Size != int64(len(blob))) {
			t.Errorf("blob row %+v", b)
		}
	}
	if _, _, err := cs.ResolveTargetBlobIn(ctx, tg.NamespaceID, "acme", "no-such-repository", "app", sum); !store.HasCode(err, CodeNameUnknown) {
		t.Fatalf("unknown repository: %v", err)
	}
}
