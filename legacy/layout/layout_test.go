package layout

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gocloud.dev/blob/memblob"
)

func TestRepositoriesAndLinks(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	d := "sha256:" + strings.Repeat("0a", 32)
	put := func(key, body string) {
		if err := b.WriteAll(ctx, Root+key, []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	put("repositories/a/b/c/_manifests/tags/v1/current/link", d)
	put("repositories/a/b/c/_manifests/tags/v2/current/link", "junk")
	put("repositories/a/b/c/_manifests/tags/v1/index/sha256/"+strings.Repeat("0a", 32)+"/link", d)
	put("repositories/a/b/c/_manifests/revisions/sha256/"+strings.Repeat("0a", 32)+"/link", d)
	put("repositories/a/b/_layers/sha256/"+strings.Repeat("0a", 32)+"/link", d) // blob-only parent of a nested repo
	put("repositories/up/_uploads/u1/startedat", "x")
	put("repositories/up/_uploads/u1/data", "x")
	put("repositories/up/_uploads/u2/startedat", "x")
	put("repositories/stray/file", "x") // no marker: not a repository
	repos, err := New(b).Repositories(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range repos {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "a/b,a/b/c,up" {
		t.Fatalf("repositories %v", names)
	}
	if c := repos[1]; !c.HasManifests || c.Tags != 2 || c.HasLayers {
		t.Fatalf("a/b/c %+v", c)
	}
	if ab := repos[0]; ab.HasManifests || !ab.HasLayers {
		t.Fatalf("a/b %+v", ab)
	}
	if up := repos[2]; up.Uploads != 2 {
		t.Fatalf("up %+v", up)
	}
	tree := New(b)
	tags, err := tree.Tags(ctx, "a/b/c")
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 2 || tags[0].Name != "v1" || tags[0].Digest.String() != d || !errors.Is(tags[1].Err, ErrBadLink) {
		t.Fatalf("tags %+v", tags)
	}
	dg, _ := ParseDigest(d)
	if err := tree.RevisionLinked(ctx, "a/b/c", dg); err != nil {
		t.Fatal(err)
	}
	if err := tree.LayerLinked(ctx, "a/b/c", dg); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unlinked layer: %v", err)
	}
	if _, err := tree.BlobSize(ctx, dg); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing blob: %v", err)
	}
	if ok, err := tree.Exists(ctx, "nope"); ok || err != nil {
		t.Fatalf("exists nope: %v %v", ok, err)
	}
	ups, err := tree.Uploads(ctx, "up")
	if err != nil || strings.Join(ups, ",") != "u1,u2" {
		t.Fatalf("uploads %v %v", ups, err)
	}
	for _, bad := range []string{"", "sha256:", "sha256:" + strings.Repeat("A", 64), "md5:" + strings.Repeat("0", 64), d + "0"} {
		if _, err := ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) accepted", bad)
		}
	}
}
