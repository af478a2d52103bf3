package migrations_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// planNode is the part of EXPLAIN (FORMAT JSON) output the test reads.
type planNode struct {
	NodeType    string     `json:"Node Type"`
	Relation    string     `json:"Relation Name"`
	Schema      string     `json:"Schema"`
	ActualLoops float64    `json:"Actual Loops"`
	Plans       []planNode `json:"Plans"`
}

// scans maps each partitioned parent touched by a plan to its children in
// the plan (planned) and those actually executed (loops > 0).
type scans map[string]struct{ planned, executed []string }

func walk(n planNode, parentOf map[string]string, out scans) {
	if n.Relation != "" && n.Schema == "partitions" {
		p := parentOf[n.Relation]
		s := out[p]
		s.planned = append(s.planned, n.Relation)
		if n.ActualLoops > 0 {
			s.executed = append(s.executed, n.Relation)
		}
		out[p] = s
	}
	for _, c := range n.Plans {
		walk(c, parentOf, out)
	}
}

// explain runs EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) in tx and returns the
// partitions the plan holds and executes, by parent.
func explain(ctx context.Context, t *testing.T, tx pgx.Tx, parentOf map[string]string, query string) (scans, string) {
	t.Helper()
	var raw string
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) "+query, pgx.QueryExecModeSimpleProtocol).Scan(&raw); err != nil {
		t.Fatalf("explain: %v\n%s", err, query)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(raw), &plans); err != nil {
		t.Fatal(err)
	}
	out := scans{}
	walk(plans[0].Plan, parentOf, out)
	return out, raw
}

// lit renders a UUID or bytes as a SQL literal, as the document's queries
// write them (the service uses the simple protocol and re-plans each query).
func lit(v any) string {
	switch x := v.(type) {
	case uuid.UUID:
		return "'" + x.String() + "'"
	case []byte:
		return "'\\x" + hex.EncodeToString(x) + "'::bytea"
	}
	panic(fmt.Sprintf("lit %T", v))
}

