package npm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/store/internal/partition"
	"github.com/google/uuid"
)

// TestPerPartitionStatements: partition.Of names the partition that
// holds a namespace's rows, for every table partitioned by namespace_id
// that the per-partition statements read, and the per-partition resolve
// answers what the same statement on the parents answers.
func TestPerPartitionStatements(t *testing.T) {
	t.Parallel()
	f := newNpmFixture(t)
	parentSQL := strings.NewReplacer("{repositories}", "repositories", "{npm_repositories}", "npm_repositories",
		"{npm_remote_repositories}", "npm_remote_repositories").Replace(resolveSQL)
	seen := map[int]bool{}
	for i := range 40 {
		slug := fmt.Sprintf("part%d", i)
		nsID, repoID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO namespaces (id, slug, platform, entity_type, entity_id, billing_entity_type, billing_entity_id)
			  VALUES ($1, $2, 'test', 'organization', $2, 'organization', $2)`, []any{nsID, slug}},
			{`INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, 'js', 2, 0, 0)`, []any{repoID, nsID}},
			{`INSERT INTO npm_repositories (id, namespace_id, repository_id) VALUES ($1, $2, $3)`, []any{uuid.Must(uuid.NewV7()), nsID, repoID}},
		} {
			if _, err := f.pool.Exec(f.ctx, q.sql, q.args...); err != nil {
				t.Fatal(err)
			}
		}
		part, err := partition.Of(f.ctx, f.pool, nsID)
		if err != nil {
			t.Fatal(err)
		}
		seen[part] = true
		var repoPart, npmPart string
		if err := f.pool.QueryRow(f.ctx, `SELECT (SELECT tableoid::regclass::text FROM repositories WHERE namespace_id = $1),
			(SELECT tableoid::regclass::text FROM npm_repositories WHERE namespace_id = $1)`, nsID).Scan(&repoPart, &npmPart); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("partitions.repositories_p%02d", part); repoPart != want {
			t.Fatalf("namespace %s: partition %d, its repository row is in %s", nsID, part, repoPart)
		}
		if want := fmt.Sprintf("partitions.npm_repositories_p%02d", part); npmPart != want {
			t.Fatalf("namespace %s: partition %d, its npm repository row is in %s", nsID, part, npmPart)
		}
		for _, name := range []string{"js", "missing"} {
			byParts, errParts := scanRepository(f.pool.QueryRow(f.ctx, resolvePartitionSQL[part], nsID, name), name, true)
			byParent, errParent := scanRepository(f.pool.QueryRow(f.ctx, parentSQL, nsID, name), name, true)
			if fmt.Sprint(byParts, errParts) != fmt.Sprint(byParent, errParent) {
				t.Fatalf("resolve %s/%s: per partition %v %v, on the parents %v %v", slug, name, byParts, errParts, byParent, errParent)
			}
		}
		if _, err := f.s.ResolveRepository(f.ctx, slug, "js"); err != nil {
			t.Fatalf("resolve %s/js: %v", slug, err)
		}
	}
	if len(seen) < 10 {
		t.Fatalf("40 namespaces fell in only %d partitions", len(seen))
	}
}
