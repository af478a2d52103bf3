package store

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

var sortNode = regexp.MustCompile(`(?m)^\s*(->\s+)?Sort\s+\(`)

// TestExcludedGCCandidatesPlan: both pages of the excluded-candidate
// listing read gc_blob_review_queue_excluded_idx in index order, with no
// sort of the namespace's candidates (scans that cannot use an index are
// disabled, so the plan shows whether one fits the ORDER BY).
func TestExcludedGCCandidatesPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	ns := uuid.Must(uuid.NewV7())
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cond string
		args []any
	}{
		{"", []any{ns, 51}},
		{excludedGCKeyset, []any{ns, 51, time.Now(), make([]byte, 32)}},
	} {
		var plan string
		rows, err := tx.Query(ctx, "EXPLAIN "+excludedGCCandidatesSQL(c.cond), c.args...)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan += line + "\n"
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		// A Sort node, not the "Sort Key" of the Merge Append of partitions.
		if sortNode.MatchString(plan) || !strings.Contains(plan, "excluded_at_sha256_idx") {
			t.Errorf("listing (cond %q) does not walk the excluded index:\n%s", c.cond, plan)
		}
	}
}
