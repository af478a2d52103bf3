package graph

import (
	"context"
	"testing"
	"time"
)

// testTrashRetentionAndPurge: the retention is read and set (bounds
// checked), the trash shows when each item expires, purgeTrash refuses
// bad, unknown and untrashed ids and purges named items (their blobs
// become GC candidates), and emptyTrash purges the rest.
func testTrashRetentionAndPurge(t *testing.T, a *testAPI) {
	nsID := a.createNamespace("purging")
	repoID := a.createRepository("purging", "images", "OCI", "PRIVATE")
	img := a.addImage(nsID, repoID, "app")
	m1, _ := a.addManifest(nsID, img, "purge-m1", 10)
	m2, _ := a.addManifest(nsID, img, "purge-m2", 20)
	active, _ := a.addManifest(nsID, img, "purge-m3", 30)
	a.exec(`UPDATE container_manifests SET soft_deleted_at = now() WHERE namespace_id = $1 AND id = ANY($2::uuid[])`,
		nsID, []any{m1, m2})

	type trash struct {
		Namespace struct {
			TrashRetentionDays int
			Trash              struct {
				Edges []struct {
					DeletedAt, ExpiresAt time.Time
					Node                 struct{ ID string }
				}
			}
			GcQueue struct{ Tracked int }
		}
	}
	read := func() trash {
		t.Helper()
		var out trash
		a.admin(`{ namespace(slug: "purging") { trashRetentionDays trash { edges { deletedAt expiresAt node { ... on ContainerManifest { id } } } } gcQueue { tracked } } }`, nil, &out)
		return out
	}
	tr := read()
	if tr.Namespace.TrashRetentionDays != 7 || len(tr.Namespace.Trash.Edges) != 2 {
		t.Fatalf("trash = %+v", tr)
	}
	for _, e := range tr.Namespace.Trash.Edges {
		if !e.ExpiresAt.Equal(e.DeletedAt.Add(7 * 24 * time.Hour)) {
			t.Fatalf("expiresAt %v for deletedAt %v", e.ExpiresAt, e.DeletedAt)
		}
	}
	for _, bad := range []int{-1, 3651} {
		a.expectError(adminToken, `mutation($d: Int!) { setTrashRetention(input: {namespace: "purging", days: $d}) { namespace { id } } }`,
			map[string]any{"d": bad}, CodeInvalidInput)
	}
	a.expectError(adminToken, `mutation { setTrashRetention(input: {namespace: "nowhere", days: 1}) { namespace { id } } }`, nil, CodeNotFound)
	var set struct {
		SetTrashRetention struct {
			Namespace struct{ TrashRetentionDays int }
		}
	}
	a.admin(`mutation { setTrashRetention(input: {namespace: "purging", days: 3}) { namespace { trashRetentionDays } } }`, nil, &set)
	if set.SetTrashRetention.Namespace.TrashRetentionDays != 3 {
		t.Fatalf("set = %+v", set)
	}
	tr = read()
	if e := tr.Namespace.Trash.Edges[0]; !e.ExpiresAt.Equal(e.DeletedAt.Add(3 * 24 * time.Hour)) {
		t.Fatalf("after setTrashRetention: expiresAt %v for deletedAt %v", e.ExpiresAt, e.DeletedAt)
	}

	purge := `mutation($ids: [ID!]!) { purgeTrash(input: {namespace: "purging", ids: $ids}) { purgedCount gcCandidates counts { kind count } } }`
	a.expectError(adminToken, purge, map[string]any{"ids": []string{}}, CodeInvalidInput)
	a.expectError(adminToken, purge, map[string]any{"ids": []string{"not-a-uuid"}}, CodeInvalidInput)
	a.expectError(adminToken, purge, map[string]any{"ids": []string{newID(t).String()}}, CodeNotFound)
	a.expectError(adminToken, purge, map[string]any{"ids": []string{m1.String(), active.String()}}, CodeConflict)
	if n := len(read().Namespace.Trash.Edges); n != 2 {
		t.Fatalf("a refused purge changed the trash: %d items", n)
	}
	var out struct {
		PurgeTrash struct {
			PurgedCount, GcCandidates int
			Counts                    []struct {
				Kind  string
				Count int
			}
		}
	}
	a.admin(purge, map[string]any{"ids": []string{m1.String()}}, &out)
	if p := out.PurgeTrash; p.PurgedCount != 1 || p.GcCandidates != 1 || len(p.Counts) != 1 || p.Counts[0].Kind != "CONTAINER_MANIFEST" {
		t.Fatalf("purgeTrash = %+v", p)
	}
	tr = read()
	if len(tr.Namespace.Trash.Edges) != 1 || tr.Namespace.Trash.Edges[0].Node.ID != m2.String() || tr.Namespace.GcQueue.Tracked != 1 {
		t.Fatalf("after purgeTrash: %+v", tr)
	}
	var empty struct {
		EmptyTrash struct{ PurgedCount, GcCandidates int }
	}
	a.admin(`mutation { emptyTrash(input: {namespace: "purging"}) { purgedCount gcCandidates } }`, nil, &empty)
	if empty.EmptyTrash.PurgedCount != 1 || empty.EmptyTrash.GcCandidates != 1 {
		t.Fatalf("emptyTrash = %+v", empty)
	}
	tr = read()
	if len(tr.Namespace.Trash.Edges) != 0 || tr.Namespace.GcQueue.Tracked != 2 {
		t.Fatalf("after emptyTrash: %+v", tr)
	}
	var left int
	if err := a.pool.QueryRow(context.Background(), `SELECT count(*) FROM container_manifests WHERE namespace_id = $1`, nsID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 1 {
		t.Fatalf("%d manifests left, want the active one", left)
	}
}
