package npm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// TestNpmSemverKeyOrder checks that the byte order of npm_semver_key (the
// index order of the version listing) is exactly SemVer precedence as
// Version.Compare defines it, on hand-picked edge cases and random
// versions.
func TestNpmSemverKeyOrder(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	versions := []string{
		"0.0.0", "0.0.1", "0.1.0", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "1.9.9", "2.0.0", "10.0.0", "9.99.999",
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
		"1.0.0-rc.1", "1.0.0-alpha-x", "1.0.0-alpha.1.0", "1.0.0-0", "1.0.0-1", "1.0.0-10", "1.0.0-9",
		"1.0.0-0a", "1.0.0-A", "1.0.0-Z.1", "1.0.0-a-", "1.0.0--", "9007199254740991.0.0", "123456789012.1.1",
		"1.0.0-x.7.z.92", "1.0.0-alpha.0", "1.0.0-alpha.00a",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []string{"alpha", "beta", "rc", "0", "1", "2", "10", "x-y", "A", "a1"}
	for i := 0; i < 300; i++ {
		v := fmt.Sprintf("%d.%d.%d", rng.IntN(12), rng.IntN(12), rng.IntN(12))
		if rng.IntN(2) == 0 {
			n := 1 + rng.IntN(3)
			for j := 0; j < n; j++ {
				sep := "."
				if j == 0 {
					sep = "-"
				}
				v += sep + ids[rng.IntN(len(ids))]
			}
		}
		versions = append(versions, v)
	}
	parsed := map[string]npmsemver.Version{}
	var uniq []string
	for _, v := range versions {
		p, ok := npmsemver.ParseVersion(v)
		if !ok {
			t.Fatalf("test version %q is not valid", v)
		}
		if _, dup := parsed[v]; !dup {
			parsed[v] = p
			uniq = append(uniq, v)
		}
	}
	rows, err := pool.Query(context.Background(), `SELECT v FROM unnest($1::text[]) AS t(v) ORDER BY npm_semver_key(v), v`, uniq)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(uniq) {
		t.Fatalf("got %d versions back, sent %d", len(got), len(uniq))
	}
	for i := 1; i < len(got); i++ {
		if c := parsed[got[i-1]].Compare(parsed[got[i]]); c > 0 {
			t.Errorf("key order puts %s before %s, SemVer says the reverse", got[i-1], got[i])
		}
	}
	want := slices.Clone(uniq)
	slices.SortStableFunc(want, func(a, b string) int { return parsed[a].Compare(parsed[b]) })
	if !slices.EqualFunc(got, want, func(a, b string) bool { return parsed[a].Compare(parsed[b]) == 0 }) {
		t.Errorf("order differs:\n got %v\nwant %v", got, want)
	}
	// Not SemVer: ranks below every version instead of failing.
	var below bool
	if err := pool.QueryRow(context.Background(), `SELECT npm_semver_key('not-a-version') < npm_semver_key('0.0.0-0')`).Scan(&below); err != nil || !below {
		t.Fatalf("a non-SemVer string should rank below every version: %v %v", below, err)
	}
}

// TestNpmVersionsPagePlan: the version listing is a backward range scan of
// npm_versions_semver_idx on one partition, with no sort of the versions
// (keyset, never OFFSET), on the first page and after a cursor.
func TestNpmVersionsPagePlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Tiny tables favour sequential scans; the question is whether the
	// index serves the order at all.
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	ns, pkg := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	for _, keyset := range []bool{false, true} {
		args := []any{ns, []uuid.UUID{pkg}, 21}
		if keyset {
			args = append(args, []byte("01"), uuid.Must(uuid.NewV7()))
		}
		rows, err := conn.Query(ctx, "EXPLAIN "+versionsPageSQL(keyset), args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		// The LATERAL part, from its Limit node down to its scan (the outer
		// Sort only merges the limited rows of the packages).
		var inner string
		for i, l := range plan {
			if strings.Contains(l, "Limit") {
				inner = strings.Join(plan[i:min(i+3, len(plan))], "\n")
				break
			}
		}
		if !strings.Contains(inner, "Index Scan Backward") || !strings.Contains(inner, "npm_semver_key") ||
			strings.Contains(inner, "Sort") || strings.Count(text, " on npm_versions_p") != 1 {
			t.Fatalf("keyset=%v: the version page is not a backward scan of the semver index on one partition:\n%s", keyset, text)
		}
	}
}

// TestNpmSemverKeyUnchanged: the npm_semver_key of migration 00036 gives
// byte for byte the keys of the one of 00034 that built
// npm_versions_semver_idx (so the index needed no rebuild), on edge cases,
// strings that are not SemVer, and random versions.
func TestNpmSemverKeyUnchanged(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	src, err := os.ReadFile("../../migrations/00034_npm_semver_order.sql")
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	start := strings.Index(body, "CREATE FUNCTION npm_semver_key(")
	end := strings.Index(body, "\n$$;")
	if start < 0 || end < start {
		t.Fatal("no npm_semver_key in migration 00034")
	}
	old := strings.Replace(body[start:end+4], "npm_semver_key(", "npm_semver_key_00034(", 1)
	if _, err := pool.Exec(ctx, old); err != nil {
		t.Fatal(err)
	}
	inputs := []string{
		"0.0.0", "1.0.0", "01.0.0", "1.0", "1.0.0.0", "1.0.0-", "1.0.0-a..b", "1.0.0+", "1.0.0+b.1", "1.0.0-rc.1+b",
		"1.0.0--", "1.0.0-a-", "1.0.0-00", "1.0.0-007", "1.0.0-0a", "1.0.0-" + strings.Repeat("1", 120),
		"1.0.0-0" + strings.Repeat("1", 99), strings.Repeat("9", 99) + ".0.0", strings.Repeat("9", 100) + ".0.0",
		"1.0.0-x.7.z.92", "v1.0.0", "", " 1.0.0", "1.0.0 ", "1.0.0-é", "1.2.3-alpha.1.2.beta+exp.sha.5114f85",
		"1.0.0+a+b", "1.0.0-a+b-c", "1.0.0-+", "-1.0.0", "1.-0.0", "1..0",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []string{"alpha", "beta", "rc", "0", "00", "01", "1", "10", "x-y", "A", "a1", "-", ""}
	for range 5000 {
		v := fmt.Sprintf("%d.%d.%d", rng.IntN(20), rng.IntN(20), rng.IntN(2000))
		for j := range rng.IntN(4) {
			sep := "."
			if j == 0 {
				sep = "-"
			}
			v += sep + ids[rng.IntN(len(ids))]
		}
		if rng.IntN(5) == 0 {
			v += "+" + ids[rng.IntN(len(ids))]
		}
		inputs = append(inputs, v)
	}
	rows, err := pool.Query(ctx, `
		SELECT v FROM unnest($1::text[]) AS t(v)
		WHERE npm_semver_key(v) IS DISTINCT FROM npm_semver_key_00034(v)`, inputs)
	if err != nil {
		t.Fatal(err)
	}
	differ, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(differ) > 0 {
		t.Fatalf("%d of %d inputs get another key than before, e.g. %q", len(differ), len(inputs), differ[0])
	}
}
