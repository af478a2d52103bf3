// Package cluster runs several real serve processes as one registry, for
// tests: one private PostgreSQL cluster, one S3 bucket (the versitygw test
// server of internal/ocitools), and a round-robin reverse proxy in front,
// whose URL is the registry's public URL.
//
//	c := cluster.Start(t, cluster.Options{Instances: 3})
//	c.URL                      // the proxy; clients use it
//	c.Instance(1).URL          // one instance directly
//	c.AdminToken               // the shared admin token
//	c.Kill(1); c.Start(1)      // SIGKILL an instance, start it again
//	c.StopPostgres(); c.StartPostgres()
//	c.BreakStorage(); c.HealStorage()
//
// Start builds the serve binary once per test binary (call Main from
// TestMain so it is removed afterwards), starts PostgreSQL under
// t.TempDir() (pgcluster; fsync off unless Options.DurablePostgres) from
// a copy of the test cluster cache that already holds the migrated schema
// (testdb.SeedCluster), runs `artifact-registry migrate up` once (it finds
// nothing to do) and starts the instances with
// ARTIFACT_REGISTRY_NO_MIGRATE, the same admin token, root key, bucket and
// public URL, as docs/scaling.md tells operators to. Everything stops when
// the test ends; on failure the tail of every instance's log is logged.
//
// The proxy streams (no buffering) and keeps the client's Host header. By
// default it health-checks every instance's /-/ready every 200 ms and
// sends requests only to ready ones, as a real load balancer does, so a
// killed instance costs the requests in flight on it and those sent in the
// next 200 ms; with Options.DumbLB it sends to every instance in turn, and
// a dead one answers 502. With no instance up it answers 503 with
// Retry-After.
//
// The instances reach S3 through a TCP proxy: BreakStorage resets every
// connection to it until HealStorage, HangStorage accepts connections and
// never answers.
//
// The methods that change the cluster (Kill, Start, Stop, StopPostgres,
// ...) return errors instead of failing the test, so they may be called
// from any goroutine; each is safe for concurrent use.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
	"github.com/artifact-registry/artifact-registry/internal/servebuild"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// Options configures Start.
type Options struct {
	// Instances is the number of serve processes; 0 means 3.
	Instances int
	// ExtraEnv is appended to every instance's environment (e.g.
	// ARTIFACT_REGISTRY_GC_PHASE=2); it overrides what Start sets.
	ExtraEnv []string
	// DumbLB makes the proxy send requests to every instance in turn,
	// ready or not.
	DumbLB bool
	// DurablePostgres keeps fsync on, for tests that crash PostgreSQL and
	// count on what it acknowledged.
	DurablePostgres bool
	// LogDir receives instance-<i>.log for each instance; empty means a
	// directory under t.TempDir() (removed after the test).
	LogDir string
}

// Cluster is a running set of instances; see the package documentation.
type Cluster struct {
	URL         string // the proxy, also every instance's public URL
	AdminToken  string
	RootKeyURL  string
	DatabaseURL string // the shared database, for checks in SQL
	StorageURL  string // the bucket as the instances open it (through the fault proxy)
	S3          *ocitools.S3Server
	Bucket      string

	instances []*Instance
	lb        *balancer
	storage   *faultProxy
	logDir    string

	pgMu   sync.Mutex
	pg     *pgcluster.Cluster
	pgOpts pgcluster.Options
}

const bucket = "cluster"

// Start starts a cluster for t and stops it when t ends. It fails t if any
// part does not come up.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	if o.Instances == 0 {
		o.Instances = 3
	}
	bin, err := servebuild.Shared()
	if err != nil {
		t.Fatal(err)
	}
	s3 := ocitools.StartS3(t, bucket)
	dir := t.TempDir()
	c := &Cluster{S3: s3, Bucket: bucket, logDir: o.LogDir,
		AdminToken: randomToken(), RootKeyURL: rootKeyURL()}
	if c.logDir == "" {
		c.logDir = filepath.Join(dir, "logs")
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c.startDatabase(t, ctx, filepath.Join(dir, "pg"), o)
	c.startStorageProxy(t)
	c.lb, err = newBalancer(o.DumbLB)
	if err != nil {
		t.Fatal(err)
	}
	c.URL = c.lb.url()
	env := c.instanceEnv(dir, o.ExtraEnv)
	if err := c.migrate(ctx, bin, env); err != nil {
		t.Fatal(err)
	}
	c.startInstances(t, ctx, bin, dir, env, o.Instances)
	return c
}

