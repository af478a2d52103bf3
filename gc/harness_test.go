package gc

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// env is one test's world: a fresh database, a file bucket in t.TempDir(),
// a store on the fake clock, one namespace with one repository, and a GC.
type env struct {
	t     testing.TB
	ctx   context.Context
	pool  *pgxpool.Pool
	st    *store.Store
	clock *fakeclock.Clock // the injected clock: tests move time, never sleep for it
	ns    uuid.UUID
	repo  uuid.UUID
	g     *GC
	delay time.Duration
	// waitTimeout bounds waitJobs (default 2 min); waitPoll is how often
	// it looks (default 10 ms).
	waitTimeout, waitPoll time.Duration
}

const testReviewDelay = time.Hour

func newEnv(t testing.TB, cfg Config) *env {
	t.Helper()
	return newEnvWith(t, envOptions{cfg: cfg})
}

type envOptions struct {
	cfg         Config
	reviewDelay time.Duration // default testReviewDelay
	maxConns    int32         // pool size; default pgxpool's
}

func newEnvWith(t testing.TB, o envOptions) *env {
	t.Helper()
	cfg := o.cfg
	if o.reviewDelay == 0 {
		o.reviewDelay = testReviewDelay
	}
	ctx := context.Background()
	var configure func(*pgxpool.Config)
	if o.maxConns > 0 {
		configure = func(pc *pgxpool.Config) { pc.MaxConns = o.maxConns }
	}
	pool := testsupport.Pool(t, configure)
	clock := fakeclock.New(time.Now())
	st := testsupport.Store(t, testsupport.StoreOptions{Pool: pool, Store: store.Options{Clock: clock, ReviewDelay: o.reviewDelay}})
	slug := "ns-" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	n := testsupport.Namespace(t, st, slug)
	r := testsupport.Repository(t, st, slug, "images", enum.FormatDocker, enum.VisibilityPrivate)
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	e := &env{t: t, ctx: ctx, pool: pool, st: st, clock: clock, ns: n.ID, repo: r.ID, delay: o.reviewDelay}
	e.g = e.newGC(cfg)
	return e
}

func (e *env) newGC(cfg Config) *GC {
	e.t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	g, err := New(e.st, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	g.inserter = &collectInserter{}
	return g
}

func testLogger() *slog.Logger {
	if testing.Verbose() && os.Getenv("GC_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// collectInserter stands in for the River client in direct tests: it
// records the partitions a sweep enqueues cleanups of, with the in-flight
// uniqueness of River (a partition stays "in flight" until drained).
type collectInserter struct {
	mu       sync.Mutex
	inFlight map[int]bool
	queue    []int
}

func (c *collectInserter) insertMany(_ context.Context, params []river.InsertManyParams) (int, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight == nil {
		c.inFlight = map[int]bool{}
	}
	ins, dup := 0, 0
	for _, p := range params {
		part := p.Args.(CleanupPartitionArgs).Partition
		if c.inFlight[part] {
			dup++
			continue
		}
		c.inFlight[part] = true
		c.queue = append(c.queue, part)
		ins++
	}
	return ins, dup, nil
}

func (c *collectInserter) drain() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	clear(c.inFlight)
	return q
}

// runGC runs one sweep and then every enqueued partition cleanup until
// it has nothing more to do, directly (no River), and returns the
// outcomes by kind.
func (e *env) runGC() map[store.GCCleanupOutcome]int {
	e.t.Helper()
	if _, err := e.g.Sweep(e.ctx); err != nil {
		e.t.Fatalf("sweep: %v", err)
	}
	out := map[store.GCCleanupOutcome]int{}
	for _, p := range e.g.inserter.(*collectInserter).drain() {
		for more := true; more; {
			var res []*store.GCCleanupResult
			var err error
			res, more, err = e.g.CleanupPartition(e.ctx, p)
			if err != nil {
				e.t.Fatalf("cleanup of partition %d: %v", p, err)
			}
			for _, r := range res {
				out[r.Outcome]++
			}
		}
	}
	return out
}

// drain returns the due candidates of the partitions the last sweeps of
// e.g enqueued cleanups of, for a test to clean up one by one.
func (e *env) drain() []store.GCCandidateKey {
	e.t.Helper()
	var keys []store.GCCandidateKey
	for _, p := range e.g.inserter.(*collectInserter).drain() {
		due, err := e.st.GCDueCandidatesIn(e.ctx, p, e.clock.Now(), 1<<20)
		if err != nil {
			e.t.Fatal(err)
		}
		keys = append(keys, due...)
	}
	return keys
}

// blobData returns deterministic content for a name.
func blobData(name string, size int) []byte {
	var buf bytes.Buffer
	for i := 0; buf.Len() < size; i++ {
		fmt.Fprintf(&buf, "%s/%d;", name, i)
	}
	return buf.Bytes()[:size]
}

// upload commits bytes as a blob (no attachment).
func (e *env) upload(data []byte) (*store.CommitResult, error) {
	return e.st.PutBlob(e.ctx, store.UploadRef{NamespaceID: e.ns, RepositoryID: e.repo},
		bytes.NewReader(data), store.Expected{SHA256: sha256.Sum256(data), Size: int64(len(data))})
}

// push uploads every blob and attaches them in one transaction (what a
// manifest push does through the format layer). Retryable store errors
// (blob gone under us, lock timeouts, deadlocks) are returned for the
// caller to retry.
func (e *env) push(blobs ...[]byte) ([]store.Attachment, error) {
	digests := make([][32]byte, len(blobs))
	for i, b := range blobs {
		if _, err := e.upload(b); err != nil {
			return nil, err
		}
		digests[i] = sha256.Sum256(b)
	}
	var atts []store.Attachment
	err := e.st.WithTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		atts, err = e.st.Attach(e.ctx, tx, e.ns, digests)
		return err
	})
	return atts, err
}

