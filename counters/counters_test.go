package counters

import (
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type env struct {
	t    *testing.T
	ctx  context.Context
	pool *pgxpool.Pool
	st   *store.Store
	npm  *npmstore.Store
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pool := testdb.New(t)
	st := testsupport.Store(t, testsupport.StoreOptions{Pool: pool, Mem: true})
	return &env{t: t, ctx: context.Background(), pool: pool, st: st, npm: npmstore.New(st)}
}

func quietLogger() *slog.Logger { return testsupport.Discard() }

// npmRepo creates a namespace with one hosted npm repository.
func (e *env) npmRepo(slug string) *npmstore.Repository {
	e.t.Helper()
	if _, err := e.st.CreateNamespace(e.ctx, slug); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.st.CreateRepository(e.ctx, store.NewRepository{Namespace: slug, Name: "js",
		Format: enum.FormatNpm, Kind: enum.KindHosted, Visibility: enum.VisibilityPrivate}); err != nil {
		e.t.Fatal(err)
	}
	repo, err := e.npm.ResolveRepository(e.ctx, slug, "js")
	if err != nil {
		e.t.Fatal(err)
	}
	return repo
}

// publish publishes name@version with a tarball of size bytes.
func (e *env) publish(repo *npmstore.Repository, name, version string, size int) *npmstore.PublishResult {
	e.t.Helper()
	tgz := []byte(strings.Repeat(name+"@"+version+";", size)[:size])
	s512, s1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	pj, _ := json.Marshal(map[string]any{
		"name": name, "version": version, "_id": name + "@" + version, "_hasShrinkwrap": false,
		"_npmUser": map[string]string{"name": "admin"},
		"dist":     map[string]any{"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "shasum": hex.EncodeToString(s1[:])},
	})
	res, err := e.npm.Publish(e.ctx, repo, npmstore.PublishRequest{Name: name, Version: version, PackageJSON: pj,
		FileName: name + "-" + version + ".tgz", Tarball: tgz, SHA1: s1, Tags: []string{"latest"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

func (e *env) scanInt(sql string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (e *env) scanTime(sql string, args ...any) *time.Time {
	e.t.Helper()
	var at *time.Time
	if err := e.pool.QueryRow(e.ctx, sql, args...).Scan(&at); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return at
}

func (e *env) pending() int64 { return e.scanInt(`SELECT count(*) FROM counter_deltas`) }

// repoCounters reads a repository's folded counters.
func (e *env) repoCounters(repo *npmstore.Repository) (artifacts, downloads, size int64) {
	e.t.Helper()
	err := e.pool.QueryRow(e.ctx, `SELECT artifacts_count, downloads_count, size_bytes FROM repositories
		WHERE namespace_id = $1 AND id = $2`, repo.NamespaceID, repo.RepositoryID).Scan(&artifacts, &downloads, &size)
	if err != nil {
		e.t.Fatal(err)
	}
	return
}

// Publishes write deltas for six counters over four tables; a fold merges
// every one of them (sums), deletes the deltas, and a second fold changes
// nothing.
func TestFoldPublishes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := e.npmRepo("fold")
	sizes := map[string]int{"a@1.0.0": 100, "a@1.0.1": 250, "a@2.0.0": 400, "b@0.1.0": 70, "b@0.2.0": 30}
	var total int64
	var aVersion uuid.UUID
	pkgs := map[string]uuid.UUID{}
	for _, nv := range []string{"a@1.0.0", "a@1.0.1", "a@2.0.0", "b@0.1.0", "b@0.2.0"} {
		name, version, _ := strings.Cut(nv, "@")
		res := e.publish(repo, name, version, sizes[nv])
		pkgs[name] = res.Package.PackageID
		if nv == "a@1.0.1" {
			aVersion = res.VersionID
		}
		total += int64(sizes[nv])
	}
	if e.pending() == 0 {
		t.Fatal("publishes wrote no deltas")
	}
	if a, _, s := e.repoCounters(repo); a != 0 || s != 0 {
		t.Fatalf("counters moved before the fold: artifacts %d size %d", a, s)
	}

	f := New(e.st, Config{Logger: quietLogger()})
	res, err := f.Fold(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fold: %+v", res)
	if res.Namespaces != 1 || res.Deltas == 0 || e.pending() != 0 {
		t.Fatalf("fold %+v, %d deltas left", res, e.pending())
	}
	check := func() {
		t.Helper()
		if a, d, s := e.repoCounters(repo); a != 5 || d != 0 || s != total {
			t.Fatalf("repository: artifacts %d downloads %d size %d, want 5 0 %d", a, d, s, total)
		}
		if n := e.scanInt(`SELECT components_count FROM namespace_statistics WHERE namespace_id = $1`, repo.NamespaceID); n != 5 {
			t.Fatalf("components_count %d, want 5", n)
		}
		for name, want := range map[string]int64{"a": 3, "b": 2} {
			var versions, tags int64
			if err := e.pool.QueryRow(e.ctx, `SELECT versions_count, tags_count FROM npm_packages WHERE namespace_id = $1 AND id = $2`,
				repo.NamespaceID, pkgs[name]).Scan(&versions, &tags); err != nil {
				t.Fatal(err)
			}
			if versions != want || tags != 1 {
				t.Fatalf("package %s: versions %d tags %d, want %d 1", name, versions, tags, want)
			}
		}
		if n := e.scanInt(`SELECT size_bytes FROM npm_versions WHERE namespace_id = $1 AND id = $2`, repo.NamespaceID, aVersion); n != 250 {
			t.Fatalf("a@1.0.1 size_bytes %d", n)
		}
	}
	check()

	// Idempotent: nothing pending, nothing changes.
	res, err = f.Fold(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deltas != 0 || res.Namespaces != 0 {
		t.Fatalf("second fold %+v", res)
	}
	check()

	// A later publish adds on top of the folded values.
	e.publish(repo, "a", "3.0.0", 10)
	total += 10
	if _, err := f.Fold(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, s := e.repoCounters(repo); s != total {
		t.Fatalf("size after another publish %d, want %d", s, total)
	}
}

// Timestamps keep the latest value, older deltas never move them back, and
// deltas whose target row does not exist are dropped with their batch.
func TestFoldTimestampsAndMissingTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := e.npmRepo("ts")
	res := e.publish(repo, "lib", "1.0.0", 50)
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	dl := func(pkg, ver uuid.UUID, at time.Time) npmstore.Download {
		return npmstore.Download{NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID, PackageID: pkg, VersionID: ver, At: at}
	}
	ghost := uuid.Must(uuid.NewV7())
	if err := e.npm.RecordDownloads(e.ctx, []npmstore.Download{
		dl(res.Package.PackageID, res.VersionID, base.Add(time.Hour)),
		dl(res.Package.PackageID, res.VersionID, base),
		dl(ghost, ghost, base.Add(48*time.Hour)), // no such package or version
	}); err != nil {
		t.Fatal(err)
	}
	f := New(e.st, Config{Logger: quietLogger()})
	if _, err := f.Fold(e.ctx); err != nil {
		t.Fatal(err)
	}
	at := e.scanTime(`SELECT last_downloaded_at FROM npm_packages WHERE namespace_id = $1 AND id = $2`, repo.NamespaceID, res.Package.PackageID)
	if at == nil || !at.Equal(base.Add(time.Hour)) {
		t.Fatalf("package last_downloaded_at %v, want %v", at, base.Add(time.Hour))
	}
	if _, d, _ := e.repoCounters(repo); d != 3 {
		t.Fatalf("downloads_count %d, want 3", d)
	}
	if e.pending() != 0 {
		t.Fatalf("%d deltas left (the missing targets' must be dropped)", e.pending())
	}
	// An older download folded later does not move the time back.
	if err := e.npm.RecordDownloads(e.ctx, []npmstore.Download{dl(res.Package.PackageID, res.VersionID, base.Add(-time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fold(e.ctx); err != nil {
		t.Fatal(err)
	}
	at = e.scanTime(`SELECT last_downloaded_at FROM npm_versions WHERE namespace_id = $1 AND id = $2`, repo.NamespaceID, res.VersionID)
	if at == nil || !at.Equal(base.Add(time.Hour)) {
		t.Fatalf("version last_downloaded_at %v, want %v", at, base.Add(time.Hour))
	}
}

// Small batches: a fold is several transactions, each deleting what it
// merged; MaxBatches bounds one namespace per run and the next run
// continues where it stopped.
func TestFoldBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := e.npmRepo("batches")
	res := e.publish(repo, "lib", "1.0.0", 50)
	downloads := make([]npmstore.Download, 40)
	for i := range downloads {
		downloads[i] = npmstore.Download{NamespaceID: repo.NamespaceID, RepositoryID: repo.RepositoryID,
			PackageID: res.Package.PackageID, VersionID: res.VersionID, At: time.Now()}
	}
	if err := e.npm.RecordDownloads(e.ctx, downloads); err != nil { // 120 deltas
		t.Fatal(err)
	}
	before := e.pending()
	f := New(e.st, Config{Batch: 10, MaxBatches: 3, Logger: quietLogger()})
	r, err := f.Fold(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Batches != 3 || r.Deltas != 30 || e.pending() != before-30 {
		t.Fatalf("bounded run %+v, pending %d of %d", r, e.pending(), before)
	}
	for e.pending() > 0 {
		if _, err := f.Fold(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, d, _ := e.repoCounters(repo); d != 40 {
		t.Fatalf("downloads_count %d, want 40", d)
	}
}

// Concurrent writers record downloads into two namespaces while several
// folders run at once (as on several replicas); at the end every
// download is counted exactly once and the latest time won.
func TestFoldConcurrentWriters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repos := []*npmstore.Repository{e.npmRepo("conc-a"), e.npmRepo("conc-b")}
	type target struct {
		repo *npmstore.Repository
		pkg  *npmstore.PublishResult
	}
	var targets []target
	for _, r := range repos {
		for i := range 3 {
			targets = append(targets, target{r, e.publish(r, fmt.Sprintf("p%d", i), "1.0.0", 20)})
		}
	}
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	const writers, rounds = 6, 40
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		count    = map[uuid.UUID]int64{}     // repository → downloads
		latest   = map[uuid.UUID]time.Time{} // package → latest download
		done     atomic.Bool
		foldErrs = make(chan error, 16)
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range rounds {
				var batch []npmstore.Download
				for range 1 + rng.IntN(5) {
					tg := targets[rng.IntN(len(targets))]
					at := base.Add(time.Duration(rng.IntN(100000)) * time.Second)
					batch = append(batch, npmstore.Download{NamespaceID: tg.repo.NamespaceID, RepositoryID: tg.repo.RepositoryID,
						PackageID: tg.pkg.Package.PackageID, VersionID: tg.pkg.VersionID, At: at})
				}
				if err := e.npm.RecordDownloads(e.ctx, batch); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, d := range batch {
					count[d.RepositoryID]++
					if d.At.After(latest[d.PackageID]) {
						latest[d.PackageID] = d.At
					}
				}
				mu.Unlock()
			}
		}()
	}
	var folders sync.WaitGroup
	var folded atomic.Int64
	for range 3 {
		folders.Add(1)
		go func() {
			defer folders.Done()
			f := New(e.st, Config{Batch: 7, Logger: quietLogger()})
			for !done.Load() {
				r, err := f.Fold(e.ctx)
				if err != nil && !store.HasCode(err, store.CodeRetryable) {
					foldErrs <- err
					return
				}
				folded.Add(int64(r.Deltas))
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	folders.Wait()
	close(foldErrs)
	for err := range foldErrs {
		t.Fatal(err)
	}
	if folded.Load() == 0 {
		t.Fatal("no fold overlapped the writers")
	}
	t.Logf("%d deltas folded while writing, %d after", folded.Load(), e.pending())
	if _, err := New(e.st, Config{Logger: quietLogger()}).Fold(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.pending() != 0 {
		t.Fatalf("%d deltas left", e.pending())
	}
	for _, r := range repos {
		if _, d, _ := e.repoCounters(r); d != count[r.RepositoryID] {
			t.Fatalf("repository %s downloads_count %d, want %d", r.RepositoryID, d, count[r.RepositoryID])
		}
	}
	for _, tg := range targets {
		at := e.scanTime(`SELECT last_downloaded_at FROM npm_packages WHERE namespace_id = $1 AND id = $2`,
			tg.repo.NamespaceID, tg.pkg.Package.PackageID)
		want, ok := latest[tg.pkg.Package.PackageID]
		if ok != (at != nil) || (at != nil && !at.Equal(want)) {
			t.Fatalf("package %s last_downloaded_at %v, want %v", tg.pkg.Package.PackageID, at, want)
		}
	}
}

// A target row held by a foreground transaction makes that namespace's
// batch give up at the lock timeout and roll back (its deltas stay, none
// is applied); the other namespace folds in the same run; the next run,
// after the lock is gone, applies the deferred deltas exactly once.
func TestFoldDefersLockedNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	held, free := e.npmRepo("held"), e.npmRepo("free")
	e.publish(held, "x", "1.0.0", 11)
	e.publish(free, "y", "1.0.0", 13)

	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(e.ctx) }()
	if _, err := tx.Exec(e.ctx, `SELECT 1 FROM repositories WHERE namespace_id = $1 AND id = $2 FOR UPDATE`,
		held.NamespaceID, held.RepositoryID); err != nil {
		t.Fatal(err)
	}
	heldBefore := e.scanInt(`SELECT count(*) FROM counter_deltas WHERE namespace_id = $1`, held.NamespaceID)

	f := New(e.st, Config{Logger: quietLogger()})
	res, err := f.Fold(e.ctx) // waits 5 s (the fold's lock timeout) on the held row
	if err != nil {
		t.Fatal(err)
	}
	if res.Namespaces != 1 {
		t.Fatalf("fold with one namespace held: %+v", res)
	}
	if n := e.scanInt(`SELECT count(*) FROM counter_deltas WHERE namespace_id = $1`, held.NamespaceID); n != heldBefore {
		t.Fatalf("held namespace: %d deltas left of %d (the batch must roll back whole)", n, heldBefore)
	}
	if _, _, s := e.repoCounters(free); s != 13 {
		t.Fatalf("free namespace size %d", s)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fold(e.ctx); err != nil {
		t.Fatal(err)
	}
	if a, _, s := e.repoCounters(held); a != 1 || s != 11 {
		t.Fatalf("held namespace after release: artifacts %d size %d", a, s)
	}
	if e.pending() != 0 {
		t.Fatalf("%d deltas left", e.pending())
	}
}

// Through a real River client: the registered worker runs counters:fold
// (the periodic job with RunOnStart, as serve registers it) and the
// deltas are folded.
func TestFoldJobThroughRiver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	repo := e.npmRepo("river")
	e.publish(repo, "lib", "1.0.0", 42)

	f := New(e.st, Config{Interval: time.Hour, Logger: quietLogger()})
	workers := river.NewWorkers()
	periodic := f.Register(workers)
	c, err := river.NewClient(riverpgxv5.New(e.pool), &river.Config{
		Queues:            f.Queues(),
		Workers:           workers,
		PeriodicJobs:      periodic,
		Logger:            quietLogger(),
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		TestOnly:          true,
	})
	if err != nil {
		t.Fatal(err)
	}
	events, cancel := c.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	if err := c.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	select {
	case ev := <-events:
		if ev.Kind != river.EventKindJobCompleted || ev.Job.Kind != KindFold {
			t.Fatalf("job %s: %s %v", ev.Job.Kind, ev.Kind, ev.Job.Errors)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("counters:fold did not run")
	}
	if _, _, s := e.repoCounters(repo); s != 42 {
		t.Fatalf("size_bytes %d after the job", s)
	}
	if e.pending() != 0 {
		t.Fatalf("%d deltas left", e.pending())
	}
	// Uniqueness covers in-flight states only: another insert runs again.
	if _, err := c.Insert(e.ctx, FoldArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		if ev.Job.State != rivertype.JobStateCompleted {
			t.Fatalf("second fold: %s", ev.Job.State)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("second counters:fold did not run")
	}
}
