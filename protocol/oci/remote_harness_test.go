package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/secrets/localsecrets"
	"golang.org/x/crypto/bcrypt"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/httpserver"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/legacy/legacytest"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/container"
	"github.com/artifact-registry/artifact-registry/store/credentials"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/upstream"
)

// The pull-through cache tests run a real CNCF distribution v3 as the
// upstream, with token auth (the legacy tests' token service) or HTTP
// Basic (htpasswd), behind a front that counts what reaches it and can
// be taken down.

// upstreamAuth selects how the test upstream authenticates.
type upstreamAuth int

const (
	authNone upstreamAuth = iota
	authToken
	authBasic
)

const (
	upstreamUser     = "puller"
	upstreamPassword = "pull-s3cret-Pa55"
)

// testUpstream is a distribution v3 registry on filesystem storage behind
// a counting front (one host:port for /v2/ and, with token auth, /token:
// the realm the upstream layer trusts with credentials).
type testUpstream struct {
	t     testing.TB
	dir   string
	mode  upstreamAuth
	front *httptest.Server
	Host  string // the front's host:port
	URL   string // http://<front>

	registry atomic.Pointer[url.URL]
	stopReg  func()
	plain    string // host:port of the registry while seeding (no auth)
	tokens   *legacytest.TokenServer
	down     atomic.Bool
	// throttle, when positive, slows blob bodies to that many bytes per
	// second (a slow upstream, for fills that outlive their clients).
	throttle atomic.Int64

	mu     sync.Mutex
	counts map[string]int // "METHOD path status" of the answers through the front
}

// newTestUpstream starts an empty upstream without auth, for seeding;
// secure() then restarts it with its auth behind the front.
func newTestUpstream(t testing.TB, mode upstreamAuth) *testUpstream {
	t.Helper()
	u := &testUpstream{t: t, dir: t.TempDir(), mode: mode, counts: map[string]int{}}
	u.plain, u.stopReg = legacytest.StartRegistry(t, u.dir)
	if mode == authToken {
		u.tokens = legacytest.StartTokenServer(t, upstreamUser, upstreamPassword)
	}
	tokenURL := (*url.URL)(nil)
	if u.tokens != nil {
		tokenURL, _ = url.Parse(u.tokens.URL)
	}
	toRegistry := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u.registry.Load()); r.Out.Host = r.In.Host },
		ModifyResponse: func(resp *http.Response) error {
			u.mu.Lock()
			u.counts[fmt.Sprintf("%s %s %d", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode)]++
			u.mu.Unlock()
			if rate := u.throttle.Load(); rate > 0 && strings.Contains(resp.Request.URL.Path, "/blobs/") {
				resp.Body = &slowBody{rc: resp.Body, rate: rate}
			}
			return nil
		},
		ErrorLog: nil,
	}
	u.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.down.Load() {
			// Down: the connection is cut without an answer.
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.URL.Path == "/token" && tokenURL != nil {
			(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(tokenURL) }}).ServeHTTP(w, r)
			return
		}
		toRegistry.ServeHTTP(w, r)
	}))
	t.Cleanup(u.front.Close)
	fu, _ := url.Parse(u.front.URL)
	u.Host, u.URL = fu.Host, u.front.URL
	return u
}

// secure restarts the registry on the same storage with its auth and
// points the front at it.
func (u *testUpstream) secure() {
	u.t.Helper()
	u.stopReg()
	extra := ""
	switch u.mode {
	case authToken:
		extra = strings.Replace(u.tokens.RegistryConfig(), u.tokens.URL+"/token", u.URL+"/token", 1)
	case authBasic:
		hash, err := bcrypt.GenerateFromPassword([]byte(upstreamPassword), bcrypt.MinCost)
		if err != nil {
			u.t.Fatal(err)
		}
		file := filepath.Join(u.t.TempDir(), "htpasswd")
		if err := os.WriteFile(file, []byte(upstreamUser+":"+string(hash)+"\n"), 0o600); err != nil {
			u.t.Fatal(err)
		}
		extra = fmt.Sprintf("auth:\n  htpasswd:\n    realm: test-upstream\n    path: %s\n", file)
	}
	host, stop := legacytest.StartRegistryConfig(u.t, legacytest.V3, u.dir, extra)
	u.stopReg = stop
	u.registry.Store(&url.URL{Scheme: "http", Host: host})
	u.plain = ""
}

// maintenance stops the secured registry, restarts it without auth for
// seeding (plain), and secure() brings it back.
func (u *testUpstream) maintenance() {
	u.t.Helper()
	u.stopReg()
	u.plain, u.stopReg = legacytest.StartRegistry(u.t, u.dir)
}

// stop kills the registry and cuts the front's connections.
func (u *testUpstream) stop() {
	u.down.Store(true)
	u.stopReg()
}

// start brings the registry back (secured) and the front up.
func (u *testUpstream) start() {
	u.t.Helper()
	u.secure()
	u.down.Store(false)
}

func (u *testUpstream) count(method, path string, status int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.counts[fmt.Sprintf("%s %s %d", method, path, status)]
}

