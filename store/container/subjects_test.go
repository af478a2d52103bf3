package container

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/store"
)

type planNode struct {
	NodeType  string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	IndexName string     `json:"Index Name"`
	Plans     []planNode `json:"Plans"`
	// With EXPLAIN ANALYZE.
	ActualRows    float64 `json:"Actual Rows"`
	ActualLoops   float64 `json:"Actual Loops"`
	RemovedByFilt float64 `json:"Rows Removed by Filter"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}

// TestReferrersAreAnIndexLookup: in an image of 300 manifests, two of
// them attached to a third, the referrers statement reads the subject
// index of one partition and no table scan, whatever the filters; the
// rows it returns are exactly the referrers, in digest order.
func TestReferrersAreAnIndexLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, cs, tg := acmeTarget(t, "app")
	config := []byte(`{}`)
	if _, err := cs.PutBlob(ctx, tg, bytes.NewReader(config), store.Expected{SHA256: sha256.Sum256(config), Size: int64(len(config))}); err != nil {
		t.Fatal(err)
	}
	tg, err := cs.ResolveTarget(ctx, "acme", "images", "app")
	if err != nil || tg.ImageID == uuid.Nil {
		t.Fatalf("image after the config push: %+v %v", tg, err)
	}
	push := func(i int, subject *[32]byte, artifactType string) [32]byte {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"schemaVersion": 2, "n": i})
		in := ManifestPut{Digest: sha256.Sum256(payload), MediaType: MediaTypeOCIManifest, Payload: payload,
			Blobs: []BlobRef{{SHA256: sha256.Sum256(config), Size: int64(len(config))}}, Subject: subject, ArtifactType: artifactType}
		if _, err := cs.PutManifest(ctx, tg, in); err != nil {
			t.Fatal(err)
		}
		return in.Digest
	}
	subject := push(0, nil, MediaTypeOCIConfig)
	for i := 1; i < 298; i++ {
		push(i, nil, MediaTypeOCIConfig)
	}
	sig := push(298, &subject, "application/vnd.example.signature")
	sbom := push(299, &subject, "application/vnd.example.sbom")
	if _, err := st.Pool().Exec(ctx, `ANALYZE container_manifests`); err != nil {
		t.Fatal(err)
	}

	sigType := "application/vnd.example.signature"
	first := sig
	if bytes.Compare(sbom[:], sig[:]) < 0 {
		first = sbom
	}
	for _, c := range []struct {
		name   string
		filter *string
		after  []byte
	}{{"all", nil, nil}, {"by artifact type", &sigType, nil}, {"after a digest", nil, first[:]}} {
		t.Run(c.name, func(t *testing.T) {
			tx, err := st.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			var raw string
			if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+referrersSQL, pgx.QueryExecModeSimpleProtocol,
				tg.NamespaceID, tg.ImageID, subject[:], 10, c.filter, c.after).Scan(&raw); err != nil {
				t.Fatal(err)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal([]byte(raw), &plans); err != nil {
				t.Fatal(err)
			}
			// Every scan is the subject index of one partition (plain, or
			// bitmap with its heap scan of that partition): no table scan,
			// no other index.
			var scans []string
			ok, subjectScans := true, 0
			plans[0].Plan.walk(func(n planNode) {
				if !strings.Contains(n.NodeType, "Scan") {
					return
				}
				parent := ""
				if n.IndexName != "" {
					if err := tx.QueryRow(ctx, `SELECT p.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
						JOIN pg_class p ON p.oid = i.inhparent WHERE c.relname = $1`, n.IndexName).Scan(&parent); err != nil {
						t.Fatal(err)
					}
				}
				scans = append(scans, strings.TrimSpace(n.NodeType+" "+n.Relation+" "+parent))
				switch {
				case parent == "container_manifests_subject_idx":
					subjectScans++
				case n.NodeType == "Bitmap Heap Scan" && strings.HasPrefix(n.Relation, "container_manifests_p"):
				default:
					ok = false
				}
			})
			if !ok || subjectScans != 1 {
				t.Fatalf("referrers plan scans %q, want one partition's container_manifests_subject_idx only\n%s", scans, raw)
			}
			t.Logf("plan: %q", scans)
		})
	}

	got, err := cs.Referrers(ctx, tg, subject, "", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Digest != first || got[0].Payload.Size == 0 {
		t.Fatalf("referrers: %+v", got)
	}
	got, err = cs.Referrers(ctx, tg, subject, sigType, nil, 10)
	if err != nil || len(got) != 1 || got[0].Digest != sig || got[0].ArtifactType != sigType {
		t.Fatalf("signatures: %+v %v", got, err)
	}
	got, err = cs.Referrers(ctx, tg, subject, "", first[:], 10)
	if err != nil || len(got) != 1 || got[0].Digest == first {
		t.Fatalf("after %x: %+v %v", first, got, err)
	}
}
