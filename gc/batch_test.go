package gc

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/artifact-registry/artifact-registry/store"
)

// samePartition returns n blobs whose candidates share one partition, so
// that one cleanup batch can hold them all.
func (e *env) samePartition(label string, n int) [][]byte {
	e.t.Helper()
	byPart := map[int][][]byte{}
	for i := 0; ; i++ {
		b := blobData(fmt.Sprintf("%s-%d", label, i), 800)
		p := store.GCPartition(e.key(b))
		byPart[p] = append(byPart[p], b)
		if len(byPart[p]) == n {
			return byPart[p]
		}
	}
}

// dueInOnePartition pushes and detaches n blobs of one partition and
// moves the clock until their candidates are due.
func (e *env) dueInOnePartition(label string, n int) [][]byte {
	e.t.Helper()
	blobs := e.samePartition(label, n)
	for _, b := range blobs {
		e.mustDetach(e.mustPush(b)...)
	}
	e.pastDelayAndGrace()
	return blobs
}

// readable counts the blobs that can still be read back.
func (e *env) readable(blobs [][]byte) int {
	e.t.Helper()
	n := 0
	for _, b := range blobs {
		if _, ok := e.readBlob(b); ok {
			n++
		}
	}
	return n
}

func expectOutcomes(t *testing.T, res []*store.GCCleanupResult, want ...store.GCCleanupOutcome) {
	t.Helper()
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d", len(res), len(want))
	}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Errorf("candidate %d (%s): %v, want %v", i, r.Key, r.Outcome, want[i])
		}
	}
}

func (e *env) keys(blobs [][]byte) []store.GCCandidateKey {
	out := make([]store.GCCandidateKey, len(blobs))
	for i, b := range blobs {
		out[i] = e.key(b)
	}
	return out
}

