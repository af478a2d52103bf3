package lifecycle

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/internal/db"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// seedImage inserts an image with n manifests pushed an hour apart, the
// newest pushed ageDays ago, each with its own blob; manifest i (0 =
// newest) is tagged "v<n-i>" when tagged says so. It returns the image
// id and the manifest ids, newest first. Rows are written with SQL so a
// benchmark can seed 100,000 of them in a few statements.
func seedImage(tb testing.TB, st *store.Store, repo *store.Repository, image string, n, ageDays int, tagged func(i int) bool) (uuid.UUID, []uuid.UUID) {
	tb.Helper()
	ctx := context.Background()
	pool := st.Pool()
	imageID := db.NewID()
	if _, err := pool.Exec(ctx, `
		INSERT INTO container_images (id, namespace_id, container_repository_id, name)
		SELECT $1, $2, cr.id, $4 FROM container_repositories cr WHERE cr.namespace_id = $2 AND cr.repository_id = $3`,
		imageID, repo.NamespaceID, repo.ID, image); err != nil {
		tb.Fatalf("seed image: %v", err)
	}
	ids := db.NewIDs(n)
	salt := imageID.String()
	if _, err := pool.Exec(ctx, `
		INSERT INTO blob_storage_blobs (namespace_id, sha256, size, object_storage_key)
		SELECT $1, sha256(convert_to($2 || g, 'UTF8')), 1000 + g, 'seed/' || $2 || g FROM generate_series(1, $3) g`,
		repo.NamespaceID, salt, n); err != nil {
		tb.Fatalf("seed blobs: %v", err)
	}
	if _, err := pool.Exec(ctx, `
		WITH a AS (
		  INSERT INTO blob_storage_attachments (namespace_id, sha256)
		  SELECT $1, sha256(convert_to($2 || g, 'UTF8')) FROM generate_series(1, $3) g
		  RETURNING id, sha256)
		INSERT INTO container_manifests (id, namespace_id, container_image_id, digest, media_type,
		                                 blob_storage_attachment_id, blob_sha256, size, created_at)
		SELECT u.id, $1, $4, a.sha256, 'application/vnd.oci.image.manifest.v1+json', a.id, a.sha256, 1000 + u.n,
		       now() - make_interval(days => $6) - make_interval(hours => u.n::int)
		FROM unnest($5::uuid[]) WITH ORDINALITY AS u(id, n)
		JOIN a ON a.sha256 = sha256(convert_to($2 || u.n, 'UTF8'))`,
		repo.NamespaceID, salt, n, imageID, ids, ageDays); err != nil {
		tb.Fatalf("seed manifests: %v", err)
	}
	var tagIDs, tagManifests []uuid.UUID
	var names []string
	for i, id := range ids {
		if tagged(i) {
			tagIDs = append(tagIDs, db.NewID())
			tagManifests = append(tagManifests, id)
			names = append(names, fmt.Sprintf("v%d", n-i))
		}
	}
	if _, err := pool.Exec(ctx, `
		INSERT INTO container_tags (id, namespace_id, container_image_id, container_manifest_id, name)
		SELECT u.id, $1, $2, u.m, u.name FROM unnest($3::uuid[], $4::uuid[], $5::text[]) AS u(id, m, name)`,
		repo.NamespaceID, imageID, tagIDs, tagManifests, names); err != nil {
		tb.Fatalf("seed tags: %v", err)
	}
	return imageID, ids
}

func all(int) bool { return true }

func setup(t testing.TB) (*store.Store, *Store, *store.Namespace, *store.Repository) {
	st := testsupport.Store(t, testsupport.StoreOptions{Mem: true})
	ns := testsupport.Namespace(t, st, "life")
	repo := testsupport.Repository(t, st, "life", "img", enum.FormatOCI, enum.VisibilityPrivate)
	// Pages of 2 rows: every test walks several pages and crosses groups
	// in the middle of one.
	return st, New(st, Options{PageSize: 2}), ns, repo
}

func deletedBy(t *testing.T, st *store.Store, nsID uuid.UUID, ids []uuid.UUID) map[uuid.UUID]string {
	t.Helper()
	rows, err := st.Pool().Query(context.Background(), `SELECT id, coalesce(soft_deleted_by, '') FROM container_manifests
		WHERE namespace_id = $1 AND id = ANY($2) AND soft_deleted_at IS NOT NULL`, nsID, ids)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[uuid.UUID]string{}
	for rows.Next() {
		var id uuid.UUID
		var by string
		if err := rows.Scan(&id, &by); err != nil {
			t.Fatal(err)
		}
		out[id] = by
	}
	return out
}

// TestKeepLastNContainer: eight tagged manifests, keep last 3: the
// preview lists the five oldest, the run moves exactly those to the
// trash with the policy as their deleter, and a second run finds nothing.
func TestKeepLastNContainer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, ls, ns, repo := setup(t)
	_, ids := seedImage(t, st, repo, "app", 8, 10, all)
	sc := Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug, Repository: repo}
	p, err := ls.Set(ctx, sc, Input{Enabled: true, MinAgeDays: 1, Rules: []Rule{lastN(3)}})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := ls.PreviewScope(ctx, sc, nil, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Count != 5 || len(pv.Items) != 2 || !pv.HasMore || pv.Items[0].ID != ids[3] {
		t.Fatalf("preview: %d items (%d listed, more %v), first %v; want 5, 2, true, %v", pv.Count, len(pv.Items), pv.HasMore, pv.Items[0].ID, ids[3])
	}
	rest, err := ls.PreviewScope(ctx, sc, nil, 2, 10)
	if err != nil || len(rest.Items) != 3 || rest.HasMore || rest.Items[2].ID != ids[7] {
		t.Fatalf("preview page 2: %+v %v", rest, err)
	}
	res, err := ls.RunScope(ctx, sc)
	if err != nil || res.Deleted[KindContainerManifest] != 5 {
		t.Fatalf("run: %+v %v", res, err)
	}
	by := deletedBy(t, st, ns.ID, ids)
	for i, id := range ids {
		_, gone := by[id]
		if gone != (i >= 3) {
			t.Errorf("manifest %d: deleted %v", i, gone)
		}
		if gone && by[id] != "policy:"+p.ID.String() {
			t.Errorf("manifest %d deleted by %q", i, by[id])
		}
	}
	if res, err := ls.RunScope(ctx, sc); err != nil || res.Total() != 0 {
		t.Fatalf("second run: %+v %v", res, err)
	}
}

