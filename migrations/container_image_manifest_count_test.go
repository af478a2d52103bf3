package migrations_test

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const containerImageManifestCountVersion = 68

// imageCountDelta matches one image's artifacts_count entry (target 2,
// field 0) in an accountingRun trace, with the space before it (a step's
// entries follow its name and a space, and are joined by spaces).
var imageCountDelta = regexp.MustCompile(` 2/[^/]+/0=-?\d+,\d+`)

// withoutImageCounts is trace with the images' artifacts_count entries
// taken out.
func withoutImageCounts(trace []string) []string {
	out := make([]string, len(trace))
	for i, s := range trace {
		out[i] = imageCountDelta.ReplaceAllString(s, "")
	}
	return out
}

// TestContainerImageManifestCountUpgrade: the upgrade to 00068 counts each
// image's manifests, trashed ones included, into its new artifacts_count;
// after it the accounting workload records every other delta as before,
// and per image deltas that sum to its manifest rows; the Down gives back
// the accounting's functions and triggers and the same deltas as before.
func TestContainerImageManifestCountUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, containerImageManifestCountVersion)
	was := accountingDefinitions(ctx, t, pool)

	// Images of the release before: three manifests (one trashed), one,
	// none.
	f := newFixture(t, pool)
	ns := f.namespace()
	cr := f.child("container_repositories", ns, f.repository(ns, 3, 0))
	images := map[string]uuid.UUID{}
	for _, name := range []string{"three", "one", "none"} {
		images[name] = v7(t)
		f.must("container_images", row{"id", images[name], "namespace_id", ns, "container_repository_id", cr, "name", name})
	}
	manifest := func(image uuid.UUID, label string, trashed bool) {
		sha := digest(label)
		r := row{"id", v7(t), "namespace_id", ns, "container_image_id", image, "digest", sha, "media_type", "x",
			"blob_storage_attachment_id", f.blob(ns, sha, 10), "blob_sha256", sha, "size", int64(10)}
		if trashed {
			r = append(r, "soft_deleted_at", time.Now())
		}
		f.must("container_manifests", r)
	}
	manifest(images["three"], "a", false)
	manifest(images["three"], "b", false)
	manifest(images["three"], "c", true)
	manifest(images["one"], "a", false)
	before := runAllAccounting(t, pool)
	accepted := counterDeltaAcceptance(ctx, t, f, ns)

	upTo(t, pool, containerImageManifestCountVersion)
	// counter_deltas takes one pair more: an image's artifacts_count delta
	// (target 2, field 0, a delta without observed_at; counterDeltaAcceptance's
	// order).
	want := []byte(accepted)
	want[((2+1)*14+(0+1))*4] = '+'
	if got := counterDeltaAcceptance(ctx, t, f, ns); got != string(want) {
		t.Fatalf("counter_deltas acceptance after the upgrade:\ngot  %s\nwant %s", got, want)
	}
	for name, want := range map[string]int64{"three": 3, "one": 1, "none": 0} {
		var got int64
		if err := pool.QueryRow(ctx, `SELECT artifacts_count FROM container_images WHERE namespace_id = $1 AND id = $2`,
			ns, images[name]).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("image %q: artifacts_count %d after the upgrade, want %d", name, got, want)
		}
	}
	if n := f.count("container_images i", `i.artifacts_count <> (SELECT count(*) FROM container_manifests m
		WHERE m.namespace_id = i.namespace_id AND m.container_image_id = i.id)`); n != 0 {
		t.Fatalf("%d images counted other than their manifest rows after the upgrade", n)
	}
	if n := f.count("pg_proc", "proname = 'accounting_rewrite'"); n != 1 {
		t.Fatalf("accounting_rewrite: %d functions after the upgrade", n)
	}

	after := runAllAccounting(t, pool)
	if got := withoutImageCounts(after.trace); !slices.Equal(before.trace, got) {
		t.Fatalf("the other deltas differ after the upgrade:\n%s", traceDiff(before.trace, got))
	}
	if slices.Equal(after.trace, withoutImageCounts(after.trace)) {
		t.Fatal("the workload recorded no image counts after the upgrade")
	}
	// Every image of the workload's namespace: its deltas sum to its rows.
	if n := f.count("container_images i", `i.namespace_id = $1 AND (SELECT count(*) FROM container_manifests m
		WHERE m.namespace_id = i.namespace_id AND m.container_image_id = i.id) <> (SELECT coalesce(sum(delta), 0) FROM counter_deltas d
		WHERE d.namespace_id = i.namespace_id AND d.target = 2 AND d.target_id = i.id AND d.field = 0)`, after.ns); n != 0 {
		t.Fatalf("%d images whose count deltas differ from their manifest rows", n)
	}
	if n := f.count("counter_deltas", "namespace_id = $1 AND target = 2 AND field = 0", after.ns); n == 0 {
		t.Fatal("no image count deltas")
	}

	downTo(t, pool, previousVersion(t, containerImageManifestCountVersion))
	if now := accountingDefinitions(ctx, t, pool); !slices.Equal(was, now) {
		t.Fatalf("the Down left other accounting functions or triggers:\n%s", traceDiff(was, now))
	}
	if n := f.count("information_schema.columns", "table_name = 'container_images' AND column_name = 'artifacts_count'"); n != 0 {
		t.Fatal("container_images.artifacts_count after the Down")
	}
	if again := runAllAccounting(t, pool); !slices.Equal(before.trace, again.trace) {
		t.Fatalf("accounting differs after the Down:\n%s", traceDiff(before.trace, again.trace))
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("Up after the Down: %v", err)
	}
}
