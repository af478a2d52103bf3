package graph

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// seedLegacy records n legacy repositories team/r000.. in namespace acme
// (pending), as the inventory does.
func (a *testAPI) seedLegacy(n int) []*legacy.Repository {
	a.t.Helper()
	ns, err := a.st.CreateNamespace(context.Background(), "acme")
	if err != nil {
		a.t.Fatal(err)
	}
	out := make([]*legacy.Repository, n)
	for i := range n {
		out[i], err = legacy.New(a.st).UpsertRepository(context.Background(), legacy.InventoryEntry{
			LegacyPath: fmt.Sprintf("team/r%03d", i), NamespaceID: ns.ID, RepositoryName: "legacy",
			ImageName: fmt.Sprintf("r%03d", i), TagCount: i})
		if err != nil {
			a.t.Fatal(err)
		}
	}
	return out
}

const legacyListQuery = `query($s: [LegacyMigrationStatus!], $first: Int, $after: String) {
  legacyRepositories(status: $s, first: $first, after: $after) {
    edges { cursor node { id legacyPath target status priority attempts lastError tagCount } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
  }
}`

type legacyPage struct {
	LegacyRepositories struct {
		Edges []struct {
			Cursor string
			Node   struct {
				ID, LegacyPath, Target, Status string
				Priority, Attempts, TagCount   int
				LastError                      *string
			}
		}
		PageInfo struct {
			HasNextPage, HasPreviousPage bool
			EndCursor                    *string
		}
	}
}

