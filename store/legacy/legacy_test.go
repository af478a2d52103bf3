package legacy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// fixture is a fresh database with one namespace and the legacy store over
// it.
type fixture struct {
	store *Store
	ns    uuid.UUID
}

func newFixture(t *testing.T) *fixture {
	core := testsupport.Store(t, testsupport.StoreOptions{Mem: true})
	return &fixture{store: New(core), ns: testsupport.Namespace(t, core, "legacy-test").ID}
}

func legacyEntry(ns uuid.UUID, path string, tags int) InventoryEntry {
	return InventoryEntry{LegacyPath: path, NamespaceID: ns, RepositoryName: "legacy", ImageName: path, TagCount: tags}
}

func TestLegacyInventoryUpsertAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	for i := range 25 {
		if _, err := f.store.UpsertRepository(ctx, legacyEntry(f.ns, fmt.Sprintf("team/app%02d", i), i)); err != nil {
			t.Fatal(err)
		}
	}
	skipped := legacyEntry(f.ns, "team/blobs", 0)
	skipped.Skip = "blob-only"
	if r, err := f.store.UpsertRepository(ctx, skipped); err != nil || r.Status != enum.LegacySkipped || *r.LastError != "blob-only" {
		t.Fatalf("skipped entry: %+v %v", r, err)
	}
	// Same path again: same row, new count.
	again, err := f.store.UpsertRepository(ctx, legacyEntry(f.ns, "team/app03", 40))
	if err != nil || again.TagCount != 40 {
		t.Fatalf("re-upsert: %+v %v", again, err)
	}
	if byTarget, err := f.store.RepositoryByTarget(ctx, f.ns, "legacy", "team/app03"); err != nil || byTarget.ID != again.ID {
		t.Fatalf("by target: %+v %v", byTarget, err)
	}
	if _, err := f.store.RepositoryByTarget(ctx, f.ns, "legacy", "nope"); !store.HasCode(err, CodeRepositoryUnknown) {
		t.Fatalf("by unknown target: %v", err)
	}
	// A second path onto the same target is refused.
	clash := legacyEntry(f.ns, "other/path", 1)
	clash.ImageName = "team/app03"
	if _, err := f.store.UpsertRepository(ctx, clash); !store.HasCode(err, CodeTargetTaken) {
		t.Fatalf("target clash: %v", err)
	}
	// Keyset pages of 10 cover every row once, in path order.
	var seen []string
	page := Page{Limit: 10}
	for {
		rows, more, err := f.store.ListRepositories(ctx, Filter{PathPrefix: "team/"}, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			seen = append(seen, r.LegacyPath)
		}
		if !more {
			break
		}
		page.After = rows[len(rows)-1].LegacyPath
	}
	if len(seen) != 26 || seen[0] != "team/app00" || seen[25] != "team/blobs" {
		t.Fatalf("listed %d rows: %v", len(seen), seen)
	}
	rows, _, err := f.store.ListRepositories(ctx, Filter{Statuses: []enum.LegacyStatus{enum.LegacySkipped}}, Page{})
	if err != nil || len(rows) != 1 || rows[0].LegacyPath != "team/blobs" {
		t.Fatalf("status filter: %v %v", rows, err)
	}
}

// TestLegacyClaimRace: concurrent workers claim every pending row exactly
// once, highest priority first.
func TestLegacyClaimRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	const n = 40
	for i := range n {
		r, err := f.store.UpsertRepository(ctx, legacyEntry(f.ns, fmt.Sprintf("r/%02d", i), 1))
		if err != nil {
			t.Fatal(err)
		}
		if i == 17 {
			if _, err := f.store.SetPriority(ctx, r.ID, 100); err != nil {
				t.Fatal(err)
			}
		}
	}
	first, err := f.store.ClaimNextRepositoryWithLease(ctx, PassPre, time.Minute)
	if err != nil || first.LegacyPath != "r/17" || first.Status != enum.LegacyPreImporting || first.Attempts != 1 {
		t.Fatalf("first claim: %+v %v", first, err)
	}
	var (
		mu      sync.Mutex
		claimed = map[string]int{first.LegacyPath: 1}
		wg      sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := f.store.ClaimNextRepositoryWithLease(ctx, PassPre, time.Minute)
				if store.HasCode(err, CodeNoWork) {
					return
				}
				if store.HasCode(err, store.CodeRetryable) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				claimed[r.LegacyPath]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != n {
		t.Fatalf("claimed %d distinct rows, want %d", len(claimed), n)
	}
	for p, c := range claimed {
		if c != 1 {
			t.Errorf("%s claimed %d times", p, c)
		}
	}
	// Nothing is claimable for pass 2 until pass 1 finishes.
	if _, err := f.store.ClaimNextRepository(ctx, PassFinal); !store.HasCode(err, CodeNoWork) {
		t.Fatalf("final claim before any pre-import: %v", err)
	}
}

