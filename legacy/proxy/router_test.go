package proxy_test

import (
	"context"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/legacy/proxy"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/catalog"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

func routerEnv(t *testing.T) (*store.Store, *proxy.Router, *legacy.Repository) {
	t.Helper()
	ctx := context.Background()
	st := testsupport.Store(t, testsupport.StoreOptions{Mem: true})
	ns := testsupport.Namespace(t, st, "acme")
	row, err := legacy.New(st).UpsertRepository(ctx, legacy.InventoryEntry{LegacyPath: "team/app",
		NamespaceID: ns.ID, RepositoryName: "legacy", ImageName: "app", TagCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := mapping.Parse([]byte(rulesYAML))
	if err != nil {
		t.Fatal(err)
	}
	local := func(p string) bool { return p == "team/fresh" }
	return st, proxy.New(st, rules, local), row
}

// TestRouteByStatus: every status and the paths the inventory does not know.
func TestRouteByStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, r, row := routerEnv(t)
	for _, c := range []struct {
		status enum.LegacyStatus
		want   oci.LegacyDecision
	}{
		{enum.LegacyPending, oci.LegacyForward},
		{enum.LegacyPreImporting, oci.LegacyForward},
		{enum.LegacyPreImported, oci.LegacyForward},
		{enum.LegacyImporting, oci.LegacyReadOnly},
		{enum.LegacyFailed, oci.LegacyForward},
		{enum.LegacySkipped, oci.LegacyForward},
		{enum.LegacyMigrated, oci.LegacyLocal},
	} {
		if _, err := st.Pool().Exec(ctx, `UPDATE legacy_repositories SET status = $2 WHERE id = $1`, row.ID, int16(c.status)); err != nil {
			t.Fatal(err)
		}
		got, err := r.Route(ctx, "team/app", false)
		if err != nil || got.Decision != c.want || got.Target != "acme/legacy/app" {
			t.Errorf("%s: %+v %v, want %s", c.status, got, err, c.want)
		}
	}
	for path, want := range map[string]oci.LegacyRoute{
		"team/fresh":     {Decision: oci.LegacyLocal, Target: "acme/legacy/fresh"},
		"team/elsewhere": {Decision: oci.LegacyForward, Target: "acme/legacy/elsewhere"},
		"acme/legacy/x":  {Decision: oci.LegacyNotMapped},
	} {
		if got, err := r.Route(ctx, path, false); err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", path, got, err, want)
		}
	}
}

// TestRouteCreatesNewRepository: the first write to a new name placed
// here creates its hosted repository; reads create nothing; a missing
// namespace is NAME_UNKNOWN's error.
func TestRouteCreatesNewRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, r, _ := routerEnv(t)
	count := func() int {
		var n int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM repositories WHERE name = 'legacy'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := r.Route(ctx, "team/fresh", false); err != nil || count() != 0 {
		t.Fatalf("read created a repository: %v, %d", err, count())
	}
	for range 2 {
		if got, err := r.Route(ctx, "team/fresh", true); err != nil || got.Decision != oci.LegacyLocal || count() != 1 {
			t.Fatalf("write: %+v %v, %d repositories", got, err, count())
		}
	}
	// Deleted since (on any instance): the next write creates it again,
	// on this instance as on one that never saw it.
	ref := store.RepositoryRef{Namespace: "acme", Name: "legacy"}
	if _, err := st.SoftDeleteRepository(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, _, err := catalog.New(st).PurgeRepository(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Route(ctx, "team/fresh", true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.RepositoryByName(ctx, "acme", "legacy"); err != nil {
		t.Fatalf("a write after the repository was deleted: %v", err)
	}
	rules, err := mapping.Parse([]byte("prefixes:\n  - prefix: ghost/\n    namespace: nowhere\n    repository: r\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = proxy.New(st, rules, func(string) bool { return true }).Route(ctx, "ghost/x", true)
	if !store.HasCode(err, container.CodeNameUnknown) {
		t.Fatalf("missing namespace: %v", err)
	}
}

// TestGuardWriteBlocksFinalPass: while a tag write is forwarded under the
// guard, pass 2 cannot claim the repository (so it cannot miss the tag);
// once the write is done, it can. An operator start waits for the write.
func TestGuardWriteBlocksFinalPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, r, row := routerEnv(t)
	if _, err := st.Pool().Exec(ctx, `UPDATE legacy_repositories SET status = 2 WHERE id = $1`, row.ID); err != nil {
		t.Fatal(err)
	}
	inside, release := make(chan oci.LegacyRoute), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- r.GuardWrite(ctx, "team/app", func(route oci.LegacyRoute) error {
			inside <- route
			<-release
			return nil
		})
	}()
	if route := <-inside; route.Decision != oci.LegacyForward {
		t.Fatalf("guarded route %+v", route)
	}
	if _, err := legacy.New(st).ClaimNextRepositoryWithLease(ctx, legacy.PassFinal, time.Minute); !store.HasCode(err, legacy.CodeNoWork) {
		t.Fatalf("claim under a forwarded tag write: %v", err)
	}
	started := make(chan error, 1)
	go func() {
		_, err := legacy.New(st).StartPass(ctx, row.ID, legacy.PassFinal, time.Minute, 0)
		started <- err
	}()
	select {
	case err := <-started:
		t.Fatalf("operator start did not wait for the write: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-started; err != nil {
		t.Fatalf("operator start after the write: %v", err)
	}
	// Now in the window: the guard answers read-only.
	err := r.GuardWrite(ctx, "team/app", func(route oci.LegacyRoute) error {
		if route.Decision != oci.LegacyReadOnly {
			t.Errorf("guard in the window: %+v", route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
