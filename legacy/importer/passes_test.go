package importer_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/legacy/importer"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

// TestChangesBetweenPasses: after pass 1 the legacy registry (running on
// the tree) gets a new tag, a moved tag and a deleted tag; pass 2 imports
// the new image, moves the tag, and detaches the manifest (and blobs) no
// tag reaches any more, queueing them for the GC.
func TestChangesBetweenPasses(t *testing.T) {
	e := newEnv(t, legacytest.V3, true)
	ctx := context.Background()
	e.inventory(t)
	if _, err := e.pre(t, "good/app"); err != nil {
		t.Fatal(err)
	}
	host, stop := legacytest.StartRegistry(t, e.dir)
	v4 := legacytest.PushImage(t, host, "good/app", "v4", legacytest.Image{Layers: 1, Seed: 44})
	legacytest.Crane(t, "tag", host+"/good/app:v1", "latest")
	stop()
	// Tag deletion as the registry stores it: the tag directory goes.
	remove(t, e.repoPath("good/app", "_manifests/tags/v2"))

	fin, err := e.final(t, "good/app")
	if err != nil {
		t.Fatalf("final: %v", err)
	}
	want := map[string]string{"v1": e.tree.App["v1"], "latest": e.tree.App["v1"], "v4": v4}
	requireTags(t, e.ours(t, "good", "app"), want)
	if fin.ManifestsImported != 1 || fin.Final.ManifestsDetached != 1 || fin.Final.BlobsDetached < 2 {
		t.Fatalf("final report %+v %+v", fin, fin.Final)
	}
	if e.hasManifest(t, "good", "app", e.tree.App["v2"]) {
		t.Fatal("v2's manifest is still in the image after its tags disappeared")
	}
	var queued int
	var layers [][]byte
	for _, l := range e.tree.AppLayers["v2"] {
		d, _ := store.ParseSHA256(l)
		layers = append(layers, d[:])
	}
	if err := e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM gc_blob_review_queue WHERE sha256 = ANY($1::bytea[])`, layers).Scan(&queued); err != nil {
		t.Fatal(err)
	}
	if queued != len(layers) {
		t.Fatalf("%d of v2's %d layers queued for GC review", queued, len(layers))
	}
	requireSameBlobs(t, e, "good", "app", e.tree.AppLayers["v1"])
}

// TestFinalDeadline: a final pass past its deadline commits nothing, puts
// the repository back to pre_imported and records the over-limit run; a
// later pass with time succeeds.
func TestFinalDeadline(t *testing.T) {
	e := newEnv(t, legacytest.V3, false)
	e.inventory(t)
	if _, err := e.pre(t, "good/app"); err != nil {
		t.Fatal(err)
	}
	rep, err := importer.FinalImport(context.Background(), e.st, e.src, *e.row(t, "good/app"), time.Now().Add(time.Millisecond))
	if !errors.Is(err, importer.ErrTimeLimit) {
		t.Fatalf("final past its deadline: %v", err)
	}
	requireItem(t, rep, "repository", "good/app", importer.FailRepository, "time limit")
	r := e.row(t, "good/app")
	if r.Status != enum.LegacyPreImported || r.TimeLimitExceededAt == nil {
		t.Fatalf("after the aborted final: %+v", r)
	}
	requireTags(t, e.ours(t, "good", "app"), map[string]string{})
	p, err := legacy.New(e.st).MigrationProgress(context.Background())
	if err != nil || p.OverTimeLimit != 1 {
		t.Fatalf("progress %+v %v", p, err)
	}
	if _, err := e.final(t, "good/app"); err != nil {
		t.Fatal(err)
	}
	requireTags(t, e.ours(t, "good", "app"), e.tree.App)
}

// TestPreImportIdempotent: pass 1 run again (after a retry) copies
// nothing: what is in the image is not copied twice. A missing source
// tree (storage error) fails the repository.
func TestPreImportIdempotent(t *testing.T) {
	e := newEnv(t, legacytest.V3, false)
	ctx := context.Background()
	e.inventory(t)
	first, err := e.pre(t, "good/app")
	if err != nil {
		t.Fatal(err)
	}
	r := e.row(t, "good/app")
	if _, err := legacy.New(e.st).SkipRepository(ctx, r.ID, "operator"); err != nil {
		t.Fatal(err)
	}
	if _, err := legacy.New(e.st).RetryRepository(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	second, err := e.pre(t, "good/app")
	if err != nil {
		t.Fatal(err)
	}
	if second.BlobsCopied != 0 || second.ManifestsImported != 0 || second.BlobsPresent != first.BlobsCopied ||
		second.ManifestsPresent != first.ManifestsImported {
		t.Fatalf("second pass 1 %+v after first %+v", second, first)
	}
	if err := os.RemoveAll(e.dir); err != nil {
		t.Fatal(err)
	}
	if _, err := legacy.New(e.st).RetryRepository(ctx, r.ID); !store.HasCode(err, legacy.CodeState) {
		t.Fatalf("retry of a pre-imported row: %v", err)
	}
	if _, err := e.final(t, "good/app"); !errors.Is(err, importer.ErrRepositoryMissing) {
		t.Fatalf("final without a tree: %v", err)
	}
	if got := e.row(t, "good/app"); got.Status != enum.LegacyFailed {
		t.Fatalf("status %s, want failed", got.Status)
	}
	requireTags(t, e.ours(t, "good", "app"), map[string]string{})
}

// TestPreImportInterrupted: pass 1 cancelled at any point (a worker
// killed mid-copy) leaves the row failed or done, never half-imported in a
// way the next passes cannot finish: after a retry both passes converge to
// exactly the legacy tags and bytes.
func TestPreImportInterrupted(t *testing.T) {
	for _, after := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) {
			e := newEnv(t, legacytest.V3, false)
			e.inventory(t)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(after, cancel)
			_, err := importer.PreImport(ctx, e.st, e.src, *e.row(t, "good/app"))
			cancel()
			r := e.row(t, "good/app")
			switch {
			case err == nil:
				if r.Status != enum.LegacyPreImported {
					t.Fatalf("pass 1 returned ok with status %s", r.Status)
				}
			case r.Status == enum.LegacyFailed:
				if _, err := legacy.New(e.st).RetryRepository(context.Background(), r.ID); err != nil {
					t.Fatal(err)
				}
				if _, err := e.pre(t, "good/app"); err != nil {
					t.Fatalf("pass 1 after the interruption: %v", err)
				}
			case r.Status == enum.LegacyPreImporting:
				// The claim committed but its caller saw the cancellation
				// (an ambiguous commit): like a killed worker, the row is
				// taken again once its lease is over.
				if _, err := e.st.Pool().Exec(context.Background(),
					`UPDATE legacy_repositories SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, r.ID); err != nil {
					t.Fatal(err)
				}
				if _, err := e.pre(t, "good/app"); err != nil {
					t.Fatalf("pass 1 after the lease: %v", err)
				}
			case r.Status == enum.LegacyPending:
				// Cancelled before the pass started.
				if _, err := e.pre(t, "good/app"); err != nil {
					t.Fatal(err)
				}
			default:
				t.Fatalf("interrupted pass 1 (%v) left status %s", err, r.Status)
			}
			if _, err := e.final(t, "good/app"); err != nil {
				t.Fatal(err)
			}
			requireTags(t, e.ours(t, "good", "app"), e.tree.App)
			requireSameBlobs(t, e, "good", "app", append(e.tree.AppLayers["v1"], e.tree.AppLayers["v2"]...))
		})
	}
}
