package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/servebuild"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func TestMain(m *testing.M) { testdb.Main(m, servebuild.Remove) }

// TestImportCommands drives `artifact-registry import` over a tree a real
// distribution registry wrote: inventory, pass 1 for one repository, pass
// 2 for all, status; then the tags are on our side.
func TestImportCommands(t *testing.T) {
	ctx := context.Background()
	bin := buildBinary(t)
	legacyDir := filepath.Join(t.TempDir(), "legacy")
	host, stop := legacytest.StartRegistry(t, legacyDir)
	v1 := legacytest.PushImage(t, host, "team/app", "v1", legacytest.Image{Seed: 1})
	legacytest.PushImage(t, host, "solo", "v1", legacytest.Image{Seed: 2})
	stop()

	dbURL := testdb.NewURL(t)
	storageURL := "file://" + filepath.Join(t.TempDir(), "blobs")
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	objects, err := objstore.Open(ctx, storageURL)
	if err != nil {
		t.Fatal(err)
	}
	defer objects.Close()
	st := store.New(pool, objects, store.Options{})
	if _, err := st.CreateNamespace(ctx, "legacy"); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("prefixes:\n  - {prefix: \"\", namespace: legacy, repositoryFromPath: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(wantOK bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--database-url", dbURL, "--storage-url", storageURL)...)
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("artifact-registry %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	from := "file://" + legacyDir
	out := run(true, "import", "inventory", "--from", from, "--mapping", rules)
	if !strings.Contains(out, "recorded team/app -> team/app tags=1 status=pending") || !strings.Contains(out, "unmapped solo") {
		t.Fatalf("inventory output:\n%s", out)
	}
	run(false, "import", "pre", "--from", from) // neither --repository nor --all
	run(false, "import", "pre", "--from", from, "--repository", "nope/none")
	if out := run(true, "import", "pre", "--from", from, "--repository", "team/app"); !strings.Contains(out, "team/app: pass pre ok") {
		t.Fatalf("pre output:\n%s", out)
	}
	if out := run(true, "import", "final", "--from", from, "--all"); !strings.Contains(out, "team/app: pass final ok") {
		t.Fatalf("final output:\n%s", out)
	}
	if out := run(true, "import", "status"); !strings.Contains(out, "100.0% migrated") {
		t.Fatalf("status output:\n%s", out)
	}
	tg, err := container.New(st).ResolveTarget(ctx, "legacy", "team", "app")
	if err != nil {
		t.Fatal(err)
	}
	m, err := container.New(st).ManifestByTag(ctx, tg, "v1")
	if err != nil || store.FormatDigest(m.Digest[:]) != v1 {
		t.Fatalf("v1 on our side: %v %v", m, err)
	}
}
