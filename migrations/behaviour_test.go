package migrations_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// TestBehaviour exercises what the schema does on its own: deferred upstream
// reordering, the referential actions of a repository delete, and the
// triggers. Every subtest works in its own namespaces of one database.
func TestBehaviour(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	t.Run("upstream reorder in one transaction", func(t *testing.T) { testUpstreamReorder(t, pool) })
	t.Run("repository delete", func(t *testing.T) { testRepositoryDelete(t, pool) })
	t.Run("namespace statistics trigger", func(t *testing.T) { testNamespaceStatistics(t, pool) })
	t.Run("blob shadow triggers", func(t *testing.T) { testBlobShadow(t, pool) })
}

// virtualFormat describes one format's virtual tables.
type virtualFormat struct {
	name     string // container, maven, npm
	format   int16
	firstPos int // container is 1-based, npm 0-based; maven has no bound
}

var virtualFormats = []virtualFormat{{"container", 0, 1}, {"maven", 1, 1}, {"npm", 2, 0}}

func testUpstreamReorder(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	for _, vf := range virtualFormats {
		t.Run(vf.name, func(t *testing.T) {
			f := newFixture(t, pool)
			ns := f.namespace()
			virtual := f.child(vf.name+"_virtual_repositories", ns, f.repository(ns, vf.format, 1))
			table := vf.name + "_virtual_repository_upstreams"
			var ids []uuid.UUID
			for i := 0; i < 3; i++ {
				id := v7(t)
				f.must(table, row{"id", id, "namespace_id", ns, vf.name + "_virtual_repository_id", virtual,
					"upstream_repository_id", f.repository(ns, vf.format, 2), "position", vf.firstPos + i})
				ids = append(ids, id)
			}
			// Rotate the three positions with row-by-row UPDATEs: every
			// intermediate state collides, only the final one is unique.
			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				if _, err := tx.Exec(ctx, "UPDATE "+table+" SET position = $3 WHERE namespace_id = $1 AND id = $2",
					ns, id, vf.firstPos+(i+1)%3); err != nil {
					_ = tx.Rollback(ctx)
					t.Fatalf("update %d: %v", i, err)
				}
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatalf("commit of a consistent reorder failed: %v", err)
			}
			got := queryStrings(ctx, t, pool, "SELECT id::text || '@' || position FROM "+table+
				" WHERE namespace_id = $1 ORDER BY position", ns)
			if len(got) != 3 {
				t.Fatalf("rows after reorder: %v", got)
			}
			// A transaction that leaves a duplicate position fails at commit.
			tx, err = pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "UPDATE "+table+" SET position = $3 WHERE namespace_id = $1 AND id = $2",
				ns, ids[0], vf.firstPos); err != nil {
				_ = tx.Rollback(ctx)
				t.Fatalf("deferred constraint checked immediately: %v", err)
			}
			var onePos int
			_ = tx.QueryRow(ctx, "SELECT position FROM "+table+" WHERE namespace_id = $1 AND id = $2", ns, ids[1]).Scan(&onePos)
			if _, err := tx.Exec(ctx, "UPDATE "+table+" SET position = $3 WHERE namespace_id = $1 AND id = $2",
				ns, ids[0], onePos); err != nil {
				_ = tx.Rollback(ctx)
				t.Fatalf("deferred constraint checked immediately: %v", err)
			}
			if err := tx.Commit(ctx); sqlState(err) != codeUnique {
				t.Errorf("commit with duplicate positions: %v, want SQLSTATE %s", err, codeUnique)
			}
		})
	}
}

// repoChild is one format child table of repositories.
type repoChild struct {
	table  string
	format int16
	kind   int16
	extra  row // required columns besides id, namespace_id, repository_id
}

