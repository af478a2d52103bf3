package container

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/internal/partition"
)

// TestManifestReferenceLocksReadTheirRowsOnly: the statements that lock
// a new manifest's blobs and child manifests, on the generic plan they
// run with, read the rows of those digests and no other row of the
// image, even in an image the statistics do not know: one pushed since
// its partition's last ANALYZE, which a custom plan takes for a handful
// of rows however large it has grown.
func TestManifestReferenceLocksReadTheirRowsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, _ := acmeTarget(t, "base")
	// fill pushes n configs and n manifests, one on each, into image.
	fill := func(image string, n int) (tg *Target, blobs, manifests [][]byte) {
		t.Helper()
		tg, err := cs.ResolveTarget(ctx, "acme", "images", image)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			config := fmt.Appendf(nil, `{"image":%q,"n":%d}`, image, i)
			d := sha256.Sum256(config)
			if _, err := cs.PutBlob(ctx, tg, bytes.NewReader(config), store.Expected{SHA256: d, Size: int64(len(config))}); err != nil {
				t.Fatal(err)
			}
			if tg.ImageID == uuid.Nil {
				if tg, err = cs.ResolveTarget(ctx, "acme", "images", image); err != nil {
					t.Fatal(err)
				}
			}
			payload, _ := json.Marshal(map[string]any{"schemaVersion": 2, "image": image, "n": i})
			in := ManifestPut{Digest: sha256.Sum256(payload), MediaType: MediaTypeOCIManifest, Payload: payload,
				Blobs: []BlobRef{{SHA256: d, Size: int64(len(config))}}}
			if _, err := cs.PutManifest(ctx, tg, in); err != nil {
				t.Fatal(err)
			}
			blobs, manifests = append(blobs, d[:]), append(manifests, in.Digest[:])
		}
		return tg, blobs, manifests
	}
	fill("base", 150)
	if _, err := st.Pool().Exec(ctx, `ANALYZE container_blobs, container_manifests`); err != nil {
		t.Fatal(err)
	}
	tg, blobs, manifests := fill("app", 150)
	p, err := partition.Of(ctx, st.Pool(), tg.NamespaceID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, stmt, sql, table string
		digests                [][]byte
	}{
		{"blobs", "lock_blobs", lockManifestBlobsSQL[p], "container_blobs_p", [][]byte{blobs[17], blobs[140]}},
		{"child manifests", "lock_children", lockChildManifestsSQL[p], "container_manifests_p", [][]byte{manifests[3], manifests[90], manifests[149]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			slices.SortFunc(c.digests, bytes.Compare)
			tx, err := st.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			// As lockManifest runs it: prepared, on its generic
			// plan.
			for _, sql := range []string{genericPlansOn, "PREPARE " + c.stmt + "(uuid, uuid, bytea[]) AS " + c.sql} {
				if _, err := tx.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			var raw string
			if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE "+c.stmt+"($1, $2, $3)", pgx.QueryExecModeSimpleProtocol,
				tg.NamespaceID, tg.ImageID, c.digests).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal([]byte(raw), &plans); err != nil {
				t.Fatal(err)
			}
			var read, returned float64
			plans[0].Plan.walk(func(n planNode) {
				if strings.Contains(n.NodeType, "Scan") && strings.HasPrefix(n.Relation, c.table) {
					read += (n.ActualRows + n.RemovedByFilt) * n.ActualLoops
				}
			})
			returned = plans[0].Plan.ActualRows
			if returned != float64(len(c.digests)) || read > float64(len(c.digests)) {
				t.Fatalf("the statement returned %v rows and read %v rows of %s* for %d digests, want each digest's row only\n%s",
					returned, read, c.table, len(c.digests), raw)
			}
		})
	}
}
