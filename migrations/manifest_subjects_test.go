package migrations_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/gc"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/migrations"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
)

const manifestSubjectsVersion = 50

// TestManifestSubjectsUpgrade: a database of the release before 00050
// holds an image with an OCI image manifest, a signature attached to it
// (an artifact manifest with a subject, as `oras attach` pushes), a Docker
// manifest and an OCI manifest whose payload is gone from storage. The
// upgrade adds the columns without touching a row (every manifest is
// unrecorded, no subject); the backfill then reads the payloads from
// object storage: the signature's subject and artifact type are recorded,
// the image manifest records none, the Docker manifest is recorded without
// a read, the manifest without bytes stays unrecorded. The referrers of
// the image manifest are then an index lookup, and the new CHECKs hold.
func TestManifestSubjectsUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, manifestSubjectsVersion)
	objects := testsupport.FileObjects(t)
	f := newFixture(t, pool)
	ns := f.namespace()
	repo := f.repository(ns, 3, 0)
	cr := f.child("container_repositories", ns, repo)
	image := v7(t)
	f.must("container_images", row{"id", image, "namespace_id", ns, "container_repository_id", cr, "name", "app"})

	// manifest stores a payload as the push of the earlier release did: the
	// blob row and attachment, the object in storage (unless gone), the row.
	manifest := func(mediaType, payload string, stored bool) (uuid.UUID, []byte) {
		t.Helper()
		sum := sha256.Sum256([]byte(payload))
		d := sum[:]
		att := f.blob(ns, d, int64(len(payload)))
		if stored {
			if err := objects.WriteAll(ctx, "objects/"+hex.EncodeToString(d), []byte(payload)); err != nil {
				t.Fatal(err)
			}
		}
		id := v7(t)
		f.must("container_manifests", row{"id", id, "namespace_id", ns, "container_image_id", image, "digest", d,
			"media_type", mediaType, "blob_storage_attachment_id", att, "blob_sha256", d, "size", int64(len(payload)),
			"blob_references_recorded", true})
		return id, d
	}
	config := `{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:` +
		hex.EncodeToString(digest("config")) + `","size":2}`
	imagePayload := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` + config + `,"layers":[]}`
	imageID, imageDigest := manifest("application/vnd.oci.image.manifest.v1+json", imagePayload, true)
	signaturePayload := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"artifactType":"application/vnd.example.signature","config":{"mediaType":"application/vnd.oci.empty.v1+json",`+
		`"digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[],`+
		`"subject":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%x","size":%d},`+
		`"annotations":{"org.example.signed-by":"ci"}}`, imageDigest, len(imagePayload))
	signatureID, signatureDigest := manifest("application/vnd.oci.image.manifest.v1+json", signaturePayload, true)
	dockerID, _ := manifest("application/vnd.docker.distribution.manifest.v2+json", "not read: Docker manifests carry no subject", false)
	goneID, _ := manifest("application/vnd.oci.image.manifest.v1+json", `{"schemaVersion":2,"gone":true}`, false)

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	if n := f.count("container_manifests", "namespace_id = $1 AND NOT subject_recorded AND subject_digest IS NULL AND artifact_type IS NULL", ns); n != 4 {
		t.Fatalf("after the upgrade %d manifests are unrecorded without a subject, want all 4", n)
	}

	st := store.New(pool, objects, store.Options{})
	g, err := gc.New(st, gc.Config{SubjectParser: oci.ManifestSubject, Logger: testsupport.Errors()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.RecordSubjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recorded != 3 || res.WithSubject != 1 || res.Unreadable != 1 || res.Unparsable != 0 {
		t.Fatalf("backfill: %+v, want 3 recorded (1 with a subject) and 1 unreadable", res)
	}
	type recorded struct {
		subject      []byte
		artifactType *string
		done         bool
	}
	read := func(id uuid.UUID) recorded {
		t.Helper()
		var r recorded
		if err := pool.QueryRow(ctx, `SELECT subject_digest, artifact_type, subject_recorded FROM container_manifests
			WHERE namespace_id = $1 AND id = $2`, ns, id).Scan(&r.subject, &r.artifactType, &r.done); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := read(signatureID); !r.done || hex.EncodeToString(r.subject) != hex.EncodeToString(imageDigest) ||
		r.artifactType == nil || *r.artifactType != "application/vnd.example.signature" {
		t.Errorf("signature after the backfill: %+v", r)
	}
	if r := read(imageID); !r.done || r.subject != nil || r.artifactType == nil || *r.artifactType != "application/vnd.oci.image.config.v1+json" {
		t.Errorf("image manifest after the backfill: %+v", r)
	}
	if r := read(dockerID); !r.done || r.subject != nil || r.artifactType != nil {
		t.Errorf("Docker manifest after the backfill: %+v", r)
	}
	if r := read(goneID); r.done {
		t.Errorf("a manifest whose payload is gone was recorded: %+v", r)
	}

	// The referrers of the image manifest, as the OCI API asks for them.
	cs := container.New(st)
	target := &container.Target{NamespaceID: ns, ImageID: image}
	refs, err := cs.Referrers(ctx, target, [32]byte(imageDigest), "", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].Digest != [32]byte(signatureDigest) || refs[0].ArtifactType != "application/vnd.example.signature" ||
		refs[0].Payload.Size != int64(len(signaturePayload)) {
		t.Fatalf("referrers after the backfill: %+v", refs)
	}

	// The new columns are checked.
	for _, c := range []struct{ set, code string }{
		{"subject_digest = '\\x00'::bytea", codeCheck},
		{"artifact_type = repeat('a', 256)", codeCheck},
	} {
		_, err := pool.Exec(ctx, `UPDATE container_manifests SET `+c.set+` WHERE namespace_id = $1 AND id = $2`, ns, imageID)
		if sqlState(err) != c.code {
			t.Errorf("SET %s: %v, want SQLSTATE %s", c.set, err, c.code)
		}
	}
}
