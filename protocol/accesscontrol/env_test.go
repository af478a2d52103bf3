package accesscontrol

import (
	"context"
	"time"

	"net/http"
	"testing"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const adminToken = testserver.AdminToken

// clock is the shared test clock.
type clock struct{ *fakeclock.Clock }

func (c clock) advance(d time.Duration) { c.Advance(d) }

// env is the shared test server (internal/testserver), under the short
// names these tests use.
type env struct {
	*testserver.Env
	t     *testing.T
	ctx   context.Context
	st    *store.Store
	authn *auth.Authenticator
	clock clock
	url   string
	ns    map[string]*store.Namespace
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s := testserver.New(t, testserver.Options{})
	return &env{Env: s, t: t, ctx: s.Ctx, st: s.Store, authn: s.Auth, clock: clock{s.Clock}, url: s.URL, ns: s.NS}
}

func (e *env) repo(name string, f enum.Format, v enum.Visibility) *store.Repository {
	e.t.Helper()
	return e.Repo(name, f, v)
}

func (e *env) mint(ns, name string, spec auth.TokenSpec) (string, *store.AccessToken) {
	e.t.Helper()
	return e.Mint(ns, name, spec)
}

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   string
}

func (e *env) do(method, path, authorization string, body []byte, hdr ...string) response {
	e.t.Helper()
	r := e.Do(method, path, authorization, body, hdr...)
	return response{r.Status, r.Header, r.Body}
}

func (e *env) pushImage(name, tag string) { e.t.Helper(); e.PushImage(name, tag) }

func (e *env) npmPublish(repo, name, version string) { e.t.Helper(); e.NpmPublish(repo, name, version) }

func (e *env) mavenDeploy(repo, version string) { e.t.Helper(); e.MavenDeploy(repo, version) }

var (
	basic    = testserver.Basic
	bearer   = testserver.Bearer
	sha      = testserver.SHA
	mavenPom = testserver.MavenPom
	pom      = testserver.Pom
	ociError = testserver.OCIError
	npmError = testserver.NpmError
)
