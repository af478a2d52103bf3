package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// firstRowProbe runs in every new document before the app: it records the
// time (ms since navigation start) at which the first repository row is in
// the DOM, which is when a person sees the list.
const firstRowProbe = `
(() => {
  const seen = () => document.querySelector("tbody th a");
  const obs = new MutationObserver(() => {
    if (seen()) { window.__firstRow = performance.now(); obs.disconnect(); }
  });
  document.addEventListener("DOMContentLoaded", () => obs.observe(document.body, {childList: true, subtree: true}));
})();`

// listQuery is the UI's RepositoryList query (web/src/pages/RepositoryList.tsx).
const listQuery = `query RepositoryList($namespace: String!, $first: Int, $after: String, $orderBy: RepositoryOrder, $filter: RepositoryFilter) {
  namespace(slug: $namespace) { id repositories(first: $first, after: $after, orderBy: $orderBy, filter: $filter) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { cursor node { id name description format kind visibility artifactsCount downloadsCount sizeBytes lastUpdatedAt createdAt } } } } }`

// BenchmarkRepositoryListFirstRender is the time from navigation to the
// first rows of the repository list of a namespace with 10,000
// repositories (HTML, the embedded bundle from the browser cache after the
// first load, the GraphQL query with totalCount, and React's render), in
// Debian's headless Chromium, for each order of the list.
//
//	go test -run '^$' -bench FirstRender -benchtime 20x ./web/e2e
func BenchmarkRepositoryListFirstRender(b *testing.B) {
	requireChromium(b)
	s := newServer(b)
	s.graphql(b, `mutation { createNamespace(input: {slug: "big"}) { namespace { id } } }`, nil)
	start := time.Now()
	s.createRepositories(b, "big", "repo", 10_000, "DOCKER")
	b.Logf("seeded 10,000 repositories in %s", time.Since(start).Round(time.Millisecond))

	t := newBrowser(b, s.URL, 1280, 900)
	t.open("/sign-in")
	t.typeInto("#token", adminToken)
	t.click(button("Sign in"))
	t.see(heading("Namespaces"))
	if _, err := chromedp.Call(t.ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: firstRowProbe}); err != nil {
		b.Fatal(err)
	}

	orders := []string{"", "sort=last_updated", "sort=size", "sort=downloads", "sort=artifacts", "sort=name&dir=desc"}
	var gql []time.Duration
	load := func(q string) time.Duration {
		path := "/n/big/repositories"
		if q != "" {
			path += "?" + q
		}
		t.open(path)
		t.see(text("50 of 10,000 shown"))
		ms := run(t, "first row time", chromedp.Evaluate[float64](`window.__firstRow ?? -1`))
		if ms < 0 {
			b.Fatalf("%s: first row not observed", path)
		}
		return time.Duration(ms * float64(time.Millisecond))
	}

	// The API's share: the list query the page sends, from Go.
	for range 12 {
		t0 := time.Now()
		s.graphql(b, listQuery, map[string]any{"namespace": "big", "first": 50, "after": nil,
			"orderBy": map[string]any{"field": "LAST_UPDATED", "direction": "DESC"}, "filter": nil})
		gql = append(gql, time.Since(t0))
	}

	cold := load("") // nothing cached yet
	b.Logf("cold load (bundle not cached): %s", cold.Round(time.Millisecond))

	per := map[string][]time.Duration{}
	var all []time.Duration
	i := 0
	b.ResetTimer()
	for b.Loop() {
		q := orders[i%len(orders)]
		i++
		d := load(q)
		per[q] = append(per[q], d)
		all = append(all, d)
	}
	b.StopTimer()
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(all[len(all)*9/10].Microseconds())/1000, "ms-p90")
	b.ReportMetric(float64(cold.Microseconds())/1000, "ms-cold")
	slices.Sort(gql)
	b.ReportMetric(float64(gql[len(gql)/2].Microseconds())/1000, "ms-graphql-p50")
	for _, q := range orders {
		ds := per[q]
		if len(ds) == 0 {
			continue
		}
		slices.Sort(ds)
		name := q
		if name == "" {
			name = "sort=name"
		}
		b.Logf("%-20s n=%d p50=%s max=%s", name, len(ds), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
}
