package importer_test

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/legacy/importer"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

func farFuture() time.Time { return time.Now().Add(time.Hour) }

// hasItem reports whether the report holds a decision about ref (a
// substring of the item's ref) with the given decision and a reason
// containing why.
func hasItem(rep *importer.Report, kind, ref string, d importer.Decision, why string) bool {
	for _, it := range rep.Items {
		if it.Kind == kind && strings.Contains(it.Ref, ref) && it.Decision == d && strings.Contains(it.Reason, why) {
			return true
		}
	}
	return false
}

func requireItem(t *testing.T, rep *importer.Report, kind, ref string, d importer.Decision, why string) {
	t.Helper()
	if !hasItem(rep, kind, ref, d, why) {
		var lines []string
		for _, it := range rep.Items {
			lines = append(lines, it.String())
		}
		t.Fatalf("report has no %s %s %s (%q); items:\n%s", kind, ref, d, why, strings.Join(lines, "\n"))
	}
}

func requireTags(t *testing.T, got, want map[string]string) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Fatalf("tags on our side %v, want %v", got, want)
	}
}

func without(m map[string]string, keys ...string) map[string]string {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// TestInventory: every repository of a real v3 tree is found (nested
// names, blob-only, uploads), mapped or reported unmapped, tags counted.
func TestInventory(t *testing.T) {
	e := newEnv(t, legacytest.V3, true)
	res := e.inventory(t)
	var found []string
	for _, r := range res.Found {
		found = append(found, r.Name)
	}
	want := []string{"good/app", "idx/multi", "misc/blobonly", "misc/foreign", "misc/referrer", "misc/uploads", "nested/team/app", "solo"}
	if !slices.Equal(found, want) {
		t.Fatalf("found %v, want %v", found, want)
	}
	if len(res.Unmapped) != 1 || res.Unmapped[0].Path != "solo" || !strings.Contains(res.Unmapped[0].Reason, "no image") {
		t.Fatalf("unmapped %+v, want solo only", res.Unmapped)
	}
	app := e.row(t, "good/app")
	if app.TagCount != 3 || app.Status != enum.LegacyPending || app.RepositoryName != "good" || app.ImageName != "app" {
		t.Fatalf("good/app row %+v", app)
	}
	nested := e.row(t, "nested/team/app")
	if nested.RepositoryName != "nested" || nested.ImageName != "team/app" || nested.TagCount != 1 {
		t.Fatalf("nested row %+v", nested)
	}
	// Blob-only repository: decision skip (nothing to migrate), recorded.
	bo := e.row(t, "misc/blobonly")
	if bo.Status != enum.LegacySkipped || bo.LastError == nil || !strings.Contains(*bo.LastError, "blob-only") {
		t.Fatalf("blob-only row %+v", bo)
	}
	// Running it again changes nothing but counts.
	res2 := e.inventory(t)
	if len(res2.Recorded) != len(res.Recorded) {
		t.Fatalf("second inventory recorded %d, first %d", len(res2.Recorded), len(res.Recorded))
	}
	if again := e.row(t, "good/app"); again.ID != app.ID {
		t.Fatal("second inventory made a new row")
	}
}

// TestTwoPassHappyPath: pass 1 copies manifests and blobs without tags,
// pass 2 sets every tag; pulled content is byte-identical.
func TestTwoPassHappyPath(t *testing.T) {
	e := newEnv(t, legacytest.V3, true)
	e.inventory(t)
	pre, err := e.pre(t, "good/app")
	if err != nil {
		t.Fatalf("pre: %v", err)
	}
	if pre.ManifestsImported != 2 || pre.BlobsCopied != 5 || pre.TagsImported != 3 {
		t.Fatalf("pre report %+v", pre)
	}
	if got := e.ours(t, "good", "app"); len(got) != 0 {
		t.Fatalf("pass 1 set tags: %v", got)
	}
	if r := e.row(t, "good/app"); r.Status != enum.LegacyPreImported || r.PreImportFinishedAt == nil {
		t.Fatalf("after pass 1: %+v", r)
	}
	// Pass 1 again: skipped as recent (default pre_import_skip_recent 1h).
	again, err := e.pre(t, "good/app")
	if err != nil || !again.Skipped {
		t.Fatalf("second pass 1: skipped=%v err=%v", again.Skipped, err)
	}
	fin, err := e.final(t, "good/app")
	if err != nil {
		t.Fatalf("final: %v", err)
	}
	if fin.BlobsCopied != 0 || fin.ManifestsImported != 0 || fin.Final.TagsSet != 3 {
		t.Fatalf("final report %+v %+v", fin, fin.Final)
	}
	requireTags(t, e.ours(t, "good", "app"), e.tree.App)
	if r := e.row(t, "good/app"); r.Status != enum.LegacyMigrated || r.ImportFinishedAt == nil {
		t.Fatalf("after pass 2: %+v", r)
	}
	requireSameBlobs(t, e, "good", "app", e.tree.AppLayers["v2"])
}

// requireSameBlobs reads each blob from our storage and compares it with
// the legacy blob data.
func requireSameBlobs(t *testing.T, e *env, repo, image string, digests []string) {
	t.Helper()
	ctx := context.Background()
	tg, err := container.New(e.st).ResolveTarget(ctx, "legacy", repo, image)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range digests {
		sha, _ := store.ParseSHA256(d)
		rc, _, err := e.st.OpenBlob(ctx, tg.NamespaceID, sha, 0, -1)
		if err != nil {
			t.Fatalf("open %s: %v", d, err)
		}
		var got strings.Builder
		_, err = io.Copy(&got, rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(e.blobPath(d))
		if err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Fatalf("blob %s differs from the legacy data", d)
		}
	}
}

// TestBrokenTreeMatrix: each case mutates a copy of a real tree and checks
// the decision the importer takes.
func TestBrokenTreeMatrix(t *testing.T) {
	cases := []struct {
		name   string
		repo   string // legacy path
		mutate func(t *testing.T, e *env)
		check  func(t *testing.T, e *env, pre, fin *importer.Report)
	}{
		{"tag link to a missing revision", "good/app",
			func(t *testing.T, e *env) { remove(t, e.revisionDir("good/app", e.tree.App["v1"])) },
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "tag", "v1", importer.SkipItem, "skipped")
				requireItem(t, pre, "manifest", e.tree.App["v1"], importer.SkipManifest, "missing revision")
				requireTags(t, e.ours(t, "good", "app"), without(e.tree.App, "v1"))
			}},
		{"revision whose blob data is missing", "good/app",
			func(t *testing.T, e *env) { remove(t, e.blobPath(e.tree.App["v1"])) },
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", e.tree.App["v1"], importer.SkipManifest, "revision data missing")
				requireTags(t, e.ours(t, "good", "app"), without(e.tree.App, "v1"))
			}},
		{"empty and garbage tag link files", "good/app",
			func(t *testing.T, e *env) {
				write(t, e.tagLink("good/app", "v1"), nil)
				write(t, e.tagLink("good/app", "latest"), []byte("garbage\x00\xff"))
			},
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "tag", "v1", importer.SkipItem, "broken link")
				requireItem(t, pre, "tag", "latest", importer.SkipItem, "broken link")
				requireTags(t, e.ours(t, "good", "app"), without(e.tree.App, "v1", "latest"))
			}},
		{"garbage revision link", "good/app",
			func(t *testing.T, e *env) {
				write(t, filepath.Join(e.revisionDir("good/app", e.tree.App["v1"]), "link"), []byte("sha256:nothex"))
			},
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", e.tree.App["v1"], importer.SkipManifest, "revision link broken")
				requireTags(t, e.ours(t, "good", "app"), without(e.tree.App, "v1"))
			}},
		{"layer linked but data missing", "good/app",
			func(t *testing.T, e *env) { remove(t, e.blobPath(e.tree.AppLayers["v1"][0])) },
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", e.tree.App["v1"], importer.SkipManifest, "data is missing")
				requireTags(t, e.ours(t, "good", "app"), without(e.tree.App, "v1"))
			}},
		{"layer not linked", "good/app",
			func(t *testing.T, e *env) {
				remove(t, e.repoPath("good/app", "_layers/sha256", strings.TrimPrefix(e.tree.AppLayers["v1"][0], "sha256:")))
			},
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", e.tree.App["v1"], importer.SkipManifest, "not linked")
				requireTags(t, e.ours(t, "good", "app"), without(e.tree.App, "v1"))
			}},
		{"index with a missing child", "idx/multi",
			func(t *testing.T, e *env) { remove(t, e.revisionDir("idx/multi", e.tree.MultiA)) },
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", e.tree.MultiIx, importer.SkipManifest, "index child")
				requireItem(t, pre, "tag", "idx", importer.SkipItem, "skipped")
				requireTags(t, e.ours(t, "idx", "multi"), map[string]string{"b": e.tree.MultiB})
			}},
		{"schema1 manifest", "good/app",
			func(t *testing.T, e *env) {
				e.plant(t, "good/app", "old", []byte(`{"schemaVersion":1,"name":"good/app","tag":"old","architecture":"amd64","fsLayers":[],"history":[]}`))
			},
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", "sha256:", importer.SkipManifest, "schema 1")
				requireItem(t, pre, "tag", "old", importer.SkipItem, "skipped")
				requireTags(t, e.ours(t, "good", "app"), e.tree.App)
			}},
		{"unknown media type", "good/app",
			func(t *testing.T, e *env) {
				e.plant(t, "good/app", "weird", []byte(`{"schemaVersion":2,"mediaType":"application/vnd.example.thing+json"}`))
			},
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", "sha256:", importer.SkipManifest, "unknown manifest media type")
				requireTags(t, e.ours(t, "good", "app"), e.tree.App)
			}},
		{"non-JSON manifest", "good/app",
			func(t *testing.T, e *env) { e.plant(t, "good/app", "junk", []byte("this is not a manifest\n")) },
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", "sha256:", importer.SkipManifest, "not a JSON manifest")
				requireTags(t, e.ours(t, "good", "app"), e.tree.App)
			}},
		{"foreign layer with URLs", "misc/foreign", nil,
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "blob", e.tree.ForeignLayer, importer.SkipItem, "foreign layer")
				requireTags(t, e.ours(t, "misc", "foreign"), map[string]string{"v1": e.tree.Foreign})
			}},
		{"untagged referrer", "misc/referrer", nil,
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "manifest", e.tree.Referrer, importer.SkipItem, "untagged referrer of "+e.tree.Subject)
				requireTags(t, e.ours(t, "misc", "referrer"), map[string]string{"v1": e.tree.Subject})
				if e.hasManifest(t, "misc", "referrer", e.tree.Referrer) {
					t.Fatal("the untagged referrer was imported")
				}
			}},
		{"nested names", "nested/team/app", nil,
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireTags(t, e.ours(t, "nested", "team/app"), map[string]string{"v1": e.tree.Nested})
			}},
		{"abandoned upload", "misc/uploads", nil,
			func(t *testing.T, e *env, pre, fin *importer.Report) {
				requireItem(t, pre, "upload", "", importer.SkipItem, "upload session")
				requireTags(t, e.ours(t, "misc", "uploads"), map[string]string{"v1": e.tree.Uploads})
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, legacytest.V3, true)
			if c.mutate != nil {
				c.mutate(t, e)
			}
			e.inventory(t)
			pre, fin := e.both(t, c.repo)
			c.check(t, e, pre, fin)
			if r := e.row(t, c.repo); r.Status != enum.LegacyMigrated {
				t.Fatalf("status %s, want migrated", r.Status)
			}
		})
	}
}

