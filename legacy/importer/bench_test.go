package importer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/legacy/importer"
	"github.com/artifact-registry/artifact-registry/legacy/inventory"
	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/legacy"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// The benchmarks write their trees straight in the registry's layout (the
// matrix tests cover what a real registry writes); pushing gigabytes
// through a registry would measure the registry, not the importer.

// writeTree writes repo with tags images, each one config and one layer of
// layerSize random bytes, as distribution lays them out. It returns the
// total bytes of blobs and manifests.
func writeTree(b *testing.B, dir, repo string, tags, layerSize int) int64 {
	b.Helper()
	root := filepath.Join(dir, "docker/registry/v2")
	put := func(content []byte) (string, int) {
		sum := sha256.Sum256(content)
		h := hex.EncodeToString(sum[:])
		p := filepath.Join(root, "blobs/sha256", h[:2], h, "data")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			b.Fatal(err)
		}
		return "sha256:" + h, len(content)
	}
	link := func(rel, digest string) {
		p := filepath.Join(root, "repositories", repo, rel, "link")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(digest), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	hexOf := func(d string) string { return d[len("sha256:"):] }
	rng := rand.New(rand.NewPCG(1, uint64(tags)))
	var total int64
	for i := range tags {
		layer := make([]byte, layerSize)
		for j := 0; j+8 <= len(layer); j += 8 {
			v := rng.Uint64()
			for k := range 8 {
				layer[j+k] = byte(v >> (8 * k))
			}
		}
		ld, ls := put(layer)
		cfg := fmt.Appendf(nil, `{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["%s"]},"n":%d}`, ld, i)
		cd, cs := put(cfg)
		m, _ := json.Marshal(map[string]any{
			"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
			"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json", "digest": cd, "size": cs},
			"layers": []any{map[string]any{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "digest": ld, "size": ls}},
		})
		md, ms := put(m)
		link("_layers/sha256/"+hexOf(ld), ld)
		link("_layers/sha256/"+hexOf(cd), cd)
		link("_manifests/revisions/sha256/"+hexOf(md), md)
		tag := fmt.Sprintf("t%05d", i)
		link("_manifests/tags/"+tag+"/current", md)
		link("_manifests/tags/"+tag+"/index/sha256/"+hexOf(md), md)
		total += int64(ls + cs + ms)
	}
	return total
}

func setupBench(b *testing.B, tags, layerSize int) (*store.Store, *legacy.Repository, string, int64) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	total := writeTree(b, dir, "bench/app", tags, layerSize)
	objects, err := objstore.Open(ctx, "file://"+b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { objects.Close() })
	st := store.New(testdb.New(b), objects, store.Options{})
	if _, err := st.CreateNamespace(ctx, "legacy"); err != nil {
		b.Fatal(err)
	}
	src, err := fileblob.OpenBucket(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	r, _ := mapping.Parse([]byte(rules))
	if _, err := inventory.Run(ctx, st, src, r); err != nil {
		b.Fatal(err)
	}
	row, err := legacy.New(st).RepositoryByPath(ctx, "bench/app")
	if err != nil {
		b.Fatal(err)
	}
	return st, row, dir, total
}

// BenchmarkPreImport measures pass-1 throughput: 32 images of one 8 MiB
// layer (256 MiB) copied from a file tree into file storage.
func BenchmarkPreImport(b *testing.B) {
	const tags, layer = 32, 8 << 20
	ctx := context.Background()
	var elapsed time.Duration
	var bytes int64
	for b.Loop() {
		b.StopTimer()
		st, row, dir, total := setupBench(b, tags, layer)
		src, err := fileblob.OpenBucket(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		rep, err := importer.PreImport(ctx, st, src, *row)
		elapsed += time.Since(start)
		b.StopTimer()
		src.Close()
		if err != nil || rep.BlobsCopied != 2*tags {
			b.Fatalf("pre-import: %v %+v", err, rep)
		}
		bytes += total
		b.StartTimer()
	}
	b.SetBytes(bytes / int64(b.N))
	b.ReportMetric(float64(bytes)/elapsed.Seconds()*3600/1e9, "GB/h")
}

// BenchmarkFinal1000Tags measures pass 2 of a pre-imported repository of
// 1,000 tags (1,000 manifests): re-reading the tags and manifests from the
// tree, checking every link, and the one transaction that sets the tags.
func BenchmarkFinal1000Tags(b *testing.B) {
	const tags = 1000
	ctx := context.Background()
	st, row, dir, _ := setupBench(b, tags, 64)
	src, err := fileblob.OpenBucket(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	if _, err := importer.PreImport(ctx, st, src, *row); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		// Back to pre_imported with no tags, as before a first pass 2.
		if _, err := st.Pool().Exec(ctx, `DELETE FROM container_tags`); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Pool().Exec(ctx, `UPDATE legacy_repositories SET status = 2`); err != nil {
			b.Fatal(err)
		}
		cur, err := legacy.New(st).RepositoryByID(ctx, row.ID)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := importer.FinalImport(ctx, st, src, *cur, time.Now().Add(10*time.Minute))
		if err != nil || rep.Final.TagsSet != tags {
			b.Fatalf("final: %v", err)
		}
	}
}