// TestIndexChildren: children of a kept index are never candidates; the
// children of a deleted index go in the same run; the namespace default
// applies when the repository has no override, and an override wins.
func TestIndexChildren(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, ls, ns, repo := setup(t)
	// m0 newest ... m5 oldest; m0 and m3 are indexes (tagged), m1, m2
	// children of m0 and m4 child of m3 (untagged); m5 untagged.
	imageID, m := seedImage(t, st, repo, "multi", 6, 10, func(i int) bool { return i == 0 || i == 3 })
	for _, rel := range [][2]int{{0, 1}, {0, 2}, {3, 4}} {
		if _, err := st.Pool().Exec(ctx, `INSERT INTO container_manifest_relationships
			(id, namespace_id, container_image_id, parent_container_manifest_id, child_container_manifest_id)
			VALUES ($1, $2, $3, $4, $5)`, db.NewID(), ns.ID, imageID, m[rel[0]], m[rel[1]]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ls.Set(ctx, Scope{NamespaceID: ns.ID}, Input{Enabled: true, MinAgeDays: 0, Rules: []Rule{lastN(1)}}); err != nil {
		t.Fatal(err)
	}
	sc := Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug, Repository: repo}
	pv, err := ls.PreviewScope(ctx, sc, nil, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Count != 2 || pv.Items[0].ID != m[3] || pv.Items[1].ID != m[5] {
		t.Fatalf("preview: %+v", pv.Items)
	}
	res, err := ls.RunScope(ctx, Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug})
	if err != nil || res.Total() != 3 {
		t.Fatalf("run: %+v %v (want m3, m5 and then m4)", res, err)
	}
	by := deletedBy(t, st, ns.ID, m)
	for i, want := range []bool{false, false, false, true, true, true} {
		if _, gone := by[m[i]]; gone != want {
			t.Errorf("manifest %d: deleted %v, want %v", i, gone, want)
		}
	}
	// A disabled override wins over the enabled default.
	_, more := seedImage(t, st, repo, "more", 3, 10, all)
	if _, err := ls.Set(ctx, sc, Input{Enabled: false, Rules: []Rule{lastN(1)}}); err != nil {
		t.Fatal(err)
	}
	if res, err := ls.RunScope(ctx, sc); err != nil || res.Total() != 0 {
		t.Fatalf("run under a disabled override: %+v %v", res, err)
	}
	if len(deletedBy(t, st, ns.ID, more)) != 0 {
		t.Fatal("deleted under a disabled override")
	}
}

// TestSetRefusesBadInput: an invalid policy is INVALID_INPUT and writes
// nothing; a valid one replaces the previous rules.
func TestSetRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, ls, ns, repo := setup(t)
	sc := Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug, Repository: repo}
	if _, err := ls.Set(ctx, sc, Input{Enabled: true, Rules: []Rule{regex("(")}}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Fatalf("bad regex: %v", err)
	}
	if p, err := ls.Get(ctx, sc); err != nil || p != nil {
		t.Fatalf("written after a refusal: %+v %v", p, err)
	}
	if _, err := ls.Set(ctx, sc, Input{Enabled: true, MinAgeDays: 2, Rules: []Rule{lastN(3), regex("v.*")}}); err != nil {
		t.Fatal(err)
	}
	p, err := ls.Set(ctx, sc, Input{Enabled: false, MinAgeDays: 0, Rules: []Rule{downloadedWithin(7)}})
	if err != nil || p.Enabled || p.MinAgeDays != 0 || len(p.Rules) != 1 || p.Rules[0].Type != KeepDownloadedWithin || *p.Rules[0].Days != 7 {
		t.Fatalf("replaced policy: %+v %v", p, err)
	}
	if _, err := ls.Set(ctx, sc, Input{Rules: make([]Rule, MaxRules+1)}); !store.HasCode(err, store.CodeInvalidInput) {
		t.Fatalf("too many rules: %v", err)
	}
	if p, _ := ls.Get(ctx, sc); len(p.Rules) != 1 {
		t.Fatalf("rules after a refused update: %+v", p.Rules)
	}
}

// TestConcurrentRuns: two runs of one policy at once (the daily job and a
// runLifecyclePolicy, or two instances) delete each item once between
// them: the loser of each row is skipped, not failed.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, ls, ns, repo := setup(t)
	_, ids := seedImage(t, st, repo, "app", 12, 10, all)
	sc := Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug, Repository: repo}
	if _, err := ls.Set(ctx, sc, Input{Enabled: true, MinAgeDays: 1, Rules: []Rule{lastN(2)}}); err != nil {
		t.Fatal(err)
	}
	results := make(chan RunResult, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			r, err := ls.RunScope(ctx, sc)
			results <- r
			errs <- err
		}()
	}
	total := 0
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		total += (<-results).Total()
	}
	if total != 10 {
		t.Fatalf("the two runs deleted %d items between them, want 10", total)
	}
	if n := len(deletedBy(t, st, ns.ID, ids)); n != 10 {
		t.Fatalf("%d manifests in the trash, want 10", n)
	}
}
