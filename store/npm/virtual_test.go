package npm

import (
	"testing"

	"github.com/google/uuid"
)

// TestNpmHoldingRepositories: only the listed hosted repositories with an
// active package of that exact name are named.
func TestNpmHoldingRepositories(t *testing.T) {
	f := newNpmFixture(t)
	other, otherNpm := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO repositories (id, namespace_id, name, format, kind, visibility) VALUES ($1, $2, 'js2', 2, 0, 0)`, []any{other, f.repo.NamespaceID}},
		{`INSERT INTO npm_repositories (id, namespace_id, repository_id) VALUES ($1, $2, $3)`, []any{otherNpm, f.repo.NamespaceID, other}},
	} {
		if _, err := f.pool.Exec(f.ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	f.publish(t, "@acme/lib", "1.0.0")
	f.publish(t, "gone", "1.0.0")
	if _, err := f.pool.Exec(f.ctx, `UPDATE npm_packages SET soft_deleted_at = now() WHERE namespace_id = $1 AND name = 'gone'`, f.repo.NamespaceID); err != nil {
		t.Fatal(err)
	}
	both := []uuid.UUID{f.repo.RepositoryID, other, uuid.Must(uuid.NewV7())}
	for _, c := range []struct {
		name string
		ids  []uuid.UUID
		want bool
	}{
		{"@acme/lib", both, true},
		{"@acme/lib", []uuid.UUID{other}, false},
		{"@acme/li", both, false},
		{"gone", both, false},
		{"@acme/lib", nil, false},
	} {
		got, err := f.s.HoldingRepositories(f.ctx, f.repo.NamespaceID, c.ids, c.name)
		if err != nil {
			t.Fatal(err)
		}
		if got[f.repo.RepositoryID] != c.want || got[other] || len(got) > 1 {
			t.Errorf("HoldingRepositories(%s, %d ids) = %v, want js only: %v", c.name, len(c.ids), got, c.want)
		}
	}
}