var repoChildren = []repoChild{
	{"container_repositories", 0, 0, nil},
	{"container_remote_repositories", 0, 2, row{"url", "https://registry-1.docker.io"}},
	{"container_virtual_repositories", 0, 1, nil},
	{"maven_repositories", 1, 0, nil},
	{"maven_remote_repositories", 1, 2, row{"url", "https://repo.maven.apache.org/maven2"}},
	{"maven_virtual_repositories", 1, 1, nil},
	{"npm_repositories", 2, 0, nil},
	{"npm_remote_repositories", 2, 2, row{"url", "https://registry.npmjs.org"}},
	{"npm_virtual_repositories", 2, 1, nil},
}

func testRepositoryDelete(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	deleteRepo := func(ns, repo uuid.UUID) error {
		_, err := pool.Exec(ctx, "DELETE FROM repositories WHERE namespace_id = $1 AND id = $2", ns, repo)
		return err
	}

	// Cascades: format child row and collection links go with the repository.
	for _, c := range repoChildren {
		t.Run("cascades to "+c.table, func(t *testing.T) {
			f := newFixture(t, pool)
			ns := f.namespace()
			coll := f.collection(ns, "default", true)
			team := f.collection(ns, "team", false)
			repo := f.repository(ns, c.format, c.kind)
			f.must("repository_collection_repositories", row{"namespace_id", ns, "repository_collection_id", coll, "repository_id", repo})
			f.must("repository_collection_repositories", row{"namespace_id", ns, "repository_collection_id", team, "repository_id", repo})
			child := v7(t)
			f.must(c.table, append(row{"id", child, "namespace_id", ns, "repository_id", repo}, c.extra...))
			if err := deleteRepo(ns, repo); err != nil {
				t.Fatalf("delete repository: %v", err)
			}
			if n := f.count(c.table, "namespace_id = $1", ns); n != 0 {
				t.Errorf("%d %s rows left", n, c.table)
			}
			if n := f.count("repository_collection_repositories", "namespace_id = $1", ns); n != 0 {
				t.Errorf("%d collection links left", n)
			}
			if n := f.count("repository_collections", "namespace_id = $1", ns); n != 2 {
				t.Errorf("collections: %d, want 2 (collections are not cascaded)", n)
			}
		})
	}

	// Three-level cascade: virtual repository -> upstream links -> rules.
	for _, vf := range virtualFormats {
		t.Run("cascades through "+vf.name+" virtual upstreams to rules", func(t *testing.T) {
			f := newFixture(t, pool)
			ns := f.namespace()
			repo := f.repository(ns, vf.format, 1)
			virtual := f.child(vf.name+"_virtual_repositories", ns, repo)
			up := v7(t)
			f.must(vf.name+"_virtual_repository_upstreams", row{"id", up, "namespace_id", ns,
				vf.name + "_virtual_repository_id", virtual, "upstream_repository_id", f.repository(ns, vf.format, 0),
				"position", vf.firstPos})
			f.must(vf.name+"_virtual_upstream_rules", row{"id", v7(t), "namespace_id", ns,
				vf.name + "_virtual_repository_upstream_id", up, "rule_type", 0, "pattern", "*", "target_field", 0})
			if err := deleteRepo(ns, repo); err != nil {
				t.Fatalf("delete virtual repository: %v", err)
			}
			for _, table := range []string{"_virtual_repositories", "_virtual_repository_upstreams", "_virtual_upstream_rules"} {
				if n := f.count(vf.name+table, "namespace_id = $1", ns); n != 0 {
					t.Errorf("%d %s%s rows left", n, vf.name, table)
				}
			}
		})
	}

	// Refusals: artifacts, upstream listings, upload sessions, overrides.
	type refusal struct {
		name  string
		setup func(f *fixture, ns, repo uuid.UUID)
	}
	refusals := []refusal{
		{"container image", func(f *fixture, ns, repo uuid.UUID) {
			cr := f.child("container_repositories", ns, repo)
			f.must("container_images", row{"id", v7(f.t), "namespace_id", ns, "container_repository_id", cr, "name", "app"})
		}},
		{"maven package", func(f *fixture, ns, repo uuid.UUID) {
			mr := f.child("maven_repositories", ns, repo)
			f.must("maven_packages", row{"id", v7(f.t), "namespace_id", ns, "maven_repository_id", mr,
				"group_id", "com.example", "artifact_id", "app"})
		}},
		{"npm package", func(f *fixture, ns, repo uuid.UUID) {
			nr := f.child("npm_repositories", ns, repo)
			f.must("npm_packages", row{"id", v7(f.t), "namespace_id", ns, "npm_repository_id", nr, "name", "left-pad"})
		}},
		{"soft-deleted container image", func(f *fixture, ns, repo uuid.UUID) {
			cr := f.child("container_repositories", ns, repo)
			f.must("container_images", row{"id", v7(f.t), "namespace_id", ns, "container_repository_id", cr, "name", "app",
				"soft_deleted_at", time.Now()})
		}},
		{"cached remote image", func(f *fixture, ns, repo uuid.UUID) {
			rr := v7(f.t)
			f.must("container_remote_repositories", row{"id", rr, "namespace_id", ns, "repository_id", repo, "url", "https://x"})
			f.must("container_remote_images", row{"id", v7(f.t), "namespace_id", ns, "container_remote_repository_id", rr, "name", "library/nginx"})
		}},
		{"upload session", func(f *fixture, ns, repo uuid.UUID) {
			f.must("upload_sessions", row{"namespace_id", ns, "repository_id", repo, "upload_id", uuid.New(),
				"expires_at", time.Now().Add(time.Hour)})
		}},
		{"repository lifecycle override", func(f *fixture, ns, repo uuid.UUID) {
			f.must("container_repository_lifecycle_policy_settings", row{"id", v7(f.t), "namespace_id", ns,
				"repository_id", repo, "enabled", true})
		}},
	}
	for _, vf := range virtualFormats {
		vf := vf
		refusals = append(refusals, refusal{"upstream of a " + vf.name + " virtual repository", func(f *fixture, ns, repo uuid.UUID) {
			virtual := f.child(vf.name+"_virtual_repositories", ns, f.repository(ns, vf.format, 1))
			f.must(vf.name+"_virtual_repository_upstreams", row{"id", v7(f.t), "namespace_id", ns,
				vf.name + "_virtual_repository_id", virtual, "upstream_repository_id", repo, "position", vf.firstPos})
		}})
	}
	for _, r := range refusals {
		t.Run("refused while it has "+r.name, func(t *testing.T) {
			f := newFixture(t, pool)
			ns := f.namespace()
			repo := f.repository(ns, 0, 0)
			r.setup(f, ns, repo)
			if err := deleteRepo(ns, repo); sqlState(err) != codeForeignKey {
				t.Fatalf("delete: %v, want SQLSTATE %s", err, codeForeignKey)
			}
			if n := f.count("repositories", "namespace_id = $1 AND id = $2", ns, repo); n != 1 {
				t.Errorf("repository gone after a refused delete")
			}
		})
	}
}

