package gc

import (
	"crypto/sha256"
	"testing"

	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store/container"
)

// TestRecordSubjects: rows stored before subjects were recorded (marked so
// here) are backfilled: an OCI manifest with its artifact type, a payload
// the push parser refuses without a subject (and said so), a Docker
// manifest without a read; a second run has nothing left to do. Without a
// parser the job does nothing.
func TestRecordSubjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	img := e.pushOCI("app", "v1", blobData("cfg", 300), blobData("layer", 1000))
	junk := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}`) // no config: refused today
	docker := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.list.v2+json","manifests":[]}`)
	cs := container.New(e.st)
	for _, m := range []container.ManifestPut{
		{Digest: sha256.Sum256(junk), MediaType: "application/vnd.oci.image.manifest.v1+json", Payload: junk},
		{Digest: sha256.Sum256(docker), MediaType: "application/vnd.docker.distribution.manifest.list.v2+json", Payload: docker},
	} {
		if _, err := cs.PutManifest(e.ctx, e.containerTarget("app"), m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE container_manifests SET subject_recorded = false, artifact_type = NULL WHERE namespace_id = $1`, e.ns); err != nil {
		t.Fatal(err)
	}
	if res, err := e.newGC(Config{}).RecordSubjects(e.ctx); err != nil || *res != (SubjectsResult{}) {
		t.Fatalf("without a parser: %+v %v", res, err)
	}
	g := e.newGC(Config{SubjectParser: oci.ManifestSubject})
	res, err := g.RecordSubjects(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if *res != (SubjectsResult{Recorded: 3, Unparsable: 1}) {
		t.Fatalf("backfill: %+v", res)
	}
	if n := e.count(`SELECT count(*) FROM container_manifests WHERE namespace_id = $1 AND NOT subject_recorded`, e.ns); n != 0 {
		t.Fatalf("%d manifests left unrecorded", n)
	}
	if n := e.count(`SELECT count(*) FROM container_manifests WHERE namespace_id = $1 AND digest = $2
		AND artifact_type = 'application/vnd.oci.image.config.v1+json' AND subject_digest IS NULL`, e.ns, img.Digest[:]); n != 1 {
		t.Fatal("the image manifest's artifact type was not recorded")
	}
	if res, err := g.RecordSubjects(e.ctx); err != nil || *res != (SubjectsResult{}) {
		t.Fatalf("second run: %+v %v", res, err)
	}
}
