package npm

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
	npmstore "github.com/artifact-registry/artifact-registry/store/npm"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const testToken = "npm-test-token-0123456789"

// env is a registry server on a loopback port over a fresh database and a
// file bucket, with namespace "acme" and hosted npm repositories "js"
// (public) and "private" (private).
type env struct {
	t       testing.TB
	ctx     context.Context
	pool    *pgxpool.Pool
	st      *store.Store
	npm     *npmstore.Store
	server  *httptest.Server
	base    string // http://127.0.0.1:port
	opts    Options
	jobs    *river.Client[pgx.Tx]
	handler *handler

	mu        sync.Mutex
	requests  []string        // "METHOD path" of every request, for assertions
	durations []time.Duration // server time of every request
}

type envOptions struct {
	Options
	// queueJobs gives Mount an insert-only River client (never started):
	// writes queue rebuild jobs, which the test works with runQueuedJobs.
	queueJobs bool
	// withJobs starts a River client with the rebuild worker and gives Mount
	// its inserter.
	withJobs bool
	maxConns int32
}

func newEnv(t testing.TB, eo envOptions) *env {
	t.Helper()
	ctx := context.Background()
	pool := testsupport.Pool(t, func(cfg *pgxpool.Config) { cfg.MaxConns = max(eo.maxConns, 8) })
	st := testsupport.Store(t, testsupport.StoreOptions{Pool: pool})
	e := &env{t: t, ctx: ctx, pool: pool, st: st, npm: npmstore.New(st)}
	testsupport.Namespace(t, e.st, "acme")
	for name, vis := range map[string]enum.Visibility{"js": enum.VisibilityPublic, "private": enum.VisibilityPrivate} {
		testsupport.Repository(t, e.st, "acme", name, enum.FormatNpm, vis)
	}

	e.server = httptest.NewUnstartedServer(nil)
	e.base = "http://" + e.server.Listener.Addr().String()
	opts := eo.Options
	if opts.Auth == nil {
		opts.Auth = auth.New(e.st, auth.Options{AdminToken: testToken, Logger: testsupport.Discard()})
	}
	if opts.PublicURL == "" {
		opts.PublicURL = e.base
	}
	if opts.Logger == nil {
		opts.Logger = testsupport.Discard()
		if testing.Verbose() {
			opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
	}
	if eo.queueJobs {
		workers := river.NewWorkers()
		if err := RegisterWorkers(workers, e.st, opts); err != nil {
			t.Fatal(err)
		}
		var err error
		if e.jobs, err = river.NewClient(riverpgxv5.New(pool), &river.Config{Workers: workers, Logger: opts.Logger, TestOnly: true}); err != nil {
			t.Fatal(err)
		}
		opts.Jobs = e.jobs
	}
	if eo.withJobs {
		workers := river.NewWorkers()
		if err := RegisterWorkers(workers, e.st, opts); err != nil {
			t.Fatal(err)
		}
		var err error
		e.jobs, err = river.NewClient(riverpgxv5.New(pool), &river.Config{
			Logger:            opts.Logger,
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
			Workers:           workers,
			FetchPollInterval: 50 * time.Millisecond,
			FetchCooldown:     10 * time.Millisecond,
			TestOnly:          true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.jobs.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.jobs.Stop(sctx)
		})
		opts.Jobs = e.jobs
	}
	e.opts = opts
	srv := httpserver.New(httpserver.Options{Logger: opts.Logger})
	e.handler = newHandler(e.st, opts)
	srv.Router().PathPrefix(PathPrefix).Handler(e.handler)
	e.server.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		srv.Handler().ServeHTTP(w, r)
		e.mu.Lock()
		e.requests = append(e.requests, r.Method+" "+r.URL.RequestURI())
		e.durations = append(e.durations, time.Since(start))
		e.mu.Unlock()
	})
	e.server.Start()
	testsupport.CloseAtCleanup(t, e.handler.remote.clients.Close)
	t.Cleanup(e.server.Close)
	t.Cleanup(e.handler.downloads.Flush)
	return e
}