// countPrefix sums the answers whose "METHOD path" starts with prefix.
func (u *testUpstream) countPrefix(prefix string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for k, v := range u.counts {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

func (u *testUpstream) resetCounts() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.counts = map[string]int{}
}

// pushImage pushes an OCI image of one uncompressed tar layer holding
// content, for the platform arch, to the seeding registry; it returns the
// manifest digest, its size and the layer digest.
func (u *testUpstream) pushImage(repo, tag, arch string, content []byte) (string, int, string) {
	u.t.Helper()
	if u.plain == "" {
		u.t.Fatal("seeding needs maintenance()")
	}
	layer := tarOf(u.t, "file.bin", content)
	layerD := legacytest.PushBlob(u.t, u.plain, repo, layer)
	cfg := fmt.Appendf(nil, `{"architecture":%q,"os":"linux","rootfs":{"type":"layers","diff_ids":[%q]}}`, arch, layerD)
	cfgD := legacytest.PushBlob(u.t, u.plain, repo, cfg)
	m := fmt.Appendf(nil, `{"schemaVersion":2,"mediaType":%q,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`,
		mtOCIManifest, cfgD, len(cfg), layerD, len(layer))
	d := legacytest.PutManifest(u.t, u.plain, repo, tag, mtOCIManifest, m)
	return d, len(m), layerD
}

// pushIndex pushes an index of (digest, size, arch) children under tag.
func (u *testUpstream) pushIndex(repo, tag string, children ...platformChild) string {
	u.t.Helper()
	var parts []string
	for _, c := range children {
		parts = append(parts, fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d,"platform":{"architecture":%q,"os":"linux"}}`,
			mtOCIManifest, c.digest, c.size, c.arch))
	}
	idx := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":%q,"manifests":[%s]}`, mtOCIIndex, strings.Join(parts, ",")))
	return legacytest.PutManifest(u.t, u.plain, repo, tag, mtOCIIndex, idx)
}

type platformChild struct {
	digest string
	size   int
	arch   string
}

// tarOf is a tar archive holding one file.
func tarOf(t testing.TB, name string, content []byte) []byte {
	t.Helper()
	p := legacytest.LayerTar(t, t.TempDir(), name, content)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func randomContent(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// lockedBuffer is a log sink the test reads (credentials must never
// appear in it).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// remoteServer is a registry with pull-through caching: a real keyring
// (local root key), the upstream layer with a short offline period, and a
// log the tests can search.
type remoteServer struct {
	*testServer
	cs   *container.Store
	logs *lockedBuffer
}

// newRemoteServer starts it; spool, when given, is the fills' spool
// directory (default a test temporary directory).
func newRemoteServer(t testing.TB, spool ...string) *remoteServer {
	t.Helper()
	spoolDir := t.TempDir()
	if len(spool) > 0 {
		spoolDir = spool[0]
	}
	st := testsupport.Store(t, testsupport.StoreOptions{})
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sk, err := localsecrets.NewRandomKey()
	if err != nil {
		t.Fatal(err)
	}
	keeper := localsecrets.NewKeeper(sk)
	t.Cleanup(func() { _ = keeper.Close() })
	kr, err := credentials.New(st, credentials.Options{Root: &credentials.RootKey{URI: "base64key://sha256:oci-remote-test", Keeper: keeper}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httpserver.New(httpserver.Options{Logger: log})
	authn := auth.New(st, auth.Options{AdminToken: testToken, Logger: log})
	Mount(hs.Router(), st, Options{Auth: authn, Logger: log, Remote: RemoteOptions{Keyring: kr,
		Upstream: upstream.Config{OfflinePeriod: time.Second, SpoolDir: spoolDir, NegativeTTL: -1}}})
	srv := httptest.NewServer(hs.Handler())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	cs := container.New(st)
	cs.SetKeyring(kr)
	return &remoteServer{testServer: &testServer{URL: srv.URL, Host: u.Host, Store: st, Authn: authn, srv: srv}, cs: cs, logs: logs}
}

// remote creates namespace ns (if needed) and a remote repository of it.
func (s *remoteServer) remote(t testing.TB, ns, name, upstreamURL string, vis enum.Visibility, validityHours int, creds *container.Credentials) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Store.NamespaceBySlug(ctx, ns); err != nil {
		if _, err := s.Store.CreateNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	child, err := s.cs.NewRemote(container.RemoteInput{URL: upstreamURL, Credentials: creds, CacheValidityHours: &validityHours})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.CreateRepository(ctx, store.NewRepository{Namespace: ns, Name: name, Format: enum.FormatOCI,
		Kind: enum.KindRemote, Visibility: vis, Child: child}); err != nil {
		t.Fatal(err)
	}
}

// count runs a counting query on the server's database.
func (s *remoteServer) count(t testing.TB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := s.Store.Pool().QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// slowBody delivers a body at rate bytes per second, in 64 KiB reads.
type slowBody struct {
	rc   io.ReadCloser
	rate int64
}

func (b *slowBody) Read(p []byte) (int, error) {
	if len(p) > 64<<10 {
		p = p[:64<<10]
	}
	n, err := b.rc.Read(p)
	time.Sleep(time.Duration(int64(n) * int64(time.Second) / b.rate))
	return n, err
}

func (b *slowBody) Close() error { return b.rc.Close() }
