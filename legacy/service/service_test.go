package service_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/legacy/inventory"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/legacy/mapping"
	"github.com/artifact-registry/artifact-registry/legacy/proxy"
	"github.com/artifact-registry/artifact-registry/legacy/service"
	"github.com/artifact-registry/artifact-registry/protocol/oci"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/legacy"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// fixture: one legacy registry tree, shared (read-only) by the tests;
// each test copies it and takes a fresh database.
var (
	fixtureDir  string
	fixturePath = []string{"team/a", "team/b", "team/c"}
)

func legacyTree(t *testing.T) string {
	t.Helper()
	if fixtureDir == "" {
		dir := filepath.Join(os.TempDir(), "legacy-service-fixture-"+time.Now().Format("150405.000000"))
		host, stop := legacytest.StartRegistryVersion(t, legacytest.V28, dir)
		for i, p := range fixturePath {
			legacytest.PushImage(t, host, p, "v1", legacytest.Image{Seed: uint64(i + 1)})
			legacytest.PushImage(t, host, p, "v2", legacytest.Image{Seed: uint64(i + 10), OCI: true})
		}
		stop()
		fixtureDir = dir
	}
	dst := filepath.Join(t.TempDir(), "legacy")
	legacytest.CopyTree(t, fixtureDir, dst)
	return dst
}

type env struct {
	st      *store.Store
	src     *blob.Bucket
	rules   *mapping.Rules
	metrics *service.Metrics
	reg     *prometheus.Registry
	dir     string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{dir: legacyTree(t)}
	var err error
	e.src, err = fileblob.OpenBucket(e.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.src.Close() })
	e.st = testsupport.Store(t, testsupport.StoreOptions{})
	testsupport.Namespace(t, e.st, "acme")
	e.rules, err = mapping.Parse([]byte("prefixes:\n  - prefix: team/\n    namespace: acme\n    repository: legacy\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inventory.Run(ctx, e.st, e.src, e.rules); err != nil {
		t.Fatal(err)
	}
	e.metrics = service.NewMetrics(e.st)
	e.reg = prometheus.NewRegistry()
	e.reg.MustRegister(e.metrics.Collectors()...)
	return e
}

