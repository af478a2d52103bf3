package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestIndexPushVersusChildDelete races an index push against the delete of
// one of its children. The push locks the child rows FOR SHARE and the
// delete locks the child FOR UPDATE, so exactly one order wins: never an
// active index listing a deleted child.
func TestIndexPushVersusChildDelete(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	ctx := context.Background()
	outcomes := map[string]int{}
	for round := range 20 {
		child := testImage(t, c, fmt.Sprintf("child %d", round))
		wantStatus(t, putManifest(s, t, name, sha(child), child, mtOCIManifest), http.StatusCreated)
		idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": mtOCIIndex, "manifests": []any{
			map[string]any{"mediaType": mtOCIManifest, "digest": sha(child), "size": len(child)},
		}})
		var wg sync.WaitGroup
		var push, del int
		wg.Add(2)
		go func() {
			defer wg.Done()
			resp := putManifest(s, t, name, fmt.Sprintf("idx%d", round), idx, mtOCIIndex)
			readBody(t, resp)
			push = resp.StatusCode
		}()
		go func() {
			defer wg.Done()
			resp := s.do(t, http.MethodDelete, "/v2/"+name+"/manifests/"+sha(child), nil, nil, true)
			readBody(t, resp)
			del = resp.StatusCode
		}()
		wg.Wait()
		outcomes[fmt.Sprintf("push %d, delete %d", push, del)]++
		switch {
		case push == http.StatusCreated && del == http.StatusConflict: // index first
		case push == http.StatusBadRequest && del == http.StatusAccepted: // delete first
		default:
			t.Fatalf("round %d: push %d, delete %d", round, push, del)
		}
		tg, err := container.New(s.Store).ResolveTarget(ctx, "acme", "images", "app")
		if err != nil {
			t.Fatal(err)
		}
		var broken int
		if err := s.Store.Pool().QueryRow(ctx, `
			SELECT count(*) FROM container_manifest_relationships rel
			JOIN container_manifests p ON p.namespace_id = rel.namespace_id AND p.id = rel.parent_container_manifest_id
			JOIN container_manifests ch ON ch.namespace_id = rel.namespace_id AND ch.id = rel.child_container_manifest_id
			WHERE rel.namespace_id = $1 AND p.soft_deleted_at IS NULL AND ch.soft_deleted_at IS NOT NULL`,
			tg.NamespaceID).Scan(&broken); err != nil || broken != 0 {
			t.Fatalf("round %d: %d active indexes list a deleted child (%v)", round, broken, err)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}

// TestConcurrentTagMoves: pushes moving one tag to different manifests all
// succeed; the tag ends on one of them, in one row.
func TestConcurrentTagMoves(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	s.repo(t, "acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	const name = "acme/images/app"
	c := newBenchClient(t, s, name)
	bodies := make([][]byte, 6)
	for i := range bodies {
		bodies[i] = testImage(t, c, fmt.Sprintf("image %d", i))
		wantStatus(t, putManifest(s, t, name, sha(bodies[i]), bodies[i], mtOCIManifest), http.StatusCreated)
	}
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				resp := putManifest(s, t, name, "latest", bodies[i], mtOCIManifest)
				if b := readBody(t, resp); resp.StatusCode != http.StatusCreated {
					t.Errorf("push %d: %d %s", i, resp.StatusCode, b)
				}
			}
		}()
	}
	wg.Wait()
	var rows int
	if err := s.Store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM container_tags WHERE name = 'latest'`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("tag rows: %d %v", rows, err)
	}
	resp := s.do(t, http.MethodHead, "/v2/"+name+"/manifests/latest", nil, nil, true)
	wantStatus(t, resp, http.StatusOK)
	found := false
	for _, b := range bodies {
		found = found || resp.Header.Get("Docker-Content-Digest") == sha(b)
	}
	if !found {
		t.Fatalf("latest points at %s", resp.Header.Get("Docker-Content-Digest"))
	}
}