func testNamespaceStatistics(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	f := newFixture(t, pool)
	ns := f.namespace()
	var size, components int64
	var reconciled time.Time
	if err := pool.QueryRow(ctx, `SELECT deduplicated_size_bytes, components_count, last_reconciled_at
		FROM namespace_statistics WHERE namespace_id = $1`, ns).Scan(&size, &components, &reconciled); err != nil {
		t.Fatalf("namespace_statistics row for a new namespace: %v", err)
	}
	if size != 0 || components != 0 || !reconciled.Equal(time.Unix(0, 0)) {
		t.Errorf("statistics row = (%d, %d, %v), want (0, 0, epoch)", size, components, reconciled)
	}
	// The row is derived: a namespace hard delete cascades to it.
	if _, err := pool.Exec(ctx, "DELETE FROM namespaces WHERE id = $1", ns); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	if n := f.count("namespace_statistics", "namespace_id = $1", ns); n != 0 {
		t.Errorf("statistics row survived the namespace")
	}
	// A failed namespace insert leaves no statistics row behind.
	bad := uuid.New()
	if err := insert(ctx, pool, "namespaces", namespaceRow(bad)); sqlState(err) != codeCheck {
		t.Fatalf("v4 namespace insert: %v", err)
	}
	if n := f.count("namespace_statistics", "namespace_id = $1", bad); n != 0 {
		t.Errorf("statistics row for a rejected namespace")
	}
}