func (c *Cluster) startDatabase(t testing.TB, ctx context.Context, dir string, o Options) {
	t.Helper()
	c.pgOpts = pgcluster.Options{Dir: dir, Fast: !o.DurablePostgres}
	// The migrated schema comes from the test cluster cache: the
	// migrations from empty have tests of their own.
	template, err := testdb.SeedCluster(dir)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := startPostgres(ctx, c.pgOpts, o.Instances)
	if err != nil {
		t.Fatal(err)
	}
	c.pg = pg
	c.DatabaseURL = pg.URL(pgcluster.Database)
	t.Cleanup(func() {
		c.pgMu.Lock()
		defer c.pgMu.Unlock()
		if err := c.pg.Stop(context.Background()); err != nil {
			t.Errorf("stop postgresql: %v", err)
			_ = pgcluster.Kill(dir)
		}
	})
	if err := testdb.AdoptTemplate(ctx, pg, template); err != nil {
		t.Fatal(err)
	}
}

func (c *Cluster) startStorageProxy(t testing.TB) {
	t.Helper()
	var err error
	c.storage, err = newFaultProxy(strings.TrimPrefix(c.S3.Endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.storage.close)
	c.StorageURL = "s3://" + c.Bucket + "?endpoint=http://" + c.storage.addr() + "&region=us-east-1&use_path_style=true"
}

func (c *Cluster) startInstances(t testing.TB, ctx context.Context, bin, dir string, env []string, n int) {
	t.Helper()
	var targets []string
	for i := range n {
		in, err := newInstance(i, bin, filepath.Join(dir, fmt.Sprintf("instance-%d", i)),
			filepath.Join(c.logDir, fmt.Sprintf("instance-%d.log", i)), env)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.lb.add(in.URL); err != nil {
			t.Fatal(err)
		}
		c.instances = append(c.instances, in)
		targets = append(targets, in.URL)
	}
	t.Cleanup(func() { c.stopAll(t) })
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, in := range c.instances {
		wg.Go(func() { errs[i] = in.start(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.lb.serve(targets)
	if err := c.WaitBalanced(ctx); err != nil {
		t.Fatal(err)
	}
}

// stopAll stops the proxy and the instances, logging their logs' tails
// when t failed.
func (c *Cluster) stopAll(t testing.TB) {
	if c.lb != nil {
		c.lb.close()
	}
	var wg sync.WaitGroup
	for _, in := range c.instances {
		wg.Go(func() {
			if err := in.stop(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		for i := range c.instances {
			t.Logf("instance %d log (tail):\n%s", i, c.LogTail(i, 80))
		}
	}
}

// instanceEnv is the environment every instance and the migrate command
// get: this process's, minus anything that would configure the registry
// or the AWS SDK, plus the cluster's settings.
func (c *Cluster) instanceEnv(dir string, extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ARTIFACT_REGISTRY_") || strings.HasPrefix(k, "AWS_") || k == "DATABASE_URL" {
			continue
		}
		env = append(env, kv)
	}
	aws := filepath.Join(dir, "aws")
	env = append(env,
		"DATABASE_URL="+c.DatabaseURL,
		"ARTIFACT_REGISTRY_NO_MIGRATE=true",
		"ARTIFACT_REGISTRY_ADMIN_TOKEN="+c.AdminToken,
		"ARTIFACT_REGISTRY_ROOT_KEY_URL="+c.RootKeyURL,
		"ARTIFACT_REGISTRY_STORAGE_URL="+c.StorageURL,
		"ARTIFACT_REGISTRY_PUBLIC_URL="+c.URL,
		"AWS_ACCESS_KEY_ID="+c.S3.AccessKey,
		"AWS_SECRET_ACCESS_KEY="+c.S3.SecretKey,
		"AWS_CONFIG_FILE="+aws+"/config",
		"AWS_SHARED_CREDENTIALS_FILE="+aws+"/credentials",
		"AWS_EC2_METADATA_DISABLED=true",
	)
	return append(env, extra...)
}

// migrate runs `artifact-registry migrate up` once, as the Kubernetes
// Job does before the instances start.
func (c *Cluster) migrate(ctx context.Context, bin string, env []string) error {
	cmd := exec.CommandContext(ctx, bin, "migrate", "up")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("artifact-registry migrate up: %w\n%s", err, out)
	}
	return nil
}

// rootKeyURL is a fresh key in the padded URL-safe base64 that
// base64key:// reads.
func rootKeyURL() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "base64key://" + base64.URLEncoding.EncodeToString(b)
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