func TestLegacyRepositoriesPaging(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	rows := a.seedLegacy(25)
	ctx := context.Background()
	if _, err := legacy.New(a.st).SkipRepository(ctx, rows[3].ID, "blob-only"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	var after any
	for pages := 0; ; pages++ {
		var p legacyPage
		a.admin(legacyListQuery, map[string]any{"first": 10, "after": after}, &p)
		for _, e := range p.LegacyRepositories.Edges {
			seen = append(seen, e.Node.LegacyPath)
		}
		if pages > 0 != p.LegacyRepositories.PageInfo.HasPreviousPage {
			t.Fatalf("page %d hasPreviousPage %v", pages, p.LegacyRepositories.PageInfo.HasPreviousPage)
		}
		if !p.LegacyRepositories.PageInfo.HasNextPage {
			break
		}
		after = *p.LegacyRepositories.PageInfo.EndCursor
	}
	if len(seen) != 25 || seen[0] != "team/r000" || seen[24] != "team/r024" {
		t.Fatalf("walk: %v", seen)
	}
	var p legacyPage
	a.admin(legacyListQuery, map[string]any{"s": []string{"SKIPPED"}}, &p)
	if e := p.LegacyRepositories.Edges; len(e) != 1 || e[0].Node.LegacyPath != "team/r003" ||
		e[0].Node.Target != "acme/legacy/r003" || e[0].Node.LastError == nil || *e[0].Node.LastError != "blob-only" {
		t.Fatalf("filtered: %+v", p)
	}
	// Bad input and anonymous callers.
	a.expectError(adminToken, legacyListQuery, map[string]any{"first": 0}, CodeInvalidInput)
	a.expectError(adminToken, legacyListQuery, map[string]any{"after": "garbage"}, CodeInvalidInput)
	a.expectError(adminToken, legacyListQuery, map[string]any{"s": []string{"NOPE"}}, "GRAPHQL_VALIDATION_FAILED")
	a.expectError("", legacyListQuery, nil, CodeUnauthenticated)
}

func TestLegacyMutations(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	rows := a.seedLegacy(3)
	ctx := context.Background()
	const prio = `mutation($id: ID!, $p: Int!) { prioritizeLegacyRepository(id: $id, priority: $p) { priority status } }`
	var pr struct{ PrioritizeLegacyRepository struct{ Priority int } }
	a.admin(prio, map[string]any{"id": rows[2].ID.String(), "p": 7}, &pr)
	if pr.PrioritizeLegacyRepository.Priority != 7 {
		t.Fatalf("prioritize: %+v", pr)
	}
	claimed, err := legacy.New(a.st).ClaimNextRepositoryWithLease(ctx, legacy.PassPre, time.Hour)
	if err != nil || claimed.ID != rows[2].ID {
		t.Fatalf("claim after prioritize: %+v %v", claimed, err)
	}
	const skip = `mutation($id: ID!, $r: String) { skipLegacyRepository(id: $id, reason: $r) { status lastError } }`
	// A running pass cannot be skipped.
	a.expectError(adminToken, skip, map[string]any{"id": rows[2].ID.String()}, CodeConflict)
	var sk struct {
		SkipLegacyRepository struct{ Status, LastError string }
	}
	a.admin(skip, map[string]any{"id": rows[0].ID.String(), "r": "too big"}, &sk)
	if sk.SkipLegacyRepository.Status != "SKIPPED" || sk.SkipLegacyRepository.LastError != "too big" {
		t.Fatalf("skip: %+v", sk)
	}
	const retry = `mutation($id: ID!) { retryLegacyRepository(id: $id) { status } }`
	a.expectError(adminToken, retry, map[string]any{"id": rows[1].ID.String()}, CodeConflict) // pending
	var rt struct{ RetryLegacyRepository struct{ Status string } }
	a.admin(retry, map[string]any{"id": rows[0].ID.String()}, &rt)
	if rt.RetryLegacyRepository.Status != "PENDING" {
		t.Fatalf("retry: %+v", rt)
	}
	a.expectError(adminToken, retry, map[string]any{"id": "not-a-uuid"}, CodeInvalidInput)
	a.expectError(adminToken, retry, map[string]any{"id": newID(t).String()}, CodeNotFound)
	a.expectError("", retry, map[string]any{"id": rows[0].ID.String()}, CodeUnauthenticated)

	var pause struct{ PauseLegacyMigration struct{ Paused bool } }
	a.admin(`mutation { pauseLegacyMigration { paused updatedAt } }`, nil, &pause)
	if c, _ := legacy.New(a.st).Controls(ctx); !pause.PauseLegacyMigration.Paused || !c.Paused {
		t.Fatalf("pause: %+v", pause)
	}
	var resume struct{ ResumeLegacyMigration struct{ Paused bool } }
	a.admin(`mutation { resumeLegacyMigration { paused } }`, nil, &resume)
	if c, _ := legacy.New(a.st).Controls(ctx); resume.ResumeLegacyMigration.Paused || c.Paused {
		t.Fatalf("resume: %+v", resume)
	}
	a.expectError("", `mutation { pauseLegacyMigration { paused } }`, nil, CodeUnauthenticated)
}

func TestLegacyProgress(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	rows := a.seedLegacy(4)
	ctx := context.Background()
	a.exec(`UPDATE legacy_repositories SET status = 4,
		pre_import_started_at = now() - interval '100 s', pre_import_finished_at = now() - interval '90 s',
		import_started_at = now() - interval '60 s', import_finished_at = now() - interval '58 s' WHERE id = $1`, rows[0].ID)
	a.exec(`UPDATE legacy_repositories SET status = 4,
		pre_import_started_at = now() - interval '50 s', pre_import_finished_at = now() - interval '20 s',
		import_started_at = now() - interval '10 s', import_finished_at = now() - interval '6 s' WHERE id = $1`, rows[1].ID)
	if _, err := legacy.New(a.st).SkipRepository(ctx, rows[2].ID, "final pass ran over its time limit"); err != nil {
		t.Fatal(err)
	}
	a.exec(`UPDATE legacy_repositories SET time_limit_exceeded_at = now() WHERE id = $1`, rows[2].ID)
	const q = `{ legacyMigrationProgress { total percentDone migratedLastHour migratedLastDay ratePerHour
		byStatus { status count } preImport { count min median max } finalImport { count min median max }
		overTimeLimit overTimeLimitPercent paused } }`
	var p struct {
		LegacyMigrationProgress struct {
			Total, MigratedLastHour, MigratedLastDay, OverTimeLimit int
			PercentDone, RatePerHour, OverTimeLimitPercent          float64
			ByStatus                                                []struct {
				Status string
				Count  int
			}
			PreImport, FinalImport struct {
				Count            int
				Min, Median, Max *float64
			}
			Paused bool
		}
	}
	a.admin(q, nil, &p)
	g := p.LegacyMigrationProgress
	if g.Total != 4 || g.MigratedLastHour != 2 || g.MigratedLastDay != 2 || g.OverTimeLimit != 1 || g.Paused {
		t.Fatalf("progress %+v", g)
	}
	// 2 migrated of 4 less 1 skipped.
	if g.PercentDone < 66.6 || g.PercentDone > 66.7 || g.OverTimeLimitPercent < 33.3 || g.OverTimeLimitPercent > 33.4 {
		t.Fatalf("percentages %+v", g)
	}
	if len(g.ByStatus) != 7 || g.ByStatus[0].Status != "PENDING" || g.ByStatus[0].Count != 1 || g.ByStatus[4].Count != 2 {
		t.Fatalf("by status %+v", g.ByStatus)
	}
	f := g.FinalImport
	if f.Count != 2 || *f.Min < 1.9 || *f.Min > 2.1 || *f.Max < 3.9 || *f.Max > 4.1 {
		t.Fatalf("final durations %+v", f)
	}
	if g.PreImport.Count != 2 || *g.PreImport.Max < 29.9 {
		t.Fatalf("pre durations %+v", g.PreImport)
	}
	a.expectError("", q, nil, CodeUnauthenticated)
}

// TestLegacyMigrationControls: setLegacyMigrationControls writes the row
// the migration service reads; bad input is refused and changes nothing;
// only the super-user may read or change it.
func TestLegacyMigrationControls(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	ctx := context.Background()
	a.createNamespace("legacy-ctl")
	nsAdmin := a.createToken(adminToken, "legacy-ctl", "ns-admin", []string{"ADMIN"}, nil)
	const set = `mutation($in: LegacyMigrationControlsInput!) { setLegacyMigrationControls(input: $in) {
		paused concurrency cadenceSeconds finalTimeLimitSeconds changedBy updatedAt } }`
	type controls struct {
		Paused                bool
		Concurrency           int
		CadenceSeconds        float64
		FinalTimeLimitSeconds float64
		ChangedBy             *string
	}
	var out struct{ SetLegacyMigrationControls controls }
	a.admin(set, map[string]any{"in": map[string]any{"concurrency": 5, "cadenceSeconds": 2.5, "finalTimeLimitSeconds": 90}}, &out)
	got := out.SetLegacyMigrationControls
	if got.Concurrency != 5 || got.CadenceSeconds != 2.5 || got.FinalTimeLimitSeconds != 90 || got.ChangedBy == nil || *got.ChangedBy != "admin" {
		t.Fatalf("set: %+v", got)
	}
	c, err := legacy.New(a.st).Controls(ctx)
	if err != nil || c.Concurrency != 5 || c.Cadence != 2500*time.Millisecond || c.FinalTimeLimit != 90*time.Second {
		t.Fatalf("row after set: %+v %v", c, err)
	}
	// A partial update keeps the other fields.
	a.admin(set, map[string]any{"in": map[string]any{"cadenceSeconds": 0}}, &out)
	if got := out.SetLegacyMigrationControls; got.Concurrency != 5 || got.CadenceSeconds != 0 || got.FinalTimeLimitSeconds != 90 {
		t.Fatalf("partial set: %+v", got)
	}
	// Bad input: refused, nothing changed (a good field next to a bad one
	// is not written either).
	for _, in := range []map[string]any{
		{"concurrency": 0}, {"concurrency": 65}, {"cadenceSeconds": -1},
		{"finalTimeLimitSeconds": 0}, {"finalTimeLimitSeconds": 1e-9}, {"finalTimeLimitSeconds": 1e12},
		{"concurrency": 3, "cadenceSeconds": -0.5},
	} {
		a.expectError(adminToken, set, map[string]any{"in": in}, CodeInvalidInput)
	}
	if c, _ := legacy.New(a.st).Controls(ctx); c.Concurrency != 5 || c.Cadence != 0 || c.FinalTimeLimit != 90*time.Second {
		t.Fatalf("a refused update changed the controls: %+v", c)
	}
	var q struct{ LegacyMigrationControls controls }
	a.admin(`{ legacyMigrationControls { paused concurrency cadenceSeconds finalTimeLimitSeconds } }`, nil, &q)
	if q.LegacyMigrationControls.Concurrency != 5 || q.LegacyMigrationControls.FinalTimeLimitSeconds != 90 {
		t.Fatalf("query: %+v", q)
	}
	a.expectError(nsAdmin.Secret, set, map[string]any{"in": map[string]any{"concurrency": 1}}, CodeForbidden)
	a.expectError(nsAdmin.Secret, `{ legacyMigrationControls { concurrency } }`, nil, CodeForbidden)
	a.expectError("", set, map[string]any{"in": map[string]any{"concurrency": 1}}, CodeUnauthenticated)
}