func testBlobShadow(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	f := newFixture(t, pool)
	ns := f.namespace()
	shadow := func(sha []byte) (n int, size int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*), COALESCE(sum(size), 0) FROM blob_storage_blobs_by_namespace
			WHERE namespace_id = $1 AND sha256 = $2`, ns, sha).Scan(&n, &size); err != nil {
			t.Fatal(err)
		}
		return n, size
	}
	upsert := func(sha []byte, size int64) int64 {
		t.Helper()
		var id int64
		err := pool.QueryRow(ctx, `INSERT INTO blob_storage_blobs (namespace_id, sha256, size, object_storage_key)
			VALUES ($1, $2, $3, 'k') ON CONFLICT (namespace_id, sha256) DO NOTHING RETURNING id`, ns, sha, size).Scan(&id)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		return id
	}
	a, b := digest("shadow-a"), digest("shadow-b")
	if id := upsert(a, 10); id == 0 {
		t.Fatal("first insert returned no id")
	}
	upsert(b, 20)
	if n, size := shadow(a); n != 1 || size != 10 {
		t.Errorf("after insert: shadow has %d rows of size %d, want 1 of 10", n, size)
	}
	// A dedup hit inserts nothing, so the shadow stays 1:1.
	if id := upsert(a, 10); id != 0 {
		t.Errorf("dedup upsert inserted a second row (id %d)", id)
	}
	if n, _ := shadow(a); n != 1 {
		t.Errorf("after dedup upsert: %d shadow rows", n)
	}
	var total int64
	if err := pool.QueryRow(ctx, `SELECT sum(size) FROM blob_storage_blobs_by_namespace WHERE namespace_id = $1`, ns).Scan(&total); err != nil || total != 30 {
		t.Errorf("namespace total from shadow = %d (%v), want 30", total, err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`, ns, a); err != nil {
		t.Fatal(err)
	}
	if n, _ := shadow(a); n != 0 {
		t.Errorf("after delete: %d shadow rows for the deleted blob", n)
	}
	if n, _ := shadow(b); n != 1 {
		t.Errorf("after delete: the other blob's shadow row is gone")
	}
	// A rolled-back insert leaves no shadow row.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := digest("shadow-c")
	if _, err := tx.Exec(ctx, `INSERT INTO blob_storage_blobs (namespace_id, sha256, size, object_storage_key) VALUES ($1, $2, 5, 'k')`, ns, c); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	if n, _ := shadow(c); n != 0 {
		t.Errorf("rolled-back blob left a shadow row")
	}
	// Namespace hard delete: blob rows stay for GC, the shadow cascades.
	if _, err := pool.Exec(ctx, `DELETE FROM namespaces WHERE id = $1`, ns); err != nil {
		t.Fatalf("delete namespace with a blob row: %v", err)
	}
	if n := f.count("blob_storage_blobs", "namespace_id = $1", ns); n != 1 {
		t.Errorf("blob rows after namespace delete: %d, want 1 (kept for GC)", n)
	}
	if n := f.count("blob_storage_blobs_by_namespace", "namespace_id = $1", ns); n != 0 {
		t.Errorf("shadow rows after namespace delete: %d, want 0", n)
	}
	// GC later deletes the orphaned blob row; the trigger tolerates the
	// already-gone shadow row.
	if _, err := pool.Exec(ctx, `DELETE FROM blob_storage_blobs WHERE namespace_id = $1`, ns); err != nil {
		t.Errorf("GC delete after namespace delete: %v", err)
	}
}
