package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

type stmtCount struct{ n atomic.Int64 }

func (c *stmtCount) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *stmtCount) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// BenchmarkPreview100k: the dry run of keep-last-10 plus a regex over
// 100,000 tagged manifests (seeded with SQL), all in one image, or spread
// over 100 images of 1,000: every manifest but the newest 10 of each image
// counted, 20 listed. Reports the statements one preview runs.
func BenchmarkPreview100k(b *testing.B) {
	for _, images := range []int{1, 100} {
		b.Run(fmt.Sprintf("images=%d", images), func(b *testing.B) { benchPreview(b, images, 100_000/images) })
	}
}

func benchPreview(b *testing.B, images, perImage int) {
	ctx := context.Background()
	counter := &stmtCount{}
	pool := testsupport.Pool(b, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = counter })
	st := testsupport.Store(b, testsupport.StoreOptions{Pool: pool, Mem: true})
	ns := testsupport.Namespace(b, st, "bench")
	repo := testsupport.Repository(b, st, "bench", "img", enum.FormatOCI, enum.VisibilityPrivate)
	for i := range images {
		seedImage(b, st, repo, fmt.Sprintf("app-%d", i), perImage, 10, all)
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	ls := New(st, Options{})
	sc := Scope{NamespaceID: ns.ID, NamespaceSlug: ns.Slug, Repository: repo}
	if _, err := ls.Set(ctx, sc, Input{Enabled: true, MinAgeDays: 1, Rules: []Rule{lastN(10), regex(`release-.*`)}}); err != nil {
		b.Fatal(err)
	}
	want := images * (perImage - 10)
	b.ResetTimer()
	counter.n.Store(0)
	for range b.N {
		pv, err := ls.PreviewScope(ctx, sc, nil, 0, 20)
		if err != nil {
			b.Fatal(err)
		}
		if pv.Count != want || len(pv.Items) != 20 {
			b.Fatalf("preview: %d items, %d listed; want %d", pv.Count, len(pv.Items), want)
		}
	}
	b.ReportMetric(float64(counter.n.Load())/float64(b.N), "statements/op")
	b.ReportMetric(float64(images*perImage), "manifests")
}