// token mints an access token of namespace acme as the super-user and
// returns its secret.
func (e *env) token(t testing.TB, name string, scopes ...enum.TokenScope) string {
	t.Helper()
	ns, err := e.st.NamespaceBySlug(e.ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := e.opts.Auth.CreateToken(e.ctx, auth.AdminPrincipal(""), auth.NamespaceOf(ns), auth.TokenSpec{Name: name, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// registry is the registry URL of a repository (with the trailing slash).
func (e *env) registry(repo string) string { return e.base + "/npm/acme/" + repo + "/" }

func (e *env) takeRequests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.requests
	e.requests, e.durations = nil, nil
	return out
}

// takeDurations returns the server time of the requests since the last take.
func (e *env) takeDurations() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.durations
	e.requests, e.durations = nil, nil
	return out
}

// do sends a request with the admin token (auth "" → none, "bad" → a wrong
// token) and returns status, body and headers.
func (e *env) do(method, url, auth string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		e.t.Fatal(err)
	}
	switch auth {
	case "":
	case "token":
		req.Header.Set("Authorization", "Bearer "+testToken)
	default:
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// count returns a count(*) query's result.
func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, sql, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// escapeName is how npm puts a name in a URL path (@scope%2fname).
func escapeName(name string) string { return strings.Replace(name, "/", "%2f", 1) }

// publish PUTs a version and fails the test unless it is created.
func (e *env) publish(repo string, p *npmpack.Publish) {
	e.t.Helper()
	status, body, _ := e.do(http.MethodPut, e.registry(repo)+escapeName(p.Name), "token", p.Body(e.registry(repo)), nil)
	if status != http.StatusCreated {
		e.t.Fatalf("publish %s@%s: %d %s", p.Name, p.Version, status, body)
	}
}

// packument GETs a package document (corgi when abbreviated).
func (e *env) packument(repo, name string, abbreviated bool) map[string]any {
	e.t.Helper()
	hdr := map[string]string{"Accept": "application/json"}
	if abbreviated {
		hdr["Accept"] = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*"
	}
	status, body, _ := e.do(http.MethodGet, e.registry(repo)+escapeName(name), "token", nil, hdr)
	if status != http.StatusOK {
		e.t.Fatalf("GET %s: %d %s", name, status, body)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		e.t.Fatalf("GET %s: %v: %s", name, err, body)
	}
	return doc
}

// integrityOf returns a tarball's dist.integrity and dist.shasum.
func integrityOf(tgz []byte) (string, string) {
	s512 := sha512.Sum512(tgz)
	s1 := sha1.Sum(tgz)
	return "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), hex.EncodeToString(s1[:])
}

// syntheticState is a loaded package state of n versions whose manifests
// look like PostgreSQL's jsonb rendering of what publish stores.
func syntheticState(n int) *npmstore.PackageState {
	st := &npmstore.PackageState{Package: npmstore.PackageRef{Name: "big"}, Fingerprint: "0123456789abcdef0123456789abcdef"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		v := fmt.Sprintf("%d.%d.%d", i/100, i/10%10, i%10)
		id, _ := uuid.NewV7()
		manifest := fmt.Sprintf(`{"_id": "big@%s", "main": "index.js", "name": "big", "dist": {"shasum": "0affb8cdf3f44afc2637860bd00d67537f671c7e", "integrity": "sha512-EsRybs/qVx5Y9yYCSjwQhejYL4J/ib1QCj+HrEGu4e2+2AAWKfJ35AaL0S0HXY3KW8WL7VAJqQ61TZR89wjDOQ==", "fileCount": 2, "unpackedSize": 400}, "engines": {"node": ">=18"}, "license": "MIT", "version": "%s", "_npmUser": {"name": "admin", "email": ""}, "keywords": ["a", "b"], "repository": {"url": "git+https://example.com/big.git", "type": "git"}, "description": "a package with many versions", "dependencies": {"dep-0": "^1.0.0", "dep-1": "^1.0.0", "dep-2": "^1.0.0", "dep-3": "^1.0.0", "dep-4": "^1.0.0", "dep-5": "^1.0.0", "dep-6": "^1.0.0", "dep-7": "^1.0.0", "dep-8": "^1.0.0", "dep-9": "^1.0.0", "dep-10": "^1.0.0", "dep-11": "^1.0.0"}, "_hasShrinkwrap": false, "readmeFilename": "README.md"}`, v, v)
		st.Versions = append(st.Versions, npmstore.VersionDoc{ID: id, Version: v, CreatedAt: t0.Add(time.Duration(i) * time.Minute), Manifest: []byte(manifest)})
	}
	readme := "# big"
	st.Versions[n-1].Readme = &readme
	st.Tags = []npmstore.Tag{{Name: "latest", VersionID: st.Versions[n-1].ID, Version: st.Versions[n-1].Version}}
	return st
}

// runQueuedJobs works every available packument rebuild job, oldest first,
// one at a time through rivertest (no polling client), and returns how
// many ran. Each runs in its own committed transaction, so a job sees the
// ones queued after it waiting, as under a running client.
func (e *env) runQueuedJobs() int {
	e.t.Helper()
	w := rivertest.NewWorker(e.t, riverpgxv5.New(nil), &river.Config{Logger: e.opts.Logger, TestOnly: true},
		river.Worker[RebuildPackumentArgs](&rebuildWorker{h: newHandler(e.st, e.opts)}))
	res, err := e.jobs.JobList(e.ctx, river.NewJobListParams().Kinds(RebuildPackumentArgs{}.Kind()).
		States(rivertype.JobStateAvailable).OrderBy(river.JobListOrderByID, river.SortOrderAsc).First(1000))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, job := range res.Jobs {
		tx, err := e.pool.Begin(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		r, err := w.WorkJob(e.ctx, e.t, tx, job)
		if err != nil {
			_ = tx.Rollback(e.ctx)
			e.t.Fatalf("rebuild job %d: %v", job.ID, err)
		}
		if r.EventKind != river.EventKindJobCompleted {
			_ = tx.Rollback(e.ctx)
			e.t.Fatalf("rebuild job %d: %s", job.ID, r.EventKind)
		}
		if err := tx.Commit(e.ctx); err != nil {
			e.t.Fatal(err)
		}
	}
	return len(res.Jobs)
}