func (e *env) service(t *testing.T, cfg service.Config) *service.Service {
	t.Helper()
	cfg.Logger = testsupport.Discard()
	s, err := service.New(e.st, e.src, e.metrics, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func (e *env) controls(t *testing.T, u legacy.ControlsUpdate) {
	t.Helper()
	if _, err := legacy.New(e.st).SetControls(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

func (e *env) row(t *testing.T, path string) *legacy.Repository {
	t.Helper()
	r, err := legacy.New(e.st).RepositoryByPath(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// sample reads a metric sample by name and label values.
func (e *env) sample(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// TestServiceRiver runs the service the way serve does: River with the
// periodic tick and the slot jobs, until the inventory is migrated, in
// priority order.
func TestServiceRiver(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if _, err := legacy.New(e.st).SetPriority(ctx, e.row(t, "team/c").ID, 10); err != nil {
		t.Fatal(err)
	}
	e.controls(t, legacy.ControlsUpdate{Concurrency: ptr(1), Cadence: ptr(50 * time.Millisecond)})
	svc := e.service(t, service.Config{TickInterval: 50 * time.Millisecond})
	workers := river.NewWorkers()
	periodic := svc.Register(workers)
	client, err := river.NewClient(riverpgxv5.New(e.st.Pool()), &river.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Queues: svc.Queues(), Workers: workers,
		PeriodicJobs: periodic, TestOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Stop(context.Background()) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := legacy.New(e.st).MigrationProgress(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.ByStatus[enum.LegacyMigrated] == len(fixturePath) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not migrated in time: %v", p.ByStatus)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c, a := e.row(t, "team/c"), e.row(t, "team/a")
	if !c.ImportFinishedAt.Before(*a.ImportFinishedAt) {
		t.Fatalf("priority 10 finished at %v, after priority 0 at %v", c.ImportFinishedAt, a.ImportFinishedAt)
	}
	if c.Attempts != 2 { // pass 1 and pass 2
		t.Fatalf("attempts %d", c.Attempts)
	}
	if v, _ := e.sample(t, service.MetricRepositories, map[string]string{"status": "migrated"}); v != 3 {
		t.Fatalf("repositories{status=migrated} = %v", v)
	}
	if v, _ := e.sample(t, service.MetricPassDuration, map[string]string{"pass": "final"}); v != 3 {
		t.Fatalf("final pass durations observed: %v", v)
	}
	if v, _ := e.sample(t, service.MetricBytesImported, nil); v <= 0 {
		t.Fatalf("bytes imported: %v", v)
	}
}

// TestServicePause: paused, nothing is claimed; resumed, work goes on.
func TestServicePause(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	svc := e.service(t, service.Config{})
	paused := true
	if _, err := legacy.New(e.st).SetControls(ctx, legacy.ControlsUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	found, err := svc.Step(ctx)
	if err != nil || found {
		t.Fatalf("paused step: found %v err %v", found, err)
	}
	if p, _ := legacy.New(e.st).MigrationProgress(ctx); p.ByStatus[enum.LegacyPending] != 3 {
		t.Fatalf("paused service claimed work: %v", p.ByStatus)
	}
	paused = false
	if _, err := legacy.New(e.st).SetControls(ctx, legacy.ControlsUpdate{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	if found, err := svc.Step(ctx); err != nil || !found {
		t.Fatalf("resumed step: found %v err %v", found, err)
	}
	if p, _ := legacy.New(e.st).MigrationProgress(ctx); p.ByStatus[enum.LegacyMigrated] != 1 {
		t.Fatalf("after one step: %v", p.ByStatus)
	}
}

// TestServiceTimeLimit: a final pass over the limit changes nothing here,
// and the repository is skipped and stays on the legacy registry.
func TestServiceTimeLimit(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	// The time limit is the controls' (the smallest the table holds).
	e.controls(t, legacy.ControlsUpdate{FinalTimeLimit: ptr(time.Microsecond)})
	svc := e.service(t, service.Config{})
	for {
		found, err := svc.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			break
		}
	}
	p, err := legacy.New(e.st).MigrationProgress(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.ByStatus[enum.LegacySkipped] != 3 || p.OverTimeLimit != 3 || p.ByStatus[enum.LegacyMigrated] != 0 {
		t.Fatalf("progress %+v", p)
	}
	r := e.row(t, "team/a")
	if r.TimeLimitExceededAt == nil || r.LastError == nil || !strings.Contains(*r.LastError, "time limit") {
		t.Fatalf("row %+v", r)
	}
	route, err := proxy.New(e.st, e.rules, func(string) bool { return false }).Route(ctx, "team/a", false)
	if err != nil || route.Decision != oci.LegacyForward {
		t.Fatalf("route after the time limit: %+v %v", route, err)
	}
	// No tag landed here.
	var tags int
	if err := e.st.Pool().QueryRow(ctx, `SELECT count(*) FROM container_tags`).Scan(&tags); err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	if tags != 0 {
		t.Fatalf("%d tags imported by passes over the time limit", tags)
	}
	if v, _ := e.sample(t, service.MetricPassOutcomes, map[string]string{"pass": "final", "outcome": "over_time_limit"}); v != 3 {
		t.Fatalf("over_time_limit outcomes: %v", v)
	}
	// Retry puts it back; with a sane limit, set at run time and read by
	// the same service at its next step, it migrates.
	if _, err := legacy.New(e.st).RetryRepository(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	e.controls(t, legacy.ControlsUpdate{FinalTimeLimit: ptr(time.Minute)})
	if found, err := svc.Step(ctx); err != nil || !found {
		t.Fatalf("retry: %v %v", found, err)
	}
	if got := e.row(t, "team/a").Status; got != enum.LegacyMigrated {
		t.Fatalf("after retry: %s", got)
	}
}

// TestServiceFailure: a repository the importer cannot import is failed
// with the error and attempts recorded; the others go on.
func TestServiceFailure(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	// team/b loses its manifest revision links: none of its tags can be
	// imported, so the importer fails the repository.
	if err := os.RemoveAll(filepath.Join(e.dir, "docker/registry/v2/repositories/team/b/_manifests/revisions")); err != nil {
		t.Fatal(err)
	}
	svc := e.service(t, service.Config{})
	for {
		found, err := svc.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			break
		}
	}
	b := e.row(t, "team/b")
	if b.Status != enum.LegacyFailed || b.Attempts != 1 || b.LastError == nil || *b.LastError == "" {
		t.Fatalf("team/b: %s attempts %d err %v", b.Status, b.Attempts, b.LastError)
	}
	if a := e.row(t, "team/a"); a.Status != enum.LegacyMigrated {
		t.Fatalf("team/a: %s", a.Status)
	}
	if v, _ := e.sample(t, service.MetricPassOutcomes, map[string]string{"pass": "pre", "outcome": "failed"}); v != 1 {
		t.Fatalf("pre failed outcomes: %v", v)
	}
}

// TestServiceControlsAtRunTime: the service takes its concurrency from the
// controls row and picks up a change at its next tick, with no restart:
// paused nothing runs; resumed with concurrency 2, two slots migrate one
// repository each (the cadence of an hour keeps them from a second one);
// raised to 3, the next tick starts a third slot that migrates the last.
func TestServiceControlsAtRunTime(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.controls(t, legacy.ControlsUpdate{Paused: ptr(true), Concurrency: ptr(1), Cadence: ptr(time.Hour)})
	svc := e.service(t, service.Config{MaxConcurrency: 3, TickInterval: 20 * time.Millisecond})
	if got := svc.Queues()[service.Queue].MaxWorkers; got != 4 {
		t.Fatalf("queue MaxWorkers %d, want max concurrency + the tick", got)
	}
	workers := river.NewWorkers()
	periodic := svc.Register(workers)
	client, err := river.NewClient(riverpgxv5.New(e.st.Pool()), &river.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Queues: svc.Queues(), Workers: workers,
		PeriodicJobs: periodic, TestOnly: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.StopAndCancel(context.Background()) }()

	migrated := func() int {
		p, err := legacy.New(e.st).MigrationProgress(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p.ByStatus[enum.LegacyMigrated]
	}
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for migrated() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d migrated, want %d", migrated(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	time.Sleep(200 * time.Millisecond) // ten ticks
	if n := migrated(); n != 0 {
		t.Fatalf("paused: %d migrated", n)
	}
	e.controls(t, legacy.ControlsUpdate{Paused: ptr(false), Concurrency: ptr(2)})
	waitFor(2)
	time.Sleep(200 * time.Millisecond) // ten more ticks: no third slot
	if n := migrated(); n != 2 {
		t.Fatalf("concurrency 2 with an hour's cadence migrated %d", n)
	}
	var slots []int
	if err := e.st.Pool().QueryRow(ctx, `SELECT array_agg(DISTINCT (args->>'slot')::int ORDER BY (args->>'slot')::int)
		FROM river_job WHERE kind = $1`, service.KindMigrate).Scan(&slots); err != nil {
		t.Fatal(err)
	}
	if len(slots) != 2 || slots[0] != 0 || slots[1] != 1 {
		t.Fatalf("slots %v, want [0 1]", slots)
	}
	e.controls(t, legacy.ControlsUpdate{Concurrency: ptr(3)})
	waitFor(3)
}

// TestServiceConfig: bad bounds are refused.
func TestServiceConfig(t *testing.T) {
	for _, cfg := range []service.Config{{MaxConcurrency: 65}, {MaxConcurrency: -1}, {TickInterval: -time.Second}} {
		if _, err := service.New(nil, nil, service.NewMetrics(nil), cfg); err == nil {
			t.Fatalf("%+v accepted", cfg)
		}
	}
}
