package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	lifecyclestore "github.com/artifact-registry/artifact-registry/store/lifecycle"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// seed adds an image with n tagged manifests pushed days ago, an hour apart.
func seed(t *testing.T, st *store.Store, repo *store.Repository, n int) {
	t.Helper()
	ctx := context.Background()
	img := uuid.Must(uuid.NewV7())
	if _, err := st.Pool().Exec(ctx, `INSERT INTO container_images (id, namespace_id, container_repository_id, name)
		SELECT $1, $2, id, 'app' FROM container_repositories WHERE namespace_id = $2 AND repository_id = $3`,
		img, repo.NamespaceID, repo.ID); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		content := fmt.Sprintf("%s-%d", repo.ID, i)
		var att int64
		if err := st.Pool().QueryRow(ctx, `
			WITH b AS (INSERT INTO blob_storage_blobs (namespace_id, sha256, size, object_storage_key)
			           VALUES ($1, sha256(convert_to($2, 'UTF8')), 10, 'k/' || $2))
			INSERT INTO blob_storage_attachments (namespace_id, sha256) VALUES ($1, sha256(convert_to($2, 'UTF8'))) RETURNING id`,
			repo.NamespaceID, content).Scan(&att); err != nil {
			t.Fatal(err)
		}
		id := uuid.Must(uuid.NewV7())
		if _, err := st.Pool().Exec(ctx, `
			INSERT INTO container_manifests (id, namespace_id, container_image_id, digest, media_type,
			  blob_storage_attachment_id, blob_sha256, size, created_at)
			VALUES ($1, $2, $3, sha256(convert_to($4, 'UTF8')), 'application/vnd.oci.image.manifest.v1+json', $5,
			  sha256(convert_to($4, 'UTF8')), 10, now() - interval '10 days' + make_interval(hours => $6));
			`, id, repo.NamespaceID, img, content, att, i); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Pool().Exec(ctx, `INSERT INTO container_tags (id, namespace_id, container_image_id, container_manifest_id, name)
			VALUES ($1, $2, $3, $4, $5)`, uuid.Must(uuid.NewV7()), repo.NamespaceID, img, id, fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
}

func active(t *testing.T, st *store.Store, nsID uuid.UUID) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM container_manifests
		WHERE namespace_id = $1 AND soft_deleted_at IS NULL`, nsID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestApplyThroughRiver: the registered worker, run by a real River
// client, applies an enabled namespace default and leaves a namespace
// whose policy is disabled alone; the metric counts the deletions.
func TestApplyThroughRiver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	st := testsupport.Store(t, testsupport.StoreOptions{Pool: pool, Mem: true})
	ls := lifecyclestore.New(st, lifecyclestore.Options{})
	count := 2
	var nss []*store.Namespace
	for _, slug := range []string{"on", "off"} {
		ns := testsupport.Namespace(t, st, slug)
		repo := testsupport.Repository(t, st, slug, "img", enum.FormatOCI, enum.VisibilityPrivate)
		seed(t, st, repo, 6)
		if _, err := ls.Set(ctx, lifecyclestore.Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug},
			lifecyclestore.Input{Enabled: slug == "on", MinAgeDays: 1, Rules: []lifecyclestore.Rule{{Type: lifecyclestore.KeepLastN, Count: &count}}}); err != nil {
			t.Fatal(err)
		}
		nss = append(nss, ns)
	}

	a := New(st, Config{Interval: time.Hour, Logger: testsupport.Discard()})
	workers := river.NewWorkers()
	periodic := a.Register(workers)
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues: a.Queues(), Workers: workers, PeriodicJobs: periodic, Logger: testsupport.Discard(),
		FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond, TestOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	events, cancel := c.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	select {
	case ev := <-events:
		if ev.Kind != river.EventKindJobCompleted || ev.Job.Kind != KindApply {
			t.Fatalf("job %s: %s %v", ev.Job.Kind, ev.Kind, ev.Job.Errors)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("lifecycle:apply did not run")
	}
	if n := active(t, st, nss[0].ID); n != 2 {
		t.Errorf("enabled namespace: %d active manifests, want 2", n)
	}
	if n := active(t, st, nss[1].ID); n != 6 {
		t.Errorf("disabled namespace: %d active manifests, want 6", n)
	}
	if got := testutil.ToFloat64(a.deleted.WithLabelValues(string(lifecyclestore.KindContainerManifest))); got != 4 {
		t.Errorf("metric: %v deleted, want 4", got)
	}
	// A second run has nothing left to do.
	res, err := a.Apply(ctx)
	if err != nil || res.Deleted != 0 {
		t.Fatalf("second run: %+v %v", res, err)
	}
}