// TestFailRepository: decisions that fail the whole repository leave it
// failed (pass 1) and nothing tagged on our side.
func TestFailRepository(t *testing.T) {
	t.Run("every tag broken", func(t *testing.T) {
		e := newEnv(t, legacytest.V3, false)
		remove(t, e.repoPath("idx/multi", "_manifests/revisions"))
		e.inventory(t)
		rep, err := e.pre(t, "idx/multi")
		if !errors.Is(err, importer.ErrNothingImportable) {
			t.Fatalf("pre: %v, want ErrNothingImportable", err)
		}
		requireItem(t, rep, "repository", "idx/multi", importer.FailRepository, "no tag")
		r := e.row(t, "idx/multi")
		if r.Status != enum.LegacyFailed || r.LastError == nil {
			t.Fatalf("row %+v, want failed with last_error", r)
		}
		requireTags(t, e.ours(t, "idx", "multi"), map[string]string{})
	})
	t.Run("layer data corrupted", func(t *testing.T) {
		e := newEnv(t, legacytest.V3, false)
		layer := e.tree.AppLayers["v1"][0]
		b, err := os.ReadFile(e.blobPath(layer))
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff // same size, different bytes
		write(t, e.blobPath(layer), b)
		e.inventory(t)
		rep, err := e.pre(t, "good/app")
		if err == nil || !strings.Contains(err.Error(), "corrupted") {
			t.Fatalf("pre: %v, want a corruption failure", err)
		}
		requireItem(t, rep, "repository", "good/app", importer.FailRepository, "corrupted")
		if r := e.row(t, "good/app"); r.Status != enum.LegacyFailed {
			t.Fatalf("status %s, want failed", r.Status)
		}
		requireTags(t, e.ours(t, "good", "app"), map[string]string{})
	})
}

// TestRegistry28: a tree written by distribution 2.8 (Debian's
// docker-registry) imports the same way.
func TestRegistry28(t *testing.T) {
	e := newEnv(t, legacytest.V28, false)
	res := e.inventory(t)
	if len(res.Recorded) != 3 || len(res.Unmapped) != 0 {
		t.Fatalf("inventory recorded %d, unmapped %v", len(res.Recorded), res.Unmapped)
	}
	for _, path := range []string{"good/app", "idx/multi", "nested/team/app"} {
		e.both(t, path)
	}
	requireTags(t, e.ours(t, "good", "app"), e.tree.App)
	requireTags(t, e.ours(t, "idx", "multi"), map[string]string{"a": e.tree.MultiA, "b": e.tree.MultiB, "idx": e.tree.MultiIx})
	requireTags(t, e.ours(t, "nested", "team/app"), map[string]string{"v1": e.tree.Nested})
	requireSameBlobs(t, e, "good", "app", e.tree.AppLayers["v1"])
}
