package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/gc"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// The end of every client test: what a policy moved to the trash leaves
// storage. Emptying the trash detaches the deleted artifacts' blobs, the
// unique ones (and only those) become GC candidates (gcQueue.tracked),
// and past the review delay and the grace window gc:cleanup removes
// their objects from the bucket while shared blobs stay.

// digests returns the distinct blob digests a query over the namespace
// ($1) lists.
func digests(t *testing.T, e *testserver.Env, sql string) map[[32]byte]bool {
	t.Helper()
	rows, err := e.Store.Pool().Query(e.Ctx, sql, e.NS[testserver.Home].ID)
	if err != nil {
		t.Fatal(err)
	}
	shas, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatal(err)
	}
	out := map[[32]byte]bool{}
	for _, s := range shas {
		out[[32]byte(s)] = true
	}
	return out
}

// emptyTrashFrees empties the trash and checks that exactly unique became
// GC candidates, that gc:cleanup reclaims each of them from the bucket,
// and that every blob of shared is still attached and stored.
func emptyTrashFrees(t *testing.T, e *testserver.Env, unique, shared map[[32]byte]bool) {
	t.Helper()
	if len(unique) == 0 {
		t.Fatal("the deleted artifacts have no blob of their own: the test checks nothing")
	}
	// Earlier candidates may be queued already (npm packuments and Maven
	// metadata are replaced on every publish): the trash adds its own.
	tracked := func() int {
		var q struct {
			Namespace struct{ GcQueue struct{ Tracked int } }
		}
		gql(t, e, `{ namespace(slug: "acme") { gcQueue { tracked } } }`, nil, &q)
		return q.Namespace.GcQueue.Tracked
	}
	before := tracked()
	var emptied struct {
		EmptyTrash struct{ PurgedCount, GcCandidates int }
	}
	gql(t, e, `mutation { emptyTrash(input: {namespace: "acme"}) { purgedCount gcCandidates } }`, nil, &emptied)
	if after := tracked(); emptied.EmptyTrash.PurgedCount == 0 || emptied.EmptyTrash.GcCandidates != len(unique) || after != before+len(unique) {
		t.Fatalf("emptyTrash %+v, gcQueue.tracked %d -> %d; want %d new candidates", emptied.EmptyTrash, before, after, len(unique))
	}
	nsID := e.NS[testserver.Home].ID
	queued := digests(t, e, `SELECT sha256 FROM gc_blob_review_queue WHERE namespace_id = $1`)
	for d := range unique {
		if !queued[d] {
			t.Fatalf("blob %x of a deleted artifact is not a GC candidate", d)
		}
	}
	collector, err := gc.New(e.Store, gc.Config{Logger: testsupport.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	e.Clock.Advance(store.DefaultReviewDelay + store.GCGracePeriod + time.Minute)
	for d := range unique {
		res, err := collector.Cleanup(context.Background(), store.GCCandidateKey{NamespaceID: nsID, SHA256: d})
		if err != nil || res.Outcome != store.GCReclaimed {
			t.Fatalf("cleanup of %x: %+v %v", d, res, err)
		}
		if stored(t, e, d) {
			t.Fatalf("the object of %x is still in the bucket", d)
		}
	}
	for d := range shared {
		if !stored(t, e, d) {
			t.Fatalf("shared blob %x left the bucket", d)
		}
	}
}

func stored(t *testing.T, e *testserver.Env, d [32]byte) bool {
	t.Helper()
	ok, err := e.Store.Objects().Exists(context.Background(), objstore.BlobKey(e.NS[testserver.Home].ID, d))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