func (e *env) mustPush(blobs ...[]byte) []store.Attachment {
	e.t.Helper()
	atts, err := e.push(blobs...)
	if err != nil {
		e.t.Fatalf("push: %v", err)
	}
	return atts
}

func (e *env) detach(atts ...store.Attachment) ([][32]byte, error) {
	var zero [][32]byte
	err := e.st.WithTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		zero, err = e.st.Detach(e.ctx, tx, e.ns, atts)
		return err
	})
	return zero, err
}

func (e *env) mustDetach(atts ...store.Attachment) [][32]byte {
	e.t.Helper()
	zero, err := e.detach(atts...)
	if err != nil {
		e.t.Fatalf("detach: %v", err)
	}
	return zero
}

func (e *env) key(data []byte) store.GCCandidateKey {
	return store.GCCandidateKey{NamespaceID: e.ns, SHA256: sha256.Sum256(data)}
}

// readBlob reads a blob back; ok is false when its row or object is gone.
func (e *env) readBlob(data []byte) ([]byte, bool) {
	e.t.Helper()
	r, _, err := e.st.OpenBlob(e.ctx, e.ns, sha256.Sum256(data), 0, -1)
	if store.HasCode(err, store.CodeBlobUnknown) {
		return nil, false
	}
	if err != nil {
		e.t.Fatalf("open blob: %v", err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		e.t.Fatalf("read blob: %v", err)
	}
	return b, true
}

func (e *env) assertIntact(data []byte) {
	e.t.Helper()
	got, ok := e.readBlob(data)
	if !ok || !bytes.Equal(got, data) {
		e.t.Fatalf("blob %s: readable=%v, bytes equal=%v", store.FormatSHA256(sha256.Sum256(data)), ok, bytes.Equal(got, data))
	}
}

// assertGone checks that the blob row and its object are both gone.
func (e *env) assertGone(data []byte) {
	e.t.Helper()
	sum := sha256.Sum256(data)
	if _, err := e.st.StatBlob(e.ctx, e.ns, sum); !store.HasCode(err, store.CodeBlobUnknown) {
		e.t.Fatalf("blob row %s still there (err %v)", store.FormatSHA256(sum), err)
	}
	ok, err := e.st.Objects().Exists(e.ctx, objstore.BlobKey(e.ns, sum))
	if err != nil || ok {
		e.t.Fatalf("object of %s: exists=%v err=%v", store.FormatSHA256(sum), ok, err)
	}
}

func (e *env) objectExists(data []byte) bool {
	e.t.Helper()
	ok, err := e.st.Objects().Exists(e.ctx, objstore.BlobKey(e.ns, sha256.Sum256(data)))
	if err != nil {
		e.t.Fatal(err)
	}
	return ok
}

func (e *env) candidate(data []byte) *store.GCCandidate {
	e.t.Helper()
	c, err := e.st.GCCandidate(e.ctx, e.key(data))
	if store.HasCode(err, store.CodeGCCandidateUnknown) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// pastDelayAndGrace moves the clock past the review delay and the grace
// window of everything created so far.
func (e *env) pastDelayAndGrace() {
	e.clock.Advance(testReviewDelay + store.GCGracePeriod + time.Minute)
}

// riverClient starts a real River client on the test database with the
// GC's workers and queues (no periodic jobs: tests insert gc:sweep when
// they want one; the periodic jobs are checked separately).
func (e *env) riverClient(g *GC) *river.Client[pgx.Tx] {
	e.t.Helper()
	return e.riverClientWith(g, &river.Config{FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond})
}

// riverClientWith starts a River client running g's queues and workers
// with cfg's fetch settings (zero: River's defaults, as serve runs it).
func (e *env) riverClientWith(g *GC, cfg *river.Config) *river.Client[pgx.Tx] {
	e.t.Helper()
	workers := river.NewWorkers()
	g.Register(workers)
	g.inserter = nil // use the client from the job context
	c, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{
		Queues:            g.Queues(),
		Workers:           workers,
		Logger:            testLogger(),
		FetchCooldown:     cfg.FetchCooldown,
		FetchPollInterval: cfg.FetchPollInterval,
		TestOnly:          true,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := c.Start(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

// waitJobs waits until no GC job is available, running, pending or
// retryable (a short poll on River's job list; not a test of time).
func (e *env) waitJobs(c *river.Client[pgx.Tx]) {
	e.t.Helper()
	deadline := time.Now().Add(cmp.Or(e.waitTimeout, 2*time.Minute))
	for {
		res, err := c.JobList(e.ctx, river.NewJobListParams().
			Kinds(KindSweep, KindCleanup, KindCleanupPartition, KindReconcileScan, KindStagingSweep).
			States(rivertype.JobStateAvailable, rivertype.JobStateRunning, rivertype.JobStatePending, rivertype.JobStateRetryable).
			First(1))
		if err != nil {
			e.t.Fatal(err)
		}
		if len(res.Jobs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("GC jobs still in flight: %+v", res.Jobs[0])
		}
		time.Sleep(cmp.Or(e.waitPoll, 10*time.Millisecond))
	}
}

// jobsOf lists the jobs of one kind in the given states.
func (e *env) jobsOf(c *river.Client[pgx.Tx], kind string, states ...rivertype.JobState) []*rivertype.JobRow {
	e.t.Helper()
	res, err := c.JobList(e.ctx, river.NewJobListParams().Kinds(kind).States(states...).First(10000))
	if err != nil {
		e.t.Fatal(err)
	}
	return res.Jobs
}
