package graph

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

type gcCandidateOut struct {
	Digest     string
	Strikes    int
	ExcludedAt *time.Time
	LastError  *string
	Namespace  struct{ Slug string }
}

// walkExcluded pages through excludedGcCandidates; between(page) runs
// after every page.
func walkExcluded(t *testing.T, a *testAPI, ns string, first int, between func(int)) []gcCandidateOut {
	t.Helper()
	var all []gcCandidateOut
	var after *string
	for page := 0; page < 100; page++ {
		var out struct {
			ExcludedGcCandidates struct {
				Edges []struct {
					Cursor string
					Node   gcCandidateOut
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		a.admin(`query($n: String!, $f: Int, $a: String) { excludedGcCandidates(namespace: $n, first: $f, after: $a) {
			edges { cursor node { digest strikes excludedAt lastError namespace { slug } } } pageInfo { hasNextPage endCursor } } }`,
			map[string]any{"n": ns, "f": first, "a": after}, &out)
		for _, e := range out.ExcludedGcCandidates.Edges {
			all = append(all, e.Node)
		}
		if !out.ExcludedGcCandidates.PageInfo.HasNextPage {
			return all
		}
		c := out.ExcludedGcCandidates.PageInfo.EndCursor
		after = &c
		if between != nil {
			between(page)
		}
	}
	t.Fatal("walk does not end")
	return nil
}

func sumOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func hexDigest(sum [32]byte) string { return fmt.Sprintf("sha256:%x", sum[:]) }

// TestGarbageCollectionControls: the kill switch, gcQueue.lastReclaimedAt,
// excluded candidates (paged while candidates are excluded) and requeue,
// with their authorization and bad input.
func TestGarbageCollectionControls(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	nsID := a.createNamespace("gc-ns")
	otherID := a.createNamespace("gc-other")
	nsAdmin := a.createToken(adminToken, "gc-ns", "ns-admin", []string{"ADMIN"}, nil)

	t.Run("KillSwitch", func(t *testing.T) {
		a := a.with(t)
		type gcOut struct {
			Enabled   bool
			ChangedBy *string
			Reason    *string
		}
		var q struct{ GarbageCollection gcOut }
		a.admin(`{ garbageCollection { enabled changedBy reason updatedAt } }`, nil, &q)
		if !q.GarbageCollection.Enabled {
			t.Fatal("kill switch off in a fresh database")
		}
		var set struct {
			SetGarbageCollection struct{ GarbageCollection gcOut }
		}
		a.admin(`mutation { setGarbageCollection(enabled: false, reason: "incident 42: bucket migration") { garbageCollection { enabled changedBy reason } } }`, nil, &set)
		g := set.SetGarbageCollection.GarbageCollection
		if g.Enabled || g.ChangedBy == nil || *g.ChangedBy != "admin" || g.Reason == nil || !strings.Contains(*g.Reason, "incident 42") {
			t.Fatalf("after switching off: %+v", g)
		}
		// What every cleanup worker reads before a delete.
		sw, err := a.st.GCReclaimSwitch(t.Context())
		if err != nil || sw.Enabled {
			t.Fatalf("store switch %+v %v", sw, err)
		}
		// Visible in gcQueue for the super-user, hidden from namespace tokens.
		var gq struct {
			Namespace struct {
				GcQueue struct{ Reclaim *gcOut }
			}
		}
		a.admin(`{ namespace(slug: "gc-ns") { gcQueue { reclaim { enabled reason } } } }`, nil, &gq)
		if gq.Namespace.GcQueue.Reclaim == nil || gq.Namespace.GcQueue.Reclaim.Enabled {
			t.Fatalf("gcQueue.reclaim %+v", gq.Namespace.GcQueue.Reclaim)
		}
		r := a.post(nsAdmin.Secret, `{ namespace(slug: "gc-ns") { gcQueue { tracked reclaim { enabled } } } }`, nil)
		if len(r.Errors) > 0 || !strings.Contains(string(r.Data), `"reclaim":null`) {
			t.Fatalf("namespace token gcQueue: %+v %s", r.Errors, r.Data)
		}
		// Bad input changes nothing.
		for _, reason := range []string{strings.Repeat("r", 1025), "nul\x00byte"} {
			a.expectError(adminToken, `mutation($r: String) { setGarbageCollection(enabled: true, reason: $r) { garbageCollection { enabled } } }`,
				map[string]any{"r": reason}, CodeInvalidInput)
		}
		if sw, err := a.st.GCReclaimSwitch(t.Context()); err != nil || sw.Enabled {
			t.Fatalf("switch after refused changes %+v %v", sw, err)
		}
		a.expectError(adminToken, `mutation { setGarbageCollection(enabled: "yes") { garbageCollection { enabled } } }`, nil, "GRAPHQL_VALIDATION_FAILED")
		// Only the super-user may flip it.
		a.expectError(nsAdmin.Secret, `mutation { setGarbageCollection(enabled: true) { garbageCollection { enabled } } }`, nil, CodeForbidden)
		a.expectError("", `{ garbageCollection { enabled } }`, nil, CodeUnauthenticated)
		a.admin(`mutation { setGarbageCollection(enabled: true) { garbageCollection { enabled } } }`, nil, nil)
		if sw, err := a.st.GCReclaimSwitch(t.Context()); err != nil || !sw.Enabled {
			t.Fatalf("switch after re-enabling %+v %v", sw, err)
		}
	})

	t.Run("LastReclaimedAt", func(t *testing.T) {
		a := a.with(t)
		var q struct {
			Namespace struct {
				GcQueue struct{ LastReclaimedAt *time.Time }
			}
		}
		a.admin(`{ namespace(slug: "gc-ns") { gcQueue { lastReclaimedAt } } }`, nil, &q)
		if q.Namespace.GcQueue.LastReclaimedAt != nil {
			t.Fatalf("lastReclaimedAt %v before any reclaim", q.Namespace.GcQueue.LastReclaimedAt)
		}
		// The gc package test drives the real cleanup; here the column
		// written by it is read back.
		at := time.Date(2026, 11, 29, 12, 30, 0, 0, time.UTC)
		a.exec(`UPDATE namespace_statistics SET gc_last_reclaimed_at = $2 WHERE namespace_id = $1`, nsID, at)
		a.admin(`{ namespace(slug: "gc-ns") { gcQueue { lastReclaimedAt } } }`, nil, &q)
		if q.Namespace.GcQueue.LastReclaimedAt == nil || !q.Namespace.GcQueue.LastReclaimedAt.Equal(at) {
			t.Fatalf("lastReclaimedAt %v, want %v", q.Namespace.GcQueue.LastReclaimedAt, at)
		}
	})

	t.Run("ExcludedAndRequeue", func(t *testing.T) {
		a := a.with(t)
		base := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
		insert := func(ns uuid.UUID, name string, excludedAt *time.Time) [32]byte {
			sum := sumOf(name)
			a.exec(`INSERT INTO gc_blob_review_queue (namespace_id, sha256, review_after, attempts, strikes, excluded_at, last_error)
				VALUES ($1, $2, $3, 5, 3, $4, 'object store said no')`, ns, sum[:], base.Add(-time.Hour), excludedAt)
			return sum
		}
		var want [][32]byte
		for i := 0; i < 9; i++ {
			// Pairs share excluded_at: the digest breaks the tie.
			at := base.Add(time.Duration(i/2) * time.Minute)
			want = append(want, insert(nsID, fmt.Sprintf("excluded-%d", i), &at))
		}
		insert(nsID, "live-candidate", nil)
		otherAt := base
		otherSum := insert(otherID, "excluded-elsewhere", &otherAt)

		inserted := 0
		got := walkExcluded(t, a, "gc-ns", 2, func(page int) {
			// Candidates excluded while the walk goes on: newer ones rank
			// before the cursor (not seen), older ones after it (seen).
			inserted++
			newer, older := base.Add(time.Hour), base.Add(-time.Hour-time.Duration(inserted)*time.Second)
			insert(nsID, fmt.Sprintf("newer-%d", inserted), &newer)
			insert(nsID, fmt.Sprintf("older-%d", inserted), &older)
		})
		seen := map[string]int{}
		for i, c := range got {
			seen[c.Digest]++
			if seen[c.Digest] > 1 {
				t.Fatalf("%s returned twice", c.Digest)
			}
			if c.ExcludedAt == nil || c.Strikes != 3 || c.LastError == nil || c.Namespace.Slug != "gc-ns" {
				t.Fatalf("candidate %+v", c)
			}
			if i > 0 {
				prev := got[i-1]
				if c.ExcludedAt.After(*prev.ExcludedAt) || (c.ExcludedAt.Equal(*prev.ExcludedAt) && c.Digest > prev.Digest) {
					t.Fatalf("out of order at %d: %+v then %+v", i, prev, c)
				}
			}
		}
		for _, w := range want {
			if seen[hexDigest(w)] != 1 {
				t.Fatalf("%s seen %d times", hexDigest(w), seen[hexDigest(w)])
			}
		}
		if seen[hexDigest(sumOf("live-candidate"))] != 0 || seen[hexDigest(otherSum)] != 0 {
			t.Fatal("a live or other-namespace candidate was listed")
		}
		for i := 1; i <= inserted; i++ {
			if seen[hexDigest(sumOf(fmt.Sprintf("older-%d", i)))] != 1 {
				t.Fatalf("older-%d excluded during the walk and ranking after the cursor was not seen", i)
			}
		}

		// Requeue clears exclusion, strikes and backoff.
		requeue := `mutation($n: String!, $d: String!) { requeueGcCandidate(input: {namespace: $n, digest: $d}) {
			candidate { digest strikes excludedAt lastError } } }`
		var out struct {
			RequeueGcCandidate struct{ Candidate gcCandidateOut }
		}
		a.admin(requeue, map[string]any{"n": "gc-ns", "d": hexDigest(want[0])}, &out)
		if c := out.RequeueGcCandidate.Candidate; c.ExcludedAt != nil || c.Strikes != 0 || c.LastError != nil || c.Digest != hexDigest(want[0]) {
			t.Fatalf("requeued %+v", c)
		}
		after := walkExcluded(t, a, "gc-ns", 100, nil)
		if slices.ContainsFunc(after, func(c gcCandidateOut) bool { return c.Digest == hexDigest(want[0]) }) || len(after) != len(got)+inserted-1 {
			// newer-N rows (inserted during the first walk) are listed now.
			t.Fatalf("after requeue %d candidates (walk saw %d, %d newer added)", len(after), len(got), inserted)
		}
		var excludedAt *time.Time
		if err := a.pool.QueryRow(t.Context(), `SELECT excluded_at FROM gc_blob_review_queue WHERE namespace_id = $1 AND sha256 = $2`,
			nsID, want[0][:]).Scan(&excludedAt); err != nil || excludedAt != nil {
			t.Fatalf("row after requeue: %v %v", excludedAt, err)
		}
		// Not excluded any more, unknown, in another namespace, malformed.
		a.expectError(adminToken, requeue, map[string]any{"n": "gc-ns", "d": hexDigest(want[0])}, CodeNotFound)
		a.expectError(adminToken, requeue, map[string]any{"n": "gc-ns", "d": hexDigest(sumOf("never"))}, CodeNotFound)
		a.expectError(adminToken, requeue, map[string]any{"n": "gc-ns", "d": hexDigest(otherSum)}, CodeNotFound)
		a.expectError(adminToken, requeue, map[string]any{"n": "nope", "d": hexDigest(want[1])}, CodeNotFound)
		a.expectError(adminToken, requeue, map[string]any{"n": "gc-ns", "d": "sha256:xyz"}, CodeInvalidInput)
		a.expectError(adminToken, requeue, map[string]any{"n": "gc-ns", "d": strings.ToUpper(hexDigest(want[1])[7:])}, CodeInvalidInput)
		a.expectError(adminToken, `{ excludedGcCandidates(namespace: "gc-ns", after: "garbage") { edges { cursor } } }`, nil, CodeInvalidInput)
		a.expectError(adminToken, `{ excludedGcCandidates(namespace: "gc-ns", first: 101) { edges { cursor } } }`, nil, CodeInvalidInput)
		// Admin token only.
		a.expectError(nsAdmin.Secret, requeue, map[string]any{"n": "gc-ns", "d": hexDigest(want[1])}, CodeForbidden)
		a.expectError("", requeue, map[string]any{"n": "gc-ns", "d": hexDigest(want[1])}, CodeUnauthenticated)
		a.expectError(nsAdmin.Secret, `{ excludedGcCandidates(namespace: "gc-ns") { edges { cursor } } }`, nil, CodeForbidden)
	})
}