// One batch, one outcome per candidate: two reclaimed, one whose blob row
// a foreground transaction holds (given way to without waiting, backed
// off without a strike), one without a blob row (its candidate dropped),
// one referenced again by a transaction that committed after the sweep
// read it (discarded).
func TestCleanupBatchOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	blobs := e.dueInOnePartition("mixed", 5)
	reclaim1, reclaim2, held, orphan, referenced := blobs[0], blobs[1], blobs[2], blobs[3], blobs[4]

	if _, err := e.pool.Exec(e.ctx, `DELETE FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2`,
		e.ns, digestOf(orphan)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO blob_storage_attachments (namespace_id, sha256) VALUES ($1, $2)`,
		e.ns, digestOf(referenced)); err != nil {
		t.Fatal(err)
	}
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(e.ctx, `SELECT 1 FROM blob_storage_blobs WHERE namespace_id = $1 AND sha256 = $2 FOR UPDATE`,
		e.ns, digestOf(held)); err != nil {
		t.Fatal(err)
	}

	res, err := e.g.CleanupBatch(e.ctx, e.keys(blobs))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Key != e.key(blobs[i]) {
			t.Errorf("result %d is of %s, want %s", i, r.Key, e.key(blobs[i]))
		}
	}
	expectOutcomes(t, res, store.GCReclaimed, store.GCReclaimed, store.GCBlobLocked, store.GCOrphanCandidate, store.GCReferenced)
	_ = tx.Rollback(e.ctx)
	e.assertGone(reclaim1)
	e.assertGone(reclaim2)
	e.assertIntact(held)
	if c := e.candidate(held); c == nil || c.BackoffUntil == nil || c.Strikes != 0 {
		t.Errorf("held blob's candidate: %+v, want a backoff without a strike", c)
	}
	for _, b := range [][]byte{orphan, referenced} {
		if c := e.candidate(b); c != nil {
			t.Errorf("candidate left: %+v", c)
		}
	}
	e.assertIntact(referenced)
	if v := gatherGauge(t, e.g, MetricReclaimedObjects); v != 2 {
		t.Errorf("reclaimed objects %v", v)
	}
}

// A failed storage delete ends the batch's deletes: that candidate is
// delete_failed, the rest are deferred and stay due, untouched.
func TestCleanupBatchStopsAtFailedDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	blobs := e.dueInOnePartition("fail", 3)
	deletes := 0
	e.g.deleteObject = func(ctx context.Context, key string) error {
		deletes++
		if deletes == 2 {
			return errors.New("storage refused")
		}
		return e.st.Objects().Delete(ctx, key)
	}
	res, err := e.g.CleanupBatch(e.ctx, e.keys(blobs))
	if err != nil {
		t.Fatal(err)
	}
	expectOutcomes(t, res, store.GCReclaimed, store.GCDeleteFailed, store.GCDeferred)
	if deletes != 2 {
		t.Errorf("%d deletes, want 2", deletes)
	}
	e.assertGone(blobs[0])
	e.assertIntact(blobs[1])
	e.assertIntact(blobs[2])
	if c := e.candidate(blobs[1]); c == nil || c.Attempts != 1 || c.BackoffUntil == nil {
		t.Errorf("failed candidate: %+v", c)
	}
	if c := e.candidate(blobs[2]); c == nil || c.Attempts != 0 || c.BackoffUntil != nil {
		t.Errorf("deferred candidate changed: %+v", c)
	}
}

// The kill switch is read before every delete of a batch: turned off
// after the first delete, it stops the rest, and the first one's rows are
// still committed.
func TestCleanupBatchKillSwitchPerDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	blobs := e.dueInOnePartition("switch", 3)
	e.g.afterObjectDelete = func(ctx context.Context, _ *store.Blob) error {
		_, err := e.st.SetGCReclaim(ctx, false, "carol", "mid-batch")
		return err
	}
	res, err := e.g.CleanupBatch(e.ctx, e.keys(blobs))
	if err != nil {
		t.Fatal(err)
	}
	expectOutcomes(t, res, store.GCReclaimed, store.GCDeleteStopped, store.GCDeleteStopped)
	e.assertGone(blobs[0])
	e.assertIntact(blobs[1])
	e.assertIntact(blobs[2])
}

// A batch is of one partition, each candidate once.
func TestCleanupBatchRefusesMixedPartitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var a, b []byte
	for i := 0; b == nil; i++ {
		c := blobData(fmt.Sprintf("mix-%d", i), 100)
		switch {
		case a == nil:
			a = c
		case store.GCPartition(e.key(c)) != store.GCPartition(e.key(a)):
			b = c
		}
	}
	if _, err := e.st.CleanupGCCandidates(e.ctx, []store.GCCandidateKey{e.key(a), e.key(b)}, store.GCCleanupPolicy{}); err == nil {
		t.Error("a batch across partitions was accepted")
	}
	if _, err := e.st.CleanupGCCandidates(e.ctx, []store.GCCandidateKey{e.key(a), e.key(a)}, store.GCCleanupPolicy{}); err == nil {
		t.Error("a batch naming a candidate twice was accepted")
	}
}

// Through River, a partition with more due candidates than one batch:
// its job snoozes and runs again until the partition is drained, and
// stays the only job of the partition.
func TestPartitionCleanupRunsUntilDrained(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{CleanupBatch: 2})
	blobs := e.dueInOnePartition("drain", 5)
	c := e.riverClient(e.g)
	if _, err := c.Insert(e.ctx, SweepArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	e.waitJobs(c)
	for _, b := range blobs {
		e.assertGone(b)
	}
	done := e.jobsOf(c, KindCleanupPartition, rivertype.JobStateCompleted)
	if len(done) != 1 {
		t.Fatalf("%d partition cleanups completed, want 1", len(done))
	}
	var snoozes int
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce((metadata->>'snoozes')::int, 0) FROM river_job WHERE id = $1`,
		done[0].ID).Scan(&snoozes); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	if snoozes != 2 { // batches of 2, 2 and 1
		t.Errorf("job snoozed %d times, want 2", snoozes)
	}
}

// Under a low --gc-cleanup-rate a batch is one second's worth of the rate,
// and a batch that would wait beyond paceMaxWait is not held: the job
// snoozes (errPaced) and nothing is taken from the rate.
func TestCleanupPace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{CleanupRate: 2})
	if n := e.g.batchSize(); n != 2 {
		t.Fatalf("batch size %d at 2 per second, want 2", n)
	}
	blobs := e.dueInOnePartition("paced", 3)
	part := store.GCPartition(e.key(blobs[0]))
	res, more, err := e.g.CleanupPartition(e.ctx, part)
	if err != nil || len(res) != 2 || !more {
		t.Fatalf("first batch: %d results, more %v, %v", len(res), more, err)
	}
	for range 6 { // 6 s of the rate spoken for
		e.g.pace.ReserveN(time.Now(), 2)
	}
	if _, _, err := e.g.CleanupPartition(e.ctx, part); !errors.Is(err, errPaced) {
		t.Fatalf("batch behind 6 s of reservations: %v, want errPaced", err)
	}
	if left := e.readable(blobs); left != 1 {
		t.Fatalf("%d blobs left, want 1", left)
	}
	if e.g.pace.Burst() != 2 {
		t.Fatalf("burst %d", e.g.pace.Burst())
	}
}
