package counters

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// BenchmarkReconcileMillionBlobs: one reconciliation pass over a namespace
// holding 1,000,000 blobs (seeded by SQL: 10,000 images of one container
// repository, 100 layers each), and the latency of container pushes into
// the same namespace while passes run (reported as push-p50/p99 ms next
// to the same pushes without a pass running).
func BenchmarkReconcileMillionBlobs(b *testing.B) {
	const images, perImage = 10_000, 100
	pool := testdb.New(b)
	st := testsupport.Store(b, testsupport.StoreOptions{Pool: pool, Mem: true})
	ctx := b.Context()
	ns, err := st.CreateNamespace(ctx, "bench-acct")
	if err != nil {
		b.Fatal(err)
	}
	repo, err := st.CreateRepository(ctx, store.NewRepository{Namespace: "bench-acct", Name: "big",
		Format: enum.FormatOCI, Kind: enum.KindHosted, Visibility: enum.VisibilityPrivate})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	// Seeded with the triggers off (session_replication_role = replica):
	// the first pass then has everything to correct.
	tx, err := pool.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO container_images (id, namespace_id, container_repository_id, name)
		 SELECT gen_uuidv7(), $1, (SELECT id FROM container_repositories WHERE namespace_id = $1 AND repository_id = $2), 'img-' || g
		 FROM generate_series(1, ` + fmt.Sprint(images) + `) g`,
		`INSERT INTO blob_storage_blobs (namespace_id, sha256, size, object_storage_key)
		 SELECT $1, sha256(int8send(g)), 1000 + g % 5000, 'objects/' || g FROM generate_series(1, ` + fmt.Sprint(images*perImage) + `) g`,
		// The shadow's own trigger is off too.
		`INSERT INTO blob_storage_blobs_by_namespace (namespace_id, sha256, size)
		 SELECT namespace_id, sha256, size FROM blob_storage_blobs WHERE namespace_id = $1`,
		`INSERT INTO blob_storage_attachments (namespace_id, sha256)
		 SELECT $1, sha256 FROM blob_storage_blobs WHERE namespace_id = $1`,
		`INSERT INTO container_blobs (id, namespace_id, container_image_id, digest, media_type, blob_storage_attachment_id, blob_sha256)
		 SELECT gen_uuidv7(), $1, i.id, a.sha256, 'layer', a.id, a.sha256
		 FROM (SELECT id, sha256, row_number() OVER (ORDER BY id) - 1 AS n FROM blob_storage_attachments WHERE namespace_id = $1) a
		 JOIN (SELECT id, row_number() OVER (ORDER BY name) - 1 AS n FROM container_images WHERE namespace_id = $1) i
		   ON i.n = a.n / ` + fmt.Sprint(perImage),
	} {
		args := []any{ns.ID}
		if bytes.Contains([]byte(q), []byte("$2")) {
			args = append(args, repo.ID)
		}
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			b.Fatalf("seed: %v", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE`); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d blobs in %s", images*perImage, time.Since(start).Round(time.Second))
	// The first pass corrects the uncounted seed; after a fold the
	// counters are exact and the timed passes find no drift.
	t0 := time.Now()
	res, err := st.ReconcileNamespaceCounters(ctx, ns.ID, 0)
	if err != nil || len(res.Drifts) == 0 {
		b.Fatalf("first pass: %+v %v", res, err)
	}
	b.Logf("first pass (corrects %d counters): %s", len(res.Drifts), time.Since(t0).Round(time.Millisecond))
	if _, err := st.FoldCounterDeltas(ctx, ns.ID, 0, 0); err != nil {
		b.Fatal(err)
	}

	cs := container.New(st)
	push := func(i int) time.Duration {
		t0 := time.Now()
		l := []byte(fmt.Sprintf("bench layer %d %d", i, time.Now().UnixNano()))
		t, err := cs.ResolveTarget(ctx, "bench-acct", "big", "pushed")
		if err == nil {
			_, err = cs.PutBlob(ctx, t, bytes.NewReader(l), store.Expected{SHA256: sha256.Sum256(l), Size: int64(len(l))})
		}
		if err != nil {
			b.Error(err)
		}
		return time.Since(t0)
	}
	pct := func(ds []time.Duration, p float64) float64 {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return float64(ds[int(float64(len(ds)-1)*p)].Microseconds()) / 1000
	}
	var idle []time.Duration
	for i := range 50 {
		idle = append(idle, push(i))
	}

	var during []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		done := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-done:
					return
				default:
				}
				during = append(during, push(1000*i+j))
			}
		}()
		res, err := st.ReconcileNamespaceCounters(ctx, ns.ID, 0)
		close(done)
		wg.Wait()
		if err != nil || len(res.Drifts) != 0 {
			b.Fatalf("pass: %+v %v", res, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(during))/float64(b.N), "pushes/pass")
	b.ReportMetric(pct(idle, 0.5), "idle-push-p50-ms")
	b.ReportMetric(pct(idle, 0.99), "idle-push-p99-ms")
	if len(during) > 0 {
		b.ReportMetric(pct(during, 0.5), "push-p50-ms")
		b.ReportMetric(pct(during, 0.99), "push-p99-ms")
	}
}