// TestLegacyTransitions walks one row through both passes, the refusals,
// the dead-worker lease and the time-limit abort.
func TestLegacyTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	r, err := f.store.UpsertRepository(ctx, legacyEntry(f.ns, "a/b", 2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.StartPass(ctx, r.ID, PassFinal, time.Minute, 0); !store.HasCode(err, CodeState) {
		t.Fatalf("final before pre: %v", err)
	}
	// A pass 1 with an already expired lease is claimable again (dead worker).
	if _, err := f.store.StartPass(ctx, r.ID, PassPre, -time.Second, 0); err != nil {
		t.Fatal(err)
	}
	re, err := f.store.ClaimNextRepositoryWithLease(ctx, PassPre, time.Minute)
	if err != nil || re.ID != r.ID || re.Attempts != 2 {
		t.Fatalf("reclaim after lease: %+v %v", re, err)
	}
	if _, err := f.store.ClaimNextRepositoryWithLease(ctx, PassPre, time.Minute); !store.HasCode(err, CodeNoWork) {
		t.Fatalf("claim of a live lease: %v", err)
	}
	if _, err := f.store.SkipRepository(ctx, r.ID, "no"); !store.HasCode(err, CodeState) {
		t.Fatalf("skip while pre-importing: %v", err)
	}
	if err := f.store.FinishPreImport(ctx, r.ID, 2, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.StartPass(ctx, r.ID, PassPre, time.Minute, time.Hour); !store.HasCode(err, CodePreImportedRecently) {
		t.Fatalf("pre-import again within skip window: %v", err)
	}
	fin, err := f.store.ClaimNextRepository(ctx, PassFinal)
	if err != nil || fin.Status != enum.LegacyImporting || fin.ImportStartedAt == nil {
		t.Fatalf("final claim: %+v %v", fin, err)
	}
	// The final claim's lease is the controls' time limit (5 minutes).
	if d := fin.LeaseExpiresAt.Sub(*fin.ImportStartedAt); d < 5*time.Minute-time.Second || d > 5*time.Minute+time.Second {
		t.Fatalf("final lease %v, want the 5m time limit", d)
	}
	if err := f.store.AbortFinal(ctx, r.ID, "over the limit"); err != nil {
		t.Fatal(err)
	}
	ab, _ := f.store.RepositoryByID(ctx, r.ID)
	if ab.Status != enum.LegacyPreImported || ab.TimeLimitExceededAt == nil {
		t.Fatalf("after abort: %+v", ab)
	}
	p, err := f.store.MigrationProgress(ctx)
	if err != nil || p.OverTimeLimit != 1 || p.ByStatus[enum.LegacyPreImported] != 1 || p.Total != 1 || p.PreImport.Count != 1 {
		t.Fatalf("progress %+v %v", p, err)
	}
	if _, err := f.store.StartPass(ctx, r.ID, PassFinal, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.store.FailPass(ctx, r.ID, PassFinal, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.RetryRepository(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.store.RepositoryByID(ctx, r.ID); got.Status != enum.LegacyPending || *got.LastError != "boom" {
		t.Fatalf("after retry: %+v", got)
	}
	if _, err := f.store.RetryRepository(ctx, r.ID); !store.HasCode(err, CodeState) {
		t.Fatalf("retry of a pending row: %v", err)
	}
	if _, err := f.store.SkipRepository(ctx, uuid.Must(uuid.NewV7()), ""); !store.HasCode(err, CodeRepositoryUnknown) {
		t.Fatalf("skip unknown: %v", err)
	}
}

func TestLegacyControls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	c, err := f.store.Controls(ctx)
	if err != nil || c.Paused || c.Concurrency != 1 || c.FinalTimeLimit != 5*time.Minute || c.PreImportSkipRecent != time.Hour {
		t.Fatalf("defaults %+v %v", c, err)
	}
	paused, conc, limit := true, 4, 90*time.Second
	c, err = f.store.SetControls(ctx, ControlsUpdate{Paused: &paused, Concurrency: &conc, FinalTimeLimit: &limit, ChangedBy: "ops"})
	if err != nil || !c.Paused || c.Concurrency != 4 || c.FinalTimeLimit != limit || c.Cadence != time.Second || *c.ChangedBy != "ops" {
		t.Fatalf("after set %+v %v", c, err)
	}
	bad := 0
	if _, err := f.store.SetControls(ctx, ControlsUpdate{Concurrency: &bad}); err == nil {
		t.Fatal("concurrency 0 accepted")
	}
	zero := time.Duration(0)
	if _, err := f.store.SetControls(ctx, ControlsUpdate{FinalTimeLimit: &zero}); err == nil {
		t.Fatal("zero time limit accepted")
	}
	if c, _ := f.store.Controls(ctx); c.Concurrency != 4 || c.FinalTimeLimit != limit {
		t.Fatalf("a refused update changed the controls: %+v", c)
	}
}