// TestHotPathPruning runs the document's hot-path example queries with
// EXPLAIN ANALYZE on a database holding the rows they look for, in several
// namespaces, and asserts that each partitioned table they read has exactly
// one partition executed; where the key is a literal the plan itself holds
// only that partition (plan-time pruning).
func TestHotPathPruning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)

	parentOf := map[string]string{}
	rows, err := pool.Query(ctx, `SELECT c.relname, p.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c, p string
		if err := rows.Scan(&c, &p); err != nil {
			t.Fatal(err)
		}
		parentOf[c] = p
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// Fixture: the same shapes in three namespaces so that other partitions
	// hold rows too; the queries target the first.
	type data struct {
		ns, repo, mavenVersion, remoteImage, npmRemoteVersion uuid.UUID
		sha                                                   []byte
	}
	var ds []data
	f := newFixture(t, pool)
	for i := 0; i < 3; i++ {
		d := data{ns: f.namespace(), sha: digest(fmt.Sprintf("artifact-%d", i))}
		d.repo = f.repository(d.ns, 1, 0)
		coll := f.collection(d.ns, "default", true)
		f.must("repository_collection_repositories", row{"namespace_id", d.ns, "repository_collection_id", coll, "repository_id", d.repo})
		// Maven hosted file.
		mr := f.child("maven_repositories", d.ns, d.repo)
		pkg := v7(t)
		f.must("maven_packages", row{"id", pkg, "namespace_id", d.ns, "maven_repository_id", mr, "group_id", "com.example", "artifact_id", "myapp"})
		d.mavenVersion = v7(t)
		f.must("maven_versions", row{"id", d.mavenVersion, "namespace_id", d.ns, "maven_package_id", pkg, "version", "1.0.0"})
		att := f.blob(d.ns, d.sha, 1048576)
		f.must("maven_files", row{"id", v7(t), "namespace_id", d.ns, "maven_package_id", pkg, "maven_version_id", d.mavenVersion,
			"file_name", "myapp-1.0.0.jar", "blob_storage_attachment_id", att, "blob_sha256", d.sha,
			"sha1", make([]byte, 20), "sha512", make([]byte, 64)})
		// Container remote cached blob.
		remoteRepo := f.repository(d.ns, 0, 2)
		crr := v7(t)
		f.must("container_remote_repositories", row{"id", crr, "namespace_id", d.ns, "repository_id", remoteRepo, "url", "https://registry.hub.docker.com"})
		d.remoteImage = v7(t)
		f.must("container_remote_images", row{"id", d.remoteImage, "namespace_id", d.ns, "container_remote_repository_id", crr, "name", "library/nginx"})
		f.must("container_remote_blobs", row{"id", v7(t), "namespace_id", d.ns, "container_remote_image_id", d.remoteImage,
			"digest", d.sha, "media_type", "application/vnd.oci.image.layer.v1.tar+gzip",
			"blob_storage_attachment_id", f.attach(d.ns, d.sha), "blob_sha256", d.sha})
		// npm remote cached tarball.
		npmRepo := f.repository(d.ns, 2, 2)
		nrr := v7(t)
		f.must("npm_remote_repositories", row{"id", nrr, "namespace_id", d.ns, "repository_id", npmRepo, "url", "https://registry.npmjs.org"})
		nrp := v7(t)
		f.must("npm_remote_packages", row{"id", nrp, "namespace_id", d.ns, "npm_remote_repository_id", nrr, "name", "mypackage"})
		d.npmRemoteVersion = v7(t)
		f.must("npm_remote_versions", row{"id", d.npmRemoteVersion, "namespace_id", d.ns, "npm_remote_package_id", nrp,
			"version", "1.0.0", "package_json", `{"name": "mypackage", "version": "1.0.0"}`})
		f.must("npm_remote_files", row{"id", v7(t), "namespace_id", d.ns, "npm_remote_version_id", d.npmRemoteVersion,
			"file_name", "mypackage-1.0.0.tgz", "blob_storage_attachment_id", f.attach(d.ns, d.sha), "blob_sha256", d.sha})
		ds = append(ds, d)
	}
	d := ds[0]
	ns := lit(d.ns)

	cases := []struct {
		name string
		sql  string
		// runtime lists parents that the document says prune at run time
		// only (column-to-column join on sha256, no digest literal).
		runtime []string
		want    []string // partitioned parents the query must touch
	}{
		{"AP1 pull: maven_files -> blob_storage_blobs", `
SELECT bsb.object_storage_key, bsb.size
FROM maven_files mf
JOIN blob_storage_blobs bsb ON bsb.namespace_id = mf.namespace_id AND bsb.sha256 = mf.blob_sha256
WHERE mf.namespace_id = ` + ns + ` AND mf.maven_version_id = ` + lit(d.mavenVersion) + ` AND mf.file_name = 'myapp-1.0.0.jar'
  AND mf.soft_deleted_at IS NULL`,
			[]string{"blob_storage_blobs"}, []string{"maven_files", "blob_storage_blobs"}},
		{"AP1 pull: cached container blob by digest", `
SELECT bsb.object_storage_key, bsb.size
FROM container_remote_blobs crb
JOIN blob_storage_blobs bsb
  ON bsb.namespace_id = crb.namespace_id AND bsb.sha256 = crb.blob_sha256
WHERE crb.namespace_id = ` + ns + `
  AND crb.container_remote_image_id = ` + lit(d.remoteImage) + `
  AND crb.digest = ` + lit(d.sha) + `
  AND crb.soft_deleted_at IS NULL`,
			[]string{"blob_storage_blobs"}, []string{"container_remote_blobs", "blob_storage_blobs"}},
		{"AP1 pull: cached npm tarball", `
SELECT bsb.object_storage_key, bsb.size
FROM npm_remote_files nrf
JOIN blob_storage_blobs bsb
  ON bsb.namespace_id = nrf.namespace_id AND bsb.sha256 = nrf.blob_sha256
WHERE nrf.namespace_id = ` + ns + `
  AND nrf.npm_remote_version_id = ` + lit(d.npmRemoteVersion) + `
  AND nrf.file_name = 'mypackage-1.0.0.tgz'
  AND nrf.soft_deleted_at IS NULL`,
			[]string{"blob_storage_blobs"}, []string{"npm_remote_files", "blob_storage_blobs"}},
		{"AP2 orphan check", `
SELECT 1 AS one
FROM blob_storage_attachments
WHERE namespace_id = ` + ns + ` AND sha256 = ` + lit(d.sha) + `
LIMIT 1`, nil, []string{"blob_storage_attachments"}},
		{"blob existence by sha256", `
SELECT 1 AS one
FROM blob_storage_blobs
WHERE namespace_id = ` + ns + ` AND sha256 = ` + lit(d.sha) + `
LIMIT 1`, nil, []string{"blob_storage_blobs"}},
		{"repository listing by last update", `
SELECT id, name, description, format, kind, artifacts_count,
       downloads_count, size_bytes, last_updated_at
FROM repositories
WHERE namespace_id = ` + ns + ` AND soft_deleted_at IS NULL
ORDER BY COALESCE(last_updated_at, created_at) DESC
LIMIT 20`, nil, []string{"repositories"}},
		{"repository listing by collection", `
SELECT r.id, r.name, r.description, r.format, r.kind, r.artifacts_count,
       r.downloads_count, r.size_bytes, r.last_updated_at
FROM repositories r
JOIN repository_collection_repositories rcr
  ON rcr.namespace_id = r.namespace_id AND rcr.repository_id = r.id
WHERE r.namespace_id = ` + ns + ` AND r.soft_deleted_at IS NULL
ORDER BY COALESCE(r.last_updated_at, r.created_at) DESC
LIMIT 20`, nil, []string{"repositories", "repository_collection_repositories"}},
		{"namespace storage from the shadow", `
SELECT SUM(size) AS total_size_bytes
FROM blob_storage_blobs_by_namespace
WHERE namespace_id = ` + ns, nil, []string{"blob_storage_blobs_by_namespace"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			got, raw := explain(ctx, t, tx, parentOf, c.sql)
			var touched []string
			for p := range got {
				touched = append(touched, p)
			}
			sort.Strings(touched)
			want := append([]string(nil), c.want...)
			sort.Strings(want)
			if strings.Join(touched, ",") != strings.Join(want, ",") {
				t.Errorf("partitioned tables read: %v, want %v\n%s", touched, want, raw)
			}
			for p, s := range got {
				if len(s.executed) != 1 {
					t.Errorf("%s: %d partitions executed %v, want exactly 1\n%s", p, len(s.executed), s.executed, raw)
				}
				runtimeOnly := false
				for _, r := range c.runtime {
					runtimeOnly = runtimeOnly || r == p
				}
				if !runtimeOnly && len(s.planned) != 1 {
					t.Errorf("%s: %d partitions in the plan, want 1 (plan-time pruning)\n%s", p, len(s.planned), raw)
				}
			}
		})
	}

	// AP3 dedup upsert: a plain INSERT routes to one partition and scans
	// none; the statistics of the transaction show which partitions were
	// written (the blob and, through the trigger, its shadow row).
	t.Run("AP3 dedup upsert", func(t *testing.T) {
		for _, fresh := range []bool{true, false} {
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sha := digest("upsert-new")
			if !fresh {
				sha = d.sha
			}
			inserted := func() map[string]int64 {
				rows, err := tx.Query(ctx, `SELECT relname, n_tup_ins FROM pg_stat_xact_user_tables
					WHERE schemaname = 'partitions' AND n_tup_ins > 0`)
				if err != nil {
					t.Fatal(err)
				}
				m := map[string]int64{}
				for rows.Next() {
					var name string
					var n int64
					if err := rows.Scan(&name, &n); err != nil {
						t.Fatal(err)
					}
					m[name] = n
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				return m
			}
			// pg_stat_xact_* also holds this backend's not yet flushed counts
			// of earlier transactions: compare before and after.
			beforeIns := inserted()
			got, raw := explain(ctx, t, tx, parentOf, `
INSERT INTO blob_storage_blobs (namespace_id, sha256, size, object_storage_key, metadata_sha1)
VALUES (`+ns+`, `+lit(sha)+`, 1048576, 'artifact_registry/objects/`+hex.EncodeToString(sha)+`', NULL)
ON CONFLICT (namespace_id, sha256) DO NOTHING
RETURNING id, sha256`)
			for p, s := range got {
				if p != "blob_storage_blobs_by_namespace" || len(s.executed) > 1 {
					t.Errorf("upsert (fresh=%v) scanned %s partitions %v\n%s", fresh, p, s.executed, raw)
				}
			}
			var written []string
			for name, n := range inserted() {
				if n > beforeIns[name] {
					written = append(written, name)
				}
			}
			sort.Strings(written)
			want := 0
			if fresh {
				want = 3
			}
			if len(written) != want {
				t.Errorf("upsert (fresh=%v) wrote partitions %v, want %d (one blob_storage_blobs, one shadow, the namespace's counter_deltas: the accounting trigger's delta)", fresh, written, want)
			}
			for _, w := range written {
				if p := parentOf[w]; p != "blob_storage_blobs" && p != "blob_storage_blobs_by_namespace" && p != "counter_deltas" {
					t.Errorf("upsert wrote %s (%s)", w, p)
				}
			}
			_ = tx.Rollback(ctx)
		}
	})
}
