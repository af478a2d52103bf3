package npm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// statementRecorder is a pgx tracer that records every statement with its
// arguments.
type statementRecorder struct {
	mu    sync.Mutex
	stmts []recordedStatement
}

type recordedStatement struct {
	sql  string
	args []any
}

func (r *statementRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	r.stmts = append(r.stmts, recordedStatement{d.SQL, d.Args})
	r.mu.Unlock()
	return ctx
}

func (r *statementRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *statementRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *statementRecorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.mu.Lock()
	r.stmts = append(r.stmts, recordedStatement{d.SQL, d.Args})
	r.mu.Unlock()
}

func (r *statementRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// npmTestTarball is a minimal package tarball.
func npmTestTarball(t testing.TB, version string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := fmt.Sprintf(`{"name":"lib","version":%q}`, version)
	if err := tw.WriteHeader(&tar.Header{Name: "package/package.json", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(body))
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

// TestNpmStatementsPruneToOnePartition runs the whole npm data path
// through the store (publish, packument rebuild and serving, dist-tags,
// deprecate, unpublish, tarball, search, downloads, delete) with a tracer,
// then EXPLAINs every npm statement with the arguments it ran with: each
// partitioned table must be planned on at most one partition (docs/schema.md,
// Partitioning: every query carries namespace_id = $1; the blob tables, partitioned by
// sha256, are read by digest). Planning over all 64 partitions of a table
// costs tens of milliseconds per statement.
func TestNpmStatementsPruneToOnePartition(t *testing.T) {
	t.Parallel()
	w := runNpmWorkflowForTest(t)
	checkNpmPlans(t, w.pool, w.rec)
}

type npmWorkflow struct {
	url  string
	pool *pgxpool.Pool
	rec  *statementRecorder
}

// runNpmWorkflowForTest runs the whole npm data path on a fresh database
// with a statement recorder.
func runNpmWorkflowForTest(t *testing.T) *npmWorkflow {
	ctx := context.Background()
	cfg := testdb.NewConfig(t)
	rec := &statementRecorder{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(store.New(pool, objstore.NewMem(), store.Options{}))

	nsID, repoID, npmRepoID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
		  VALUES ($1, 'plan', 'test', 'organization', 'plan', 'organization', 'plan')`, []any{nsID}},
		{`INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, 'js', 2, 0, 0)`, []any{repoID, nsID}},
		{`INSERT INTO npm_repositories (id, namespace_id, repository_id) VALUES ($1, $2, $3)`, []any{npmRepoID, nsID, repoID}},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := s.ResolveRepository(ctx, "plan", "js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RepositoryByID(ctx, nsID, npmRepoID); err != nil {
		t.Fatal(err)
	}
	var pkg PackageRef
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		tgz := npmTestTarball(t, v)
		s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
		pj, _ := json.Marshal(map[string]any{
			"name": "lib", "version": v, "_id": "lib@" + v, "_hasShrinkwrap": false,
			"_npmUser": map[string]string{"name": "admin"},
			"dist":     map[string]any{"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "shasum": hex.EncodeToString(s1[:])},
		})
		res, err := s.Publish(ctx, repo, PublishRequest{Name: "lib", Version: v, PackageJSON: pj, FileName: "lib-" + v + ".tgz",
			Tarball: tgz, SHA1: s1, Tags: []string{"latest"}})
		if err != nil {
			t.Fatal(err)
		}
		pkg = res.Package
	}
	build := func(st *PackageState) (Documents, error) {
		return Documents{
			enum.NpmMetadataFull:        []byte(fmt.Sprintf(`{"_rev":%q,"n":%d}`, st.Rev(), len(st.Versions))),
			enum.NpmMetadataDistTags:    []byte(fmt.Sprintf(`{"n":%d}`, len(st.Tags))),
			enum.NpmMetadataAbbreviated: []byte(fmt.Sprintf(`{"c":%d}`, len(st.Versions))),
		}, nil
	}
	steps := []func() error{
		func() error { _, err := s.RebuildMetadata(ctx, repo, pkg, MetadataOptions{}, build); return err },
		func() error { _, err := s.RebuildMetadata(ctx, repo, pkg, MetadataOptions{}, build); return err },
		func() error { _, err := s.CachedMetadata(ctx, repo, "lib", enum.NpmMetadataFull); return err },
		func() error { _, err := s.SetTag(ctx, repo, "lib", "beta", "1.1.0", nil); return err },
		func() error { _, err := s.RebuildMetadata(ctx, repo, pkg, MetadataOptions{}, build); return err },
		func() error { return s.RemoveTag(ctx, repo, "lib", "beta", nil) },
		func() error {
			_, err := s.UpdatePackage(ctx, repo, PackageUpdate{Name: "lib", Deprecations: map[string]string{"1.0.0": "old"}})
			return err
		},
		func() error {
			_, err := s.UpdatePackage(ctx, repo, PackageUpdate{Name: "lib", Rev: "x-y", Keep: []string{"1.0.0", "1.1.0", "2.0.0"}})
			if err != nil && strings.Contains(err.Error(), "revision") {
				return nil
			}
			return err
		},
		func() error {
			_, err := s.UpdatePackage(ctx, repo, PackageUpdate{Name: "lib", Keep: []string{"1.0.0", "1.1.0"}})
			return err
		},
		func() error { _, err := s.Tarball(ctx, repo, "lib", "1.0.0", "lib-1.0.0.tgz"); return err },
		func() error {
			return s.RecordDownloads(ctx, []Download{{NamespaceID: nsID, RepositoryID: repoID, PackageID: pkg.PackageID, VersionID: pkg.PackageID}})
		},
		func() error { _, _, err := s.Search(ctx, repo, "lib", 0, 20); return err },
		func() error { return s.UnpublishFile(ctx, repo, "lib", "2.0.0", "lib-2.0.0.tgz", "", nil) },
		func() error { return s.UnpublishFile(ctx, repo, "lib", "1.1.0", "lib-1.1.0.tgz", "", nil) },
		func() error { return s.DeletePackage(ctx, repo, "lib", "", nil) },
		func() error { return s.RestorePackage(ctx, nsID, pkg.PackageID, nil) },
		func() error {
			var v uuid.UUID
			if err := pool.QueryRow(ctx, `SELECT id FROM npm_versions WHERE namespace_id = $1 AND version = '1.0.0'`, nsID).Scan(&v); err != nil {
				return err
			}
			if err := s.DeleteVersionByID(ctx, nsID, v, nil); err != nil {
				return err
			}
			return s.RestoreVersion(ctx, nsID, v, nil)
		},
		func() error { return s.DeletePackageByID(ctx, nsID, pkg.PackageID, nil) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return &npmWorkflow{url: cfg.ConnString(), pool: pool, rec: rec}
}

// checkNpmPlans EXPLAINs every recorded npm statement.
func checkNpmPlans(t *testing.T, pool *pgxpool.Pool, rec *statementRecorder) {
	ctx := context.Background()

	// Which partitions belong to which table.
	parents := map[string]string{}
	rows, err := pool.Query(ctx, `
		SELECT c.relname, p.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c, p string
		if err := rows.Scan(&c, &p); err != nil {
			t.Fatal(err)
		}
		parents[c] = p
	}
	rows.Close()

	rec.mu.Lock()
	stmts := rec.stmts
	rec.mu.Unlock()
	seen := map[string]bool{}
	checked := 0
	for _, st := range stmts {
		if !strings.Contains(st.sql, "npm_") || seen[st.sql] || strings.HasPrefix(strings.TrimSpace(st.sql), "EXPLAIN") {
			continue
		}
		seen[st.sql] = true
		var plan []map[string]any
		if err := pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON, SUMMARY) "+st.sql, st.args...).Scan(&plan); err != nil {
			t.Errorf("EXPLAIN %s: %v", st.sql, err)
			continue
		}
		perTable := map[string]map[string]bool{}
		var walk func(n map[string]any)
		walk = func(n map[string]any) {
			if rel, ok := n["Relation Name"].(string); ok {
				if parent, ok := parents[rel]; ok {
					if perTable[parent] == nil {
						perTable[parent] = map[string]bool{}
					}
					perTable[parent][rel] = true
				}
			}
			if subs, ok := n["Plans"].([]any); ok {
				for _, sub := range subs {
					walk(sub.(map[string]any))
				}
			}
		}
		walk(plan[0]["Plan"].(map[string]any))
		checked++
		for table, parts := range perTable {
			if len(parts) > 1 {
				t.Errorf("%s planned on %d partitions (%.1f ms planning):\n%s", table, len(parts), plan[0]["Planning Time"], st.sql)
			}
		}
		t.Logf("%.2f ms planning: %s", plan[0]["Planning Time"], strings.Join(strings.Fields(st.sql), " ")[:min(100, len(strings.Join(strings.Fields(st.sql), " ")))])
	}
	if checked < 20 {
		t.Errorf("only %d npm statements checked", checked)
	}
}
