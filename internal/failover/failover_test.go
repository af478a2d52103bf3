package failover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
	"github.com/artifact-registry/artifact-registry/internal/servebuild"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/internal/testtools"
	"github.com/artifact-registry/artifact-registry/migrations"
)

const (
	adminToken = "failover-test-admin-token-0123456789"
	namespace  = "acme"
	repo       = "r"
	// outage is how long the test leaves the registry without a primary
	// before promoting the standby, standing in for a failover manager's
	// detection time, so requests certainly fall into the window.
	outage = 2 * time.Second
	// leaderTTL is River's leadership term (elect interval 5 s + 10 s).
	leaderTTL = 15 * time.Second
)

// TestFailoverToStandby runs the serve binary on a DATABASE_URL listing a
// primary and its synchronous standby (target_session_attrs=read-write),
// kills the primary under npm publish and read traffic, promotes the
// standby and checks: /-/ready answers 503 and then 200 again without a
// restart; no request gets a 500 or a broken connection, every failure is
// 503 with Retry-After in npm's error format; every acknowledged publish
// is readable afterwards; River has a live leader on the new primary.
func TestFailoverToStandby(t *testing.T) {
	if _, err := pgcluster.MajorVersion(); err != nil {
		testtools.Unavailable(t, err.Error())
	}
	ctx := context.Background()
	begin := time.Now()
	bin := buildBinary(t)
	t.Logf("serve built in %v", time.Since(begin).Round(time.Millisecond))
	primary := startCluster(t, "primary", &pgcluster.Replication{Name: "primary", SynchronousStandbyNames: "standby"}, nil)
	t.Logf("primary seeded and started at %v", time.Since(begin).Round(time.Millisecond))
	migrate(t, primary)
	standby := startCluster(t, "standby", &pgcluster.Replication{Name: "standby"}, primary)
	waitSyncStandby(t, primary)
	t.Logf("pair built and migrated in %v", time.Since(begin).Round(time.Millisecond))

	srv := startServe(t, bin, databaseURL(primary, standby))
	srv.waitReady(t, time.Minute)
	srv.setup(t)

	tr := startTraffic(t, srv)
	tr.waitAcked(t, 10, 30*time.Second)
	stopAt := time.Now()
	if err := pgcluster.Kill(primary.Dir()); err != nil {
		t.Fatalf("kill primary: %v", err)
	}
	killed := time.Now()
	downAt := tr.waitReady(t, http.StatusServiceUnavailable, killed, 30*time.Second)
	time.Sleep(outage)
	promoteAt := time.Now()
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	writeAt := tr.waitWrite(t, killed, time.Minute)
	readyAt := tr.waitReady(t, http.StatusOK, downAt, time.Minute)
	time.Sleep(time.Second) // traffic on the recovered registry
	tr.stop()

	t.Logf("primary SIGQUIT at +0: killed after %v; /-/ready 503 at %v; promote started at %v, done at %v",
		killed.Sub(stopAt).Round(time.Millisecond), downAt.Sub(stopAt).Round(time.Millisecond),
		promoteAt.Sub(stopAt).Round(time.Millisecond), promoted.Sub(stopAt).Round(time.Millisecond))
	t.Logf("recovery: first acknowledged write %v after the primary stopped (%v after promote began); /-/ready 200 %v after (%v after promote began)",
		writeAt.Sub(stopAt).Round(time.Millisecond), writeAt.Sub(promoteAt).Round(time.Millisecond),
		readyAt.Sub(stopAt).Round(time.Millisecond), readyAt.Sub(promoteAt).Round(time.Millisecond))
	tr.check(t, stopAt)
	if t.Failed() {
		t.Logf("serve's errors:\n%s", errorLines(srv.logs.String()))
	}
	srv.readBack(t, tr.acked)
	waitRiverLeader(t, standby, promoteAt.Add(leaderTTL))
	if srv.exited() {
		t.Fatalf("serve exited during the failover; logs:\n%s", srv.logs)
	}
	srv.interrupt(t)
	t.Logf("whole test %v", time.Since(begin).Round(time.Millisecond))
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "artifact-registry")
	if err := servebuild.Build(bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func startCluster(t *testing.T, name string, repl *pgcluster.Replication, standbyOf *pgcluster.Cluster) *pgcluster.Cluster {
	t.Helper()
	opts := pgcluster.Options{Dir: filepath.Join(t.TempDir(), name), Fast: true, Replication: repl}
	var (
		c        *pgcluster.Cluster
		err      error
		template string
	)
	if standbyOf == nil {
		// The migrated schema comes from the test cluster cache.
		if template, err = testdb.SeedCluster(opts.Dir); err != nil {
			t.Fatal(err)
		}
		c, err = pgcluster.Start(context.Background(), opts)
	} else {
		c, err = pgcluster.StartStandby(context.Background(), standbyOf, opts)
	}
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
	})
	if template != "" {
		if err := testdb.AdoptTemplate(context.Background(), c, template); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// migrate runs the migrations once, on the primary before its standby
// exists: nothing could acknowledge a synchronous commit yet. The seeded
// primary is already current, so this only checks it.
func migrate(t *testing.T, primary *pgcluster.Cluster) {
	t.Helper()
	start := time.Now()
	pool, err := pgxpool.New(context.Background(), primary.URL(pgcluster.Database)+"&synchronous_commit=local")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.Up(context.Background(), pool); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Logf("migrations took %v", time.Since(start).Round(time.Millisecond))
}

func waitSyncStandby(t *testing.T, primary *pgcluster.Cluster) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), primary.URL(pgcluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state string
		err := conn.QueryRow(context.Background(),
			"SELECT coalesce(max(sync_state), '') FROM pg_stat_replication WHERE application_name = 'standby'").Scan(&state)
		if err == nil && state == "sync" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("standby not streaming synchronously after 30s (state %q, err %v)", state, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// databaseURL lists both servers' socket directories: pgx tries them in
// order and keeps the first that accepts writes.
func databaseURL(primary, standby *pgcluster.Cluster) string {
	q := url.Values{
		"host":                 {primary.SocketDir() + "," + standby.SocketDir()},
		"target_session_attrs": {"read-write"},
		"sslmode":              {"disable"},
		"connect_timeout":      {"2"},
	}
	u := url.URL{Scheme: "postgres", User: url.User(pgcluster.Superuser), Path: "/" + pgcluster.Database, RawQuery: q.Encode()}
	return u.String()
}

type server struct {
	cmd  *exec.Cmd
	addr string
	logs *syncBuffer
	done chan struct{}
}

func startServe(t *testing.T, bin, dbURL string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	s := &server{addr: addr, logs: &syncBuffer{}, done: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve", "--listen", addr, "--data-dir", t.TempDir())
	s.cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "ARTIFACT_REGISTRY_ADMIN_TOKEN="+adminToken)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		if !s.exited() {
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *server) waitReady(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && !s.exited() {
		if resp, err := http.Get("http://" + s.addr + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("serve not ready; logs:\n%s", s.logs)
}

func (s *server) interrupt(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
		if !s.cmd.ProcessState.Success() {
			t.Fatalf("serve exited with %v; logs:\n%s", s.cmd.ProcessState, s.logs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop on SIGINT; logs:\n%s", s.logs)
	}
}

type response struct {
	status     int
	retryAfter string
	body       string
}

func (s *server) do(method, path string, body []byte) (response, error) {
	req, err := http.NewRequest(method, "http://"+s.addr+path, strings.NewReader(string(body)))
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}, err
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// setup creates the npm repository and publishes a first version of
// each package the traffic uses.
func (s *server) setup(t *testing.T) {
	t.Helper()
	for _, q := range []string{
		`mutation { createNamespace(input: {slug: "` + namespace + `"}) { namespace { slug } } }`,
		`mutation { createRepository(input: {namespace: "` + namespace + `", name: "` + repo + `", format: NPM}) { repository { name } } }`,
	} {
		doc, _ := json.Marshal(map[string]string{"query": q})
		r, err := s.do(http.MethodPost, "/graphql", doc)
		if err != nil || r.status != http.StatusOK || strings.Contains(r.body, `"errors"`) {
			t.Fatalf("%s: %d %s %v", q, r.status, r.body, err)
		}
	}
}

func (s *server) publish(t testing.TB, name, version string) (response, error) {
	reg := "/npm/" + namespace + "/" + repo + "/"
	return s.do(http.MethodPut, reg+name, testserver.NpmPublishBody(t, "http://"+s.addr+reg, name, version))
}

// readBack reads every acknowledged version from the registry, which now
// runs on the promoted standby: its tarball and its packument entry.
func (s *server) readBack(t *testing.T, acked []published) {
	t.Helper()
	versions := map[string]map[string]any{}
	for _, p := range acked {
		if versions[p.name] == nil {
			r, err := s.do(http.MethodGet, "/npm/"+namespace+"/"+repo+"/"+p.name, nil)
			var doc struct {
				Versions map[string]any `json:"versions"`
			}
			if err != nil || r.status != http.StatusOK || json.Unmarshal([]byte(r.body), &doc) != nil {
				t.Fatalf("packument of %s after failover: %d %v %.300s", p.name, r.status, err, r.body)
			}
			versions[p.name] = doc.Versions
		}
		if _, ok := versions[p.name][p.version]; !ok {
			t.Errorf("acknowledged %s@%s missing from the packument after failover", p.name, p.version)
		}
		path := fmt.Sprintf("/npm/%s/%s/%s/-/%s-%s.tgz", namespace, repo, p.name, p.name, p.version)
		if r, err := s.do(http.MethodGet, path, nil); err != nil || r.status != http.StatusOK {
			t.Errorf("acknowledged %s@%s: tarball %d %v", p.name, p.version, r.status, err)
		}
	}
	t.Logf("read back %d acknowledged publishes", len(acked))
}

// waitRiverLeader waits for a River leader whose term was granted or
// renewed after promotion: a term from before the kill ends by
// promoteAt+TTL at the latest.
func waitRiverLeader(t *testing.T, c *pgcluster.Cluster, after time.Time) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), c.URL(pgcluster.Database))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	start := time.Now()
	for {
		var fresh bool
		err := conn.QueryRow(context.Background(), "SELECT coalesce(bool_or(expires_at > $1), false) FROM river_leader", after).Scan(&fresh)
		if err == nil && fresh {
			t.Logf("River leader renewed on the promoted standby (waited %v)", time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 45*time.Second {
			t.Fatalf("no River leader term after promotion within 45s (err %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func errorLines(logs string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "ERROR") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
