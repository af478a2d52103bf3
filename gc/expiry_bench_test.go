package gc

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store/catalog"
)

// uuidv7SQL makes a version-7 UUID from a random one (the schema checks
// the version nibble; the bench needs no time order).
const uuidv7SQL = `encode(set_byte(uuid_send(gen_random_uuid()), 6, (get_byte(uuid_send(gen_random_uuid()), 6) & 15) | 112), 'hex')::uuid`

// BenchmarkExpirySweep: the rate of gc:expiry-sweep over 100,000 expired
// container manifests (GC_BENCH_EXPIRED to change), each with its own
// blob and attachment, seeded via SQL in one image (not timed). The timed
// part is one ExpirySweep that purges them all, detaches every attachment
// and records a candidate per blob. Reports rows/s.
//
//	go test -run '^$' -bench ExpirySweep -benchtime 1x ./gc/
func BenchmarkExpirySweep(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GC_BENCH_EXPIRED")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		b.StopTimer()
		batch, _ := strconv.Atoi(os.Getenv("GC_BENCH_EXPIRY_BATCH"))
		e := newEnv(b, Config{ExpiryBatch: batch})
		img := e.containerTarget("app")
		if _, err := ensureImage(e, img.RepositoryID); err != nil {
			b.Fatal(err)
		}
		seedExpiredManifests(b, e, n)
		e.clock.Advance(8 * 24 * time.Hour)
		b.StartTimer()

		start := time.Now()
		res, err := e.g.ExpirySweep(e.ctx)
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if got := res.Rows[catalog.TrashContainerManifest]; got != n {
			b.Fatalf("purged %d of %d", got, n)
		}
		if c := e.count(`SELECT count(*) FROM gc_blob_review_queue WHERE namespace_id = $1`, e.ns); c != n {
			b.Fatalf("%d candidates, want %d", c, n)
		}
		b.ReportMetric(float64(n)/elapsed.Seconds(), "rows/s")
		b.StartTimer()
	}
}

func ensureImage(e *env, repoID any) (string, error) {
	_, err := e.pool.Exec(e.ctx, `INSERT INTO container_images (id, namespace_id, container_repository_id, name)
		SELECT `+uuidv7SQL+`, $1, id, 'app' FROM container_repositories WHERE namespace_id = $1 AND repository_id = $2`, e.ns, repoID)
	return "app", err
}

// seedExpiredManifests bulk-inserts n blobs, their attachments and n
// manifests of image "app" soft-deleted 30 days ago.
func seedExpiredManifests(b testing.TB, e *env, n int) {
	b.Helper()
	e.exec(`INSERT INTO blob_storage_blobs (namespace_id, sha256, object_storage_key, size)
		SELECT $1, sha256(('expired-' || i)::bytea), 'bench/' || i, 100 FROM generate_series(1, $2) i`, e.ns, n)
	e.exec(`INSERT INTO blob_storage_attachments (namespace_id, sha256)
		SELECT $1, sha256(('expired-' || i)::bytea) FROM generate_series(1, $2) i`, e.ns, n)
	e.exec(`INSERT INTO container_manifests (id, namespace_id, container_image_id, digest, media_type, blob_storage_attachment_id, blob_sha256, size, soft_deleted_at)
		SELECT `+uuidv7SQL+`, $1, ci.id, a.sha256, 'application/vnd.oci.image.manifest.v1+json', a.id, a.sha256, 100, now() - interval '30 days'
		FROM blob_storage_attachments a
		CROSS JOIN (SELECT id FROM container_images WHERE namespace_id = $1 AND name = 'app') ci
		WHERE a.namespace_id = $1`, e.ns)
	e.exec(`ANALYZE container_manifests`)
	e.exec(`ANALYZE blob_storage_attachments`)
}
