package graph

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Benchmarks go through the HTTP handler, as a client would. Each reports
// the latency percentiles of its operations (p50-ms, p99-ms) next to
// Go's mean ns/op.

const benchRepositories = 100_000

// latencies records per-operation durations.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	pct := func(p float64) float64 {
		i := int(p * float64(len(l)-1))
		return float64(l[i].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// seedRepositories creates n repositories in one namespace with varied
// counters and update times (COPY, then one counter merge per chunk).
func seedRepositories(b *testing.B, a *testAPI, slug string, n int) {
	b.Helper()
	ctx := context.Background()
	nsID := a.createNamespace(slug)
	rng := rand.New(rand.NewPCG(1, 2))
	formats := []enum.Format{enum.FormatDocker, enum.FormatOCI, enum.FormatMaven, enum.FormatNpm}
	start := time.Now()
	const chunk = 10_000
	for off := 0; off < n; off += chunk {
		var in []store.NewRepository
		for i := off; i < min(off+chunk, n); i++ {
			in = append(in, store.NewRepository{
				Name: fmt.Sprintf("repo-%06d", rng.IntN(1_000_000)*10+i%10) + fmt.Sprintf("-%d", i),
				// Names are unique by the -i suffix; the random prefix spreads them.
				Format: formats[i%len(formats)], Kind: enum.KindHosted, Visibility: enum.Visibility(i % 3),
			})
		}
		ids, err := a.st.CreateRepositoriesBulk(ctx, slug, in)
		if err != nil {
			b.Fatal(err)
		}
		deltas := make([]store.RepositoryCounterDelta, len(ids))
		for i, id := range ids {
			ts := start.Add(-time.Duration(rng.IntN(1_000_000)) * time.Second)
			deltas[i] = store.RepositoryCounterDelta{
				RepositoryID:   id,
				ArtifactsCount: int64(rng.IntN(50)), // low cardinality: ties galore
				DownloadsCount: int64(rng.ExpFloat64() * 1000),
				SizeBytes:      int64(rng.IntN(1 << 30)),
			}
			if i%2 == 0 {
				deltas[i].LastUpdatedAt = &ts
			}
		}
		if err := a.st.MergeRepositoryCounters(ctx, nsID, deltas); err != nil {
			b.Fatal(err)
		}
	}
	a.exec(`VACUUM ANALYZE repositories`)
	b.Logf("seeded %d repositories in %s", n, time.Since(start).Round(time.Millisecond))
}

// BenchmarkRepositoryList: one page of 20 of the landing-page list at
// 100,000 repositories in one namespace, for every order and direction:
// the first page, and a deep page (after row 50,000).
func BenchmarkRepositoryList(b *testing.B) {
	a := newTestAPI(b)
	const slug = "bench"
	seedRepositories(b, a, slug, benchRepositories)
	ctx := context.Background()
	nsID := func() (id [16]byte) {
		if err := a.pool.QueryRow(ctx, `SELECT id FROM namespaces WHERE slug = $1`, slug).Scan(&id); err != nil {
			b.Fatal(err)
		}
		return id
	}()

	const query = `query($f: Int, $a: String, $l: Int, $b: String, $o: RepositoryOrder) { namespace(slug: "bench") {
		repositories(first: $f, after: $a, last: $l, before: $b, orderBy: $o) {
			edges { cursor node { id name format sizeBytes downloadsCount artifactsCount lastUpdatedAt } }
			pageInfo { hasNextPage endCursor } } } }`
	reader := a.createToken(adminToken, slug, "bench-reader", []string{"READ"}, nil)
	for _, field := range []string{"NAME", "LAST_UPDATED", "SIZE", "DOWNLOADS", "ARTIFACTS"} {
		for _, dir := range []string{"ASC", "DESC"} {
			// The cursor of row 50,000 in this order: the benchmark finds it
			// with the API's own keyset (walking 2,500 pages would be slow),
			// by asking the store for the row at that position.
			order := store.RepositoryOrder(field)
			q := store.RepositoryListQuery{NamespaceID: nsID, Order: order, Desc: dir == "DESC", Limit: 1}
			deep := deepKey(b, a, q, benchRepositories/2)
			deepCursor := encodeCursor("repository", deep)
			for _, page := range []struct {
				name  string
				token string
				vars  map[string]any
			}{
				{"first", adminToken, map[string]any{"f": 20}},
				{"deep", adminToken, map[string]any{"f": 20, "a": deepCursor}},
				// Backward: the last page, and the page before row 50,000.
				{"last", adminToken, map[string]any{"l": 20}},
				{"deep_backward", adminToken, map[string]any{"l": 20, "b": deepCursor}},
				// A READ token of the namespace, and anonymous (PUBLIC only:
				// the visibility filter on the same index walk).
				{"first_token", reader.Secret, map[string]any{"f": 20}},
				{"first_anonymous", "", map[string]any{"f": 20}},
			} {
				b.Run(fmt.Sprintf("%s_%s/%s", field, dir, page.name), func(b *testing.B) {
					vars := maps.Clone(page.vars)
					vars["o"] = map[string]any{"field": field, "direction": dir}
					a := a.with(b)
					var lat latencies
					for b.Loop() {
						t0 := time.Now()
						r := a.post(page.token, query, vars)
						lat = append(lat, time.Since(t0))
						if len(r.Errors) > 0 {
							b.Fatalf("errors: %+v", r.Errors)
						}
					}
					lat.report(b)
				})
			}
		}
	}
	b.Run("totalCount", func(b *testing.B) {
		a := a.with(b)
		var lat latencies
		for b.Loop() {
			t0 := time.Now()
			r := a.post(adminToken, `{ namespace(slug: "bench") { repositories(first: 1) { totalCount } } }`, nil)
			lat = append(lat, time.Since(t0))
			if len(r.Errors) > 0 {
				b.Fatalf("errors: %+v", r.Errors)
			}
		}
		lat.report(b)
	})
}

// deepKey returns the keyset position of the row at offset pos in the
// order, found by paging the store in pages of 1,000 (setup only).
func deepKey(b *testing.B, a *testAPI, q store.RepositoryListQuery, pos int) store.RepositoryKey {
	b.Helper()
	q.Limit = 1000
	var last *store.Repository
	for seen := 0; seen < pos; {
		rows, _, err := a.st.ListRepositories(context.Background(), q)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) == 0 {
			b.Fatalf("only %d rows", seen)
		}
		take := min(len(rows), pos-seen)
		last = rows[take-1]
		seen += take
		k := q.Order.KeyOf(last, q.Desc)
		q.After = &k
	}
	return q.Order.KeyOf(last, q.Desc)
}

// BenchmarkNestedQuery: 100 repositories with their images, tags,
// manifests and references in one query (the N+1 guard's query).
func BenchmarkNestedQuery(b *testing.B) {
	a := newTestAPI(b)
	seedNested(b, a, "bench-nested", 100)
	query := nestedQuery("bench-nested")
	var lat latencies
	a.stmts.reset()
	for b.Loop() {
		t0 := time.Now()
		r := a.post(adminToken, query, nil)
		lat = append(lat, time.Since(t0))
		if len(r.Errors) > 0 {
			b.Fatalf("errors: %+v", r.Errors)
		}
	}
	lat.report(b)
	b.ReportMetric(float64(a.stmts.n.Load())/float64(len(lat)), "stmts/op")
}
