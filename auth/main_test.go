package auth

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

func TestMain(m *testing.M) { testdb.Main(m) }

const testAdminToken = "admin-token-of-the-tests"

// countingStore counts the authentication calls that reach the store.
type countingStore struct {
	tokenStore
	byHash, byID, touch atomic.Int64
}

func (c *countingStore) AccessTokenByHash(ctx context.Context, ns uuid.UUID, sha [32]byte) (*store.AccessTokenCredential, error) {
	c.byHash.Add(1)
	return c.tokenStore.AccessTokenByHash(ctx, ns, sha)
}

func (c *countingStore) AccessTokenByID(ctx context.Context, ns, id uuid.UUID) (*store.AccessTokenCredential, error) {
	c.byID.Add(1)
	return c.tokenStore.AccessTokenByID(ctx, ns, id)
}

func (c *countingStore) TouchAccessTokens(ctx context.Context, uses []store.AccessTokenUse) (int64, error) {
	c.touch.Add(1)
	return c.tokenStore.TouchAccessTokens(ctx, uses)
}

// fixture: namespace "acme" with a PUBLIC, an INTERNAL and a PRIVATE
// Maven repository plus "elsewhere" (PRIVATE) and OCI repository
// "images" (PRIVATE); namespace "other" with an INTERNAL repository
// "shared".
type fixture struct {
	t       testing.TB
	st      *store.Store
	clock   *fakeclock.Clock
	authn   *Authenticator
	count   *countingStore
	acme    *store.Namespace
	other   *store.Namespace
	repos   map[enum.Visibility]*store.Repository
	else_   *store.Repository
	images  *store.Repository
	shared  *store.Repository
	admin   *Principal
	secrets map[string]string
	tokens  map[string]*store.AccessToken
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	f := &fixture{
		t:       t,
		clock:   fakeclock.New(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)),
		repos:   map[enum.Visibility]*store.Repository{},
		secrets: map[string]string{},
		tokens:  map[string]*store.AccessToken{},
	}
	f.st = testsupport.Store(t, testsupport.StoreOptions{Mem: true, Store: store.Options{Clock: f.clock}})
	opts.AdminToken = testAdminToken
	opts.Clock = f.clock
	f.authn = New(f.st, opts)
	f.count = &countingStore{tokenStore: f.st}
	f.authn.tokens = f.count
	f.admin = f.authn.admin
	f.acme = testsupport.Namespace(t, f.st, "acme")
	f.other = testsupport.Namespace(t, f.st, "other")
	for _, v := range enum.VisibilityValues() {
		f.repos[v] = f.repo("acme", v.String(), enum.FormatMaven, v)
	}
	f.else_ = f.repo("acme", "elsewhere", enum.FormatMaven, enum.VisibilityPrivate)
	f.images = f.repo("acme", "images", enum.FormatOCI, enum.VisibilityPrivate)
	f.shared = f.repo("other", "shared", enum.FormatNpm, enum.VisibilityInternal)
	return f
}

func (f *fixture) repo(ns, name string, format enum.Format, v enum.Visibility) *store.Repository {
	f.t.Helper()
	return testsupport.Repository(f.t, f.st, ns, name, format, v)
}

// mint creates a token as the super-user and remembers its secret.
func (f *fixture) mint(label string, ns *store.Namespace, spec TokenSpec) string {
	f.t.Helper()
	if spec.Name == "" {
		spec.Name = label
	}
	tok, secret, err := f.authn.CreateToken(context.Background(), f.admin, NamespaceOf(ns), spec)
	if err != nil {
		f.t.Fatalf("mint %s: %v", label, err)
	}
	f.secrets[label], f.tokens[label] = secret, tok
	return secret
}

func scopes(s ...enum.TokenScope) []enum.TokenScope { return s }

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func bearer(token string) string { return "Bearer " + token }

func request(authorization string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v2/", nil)
	if authorization != "" {
		r.Header.Set("Authorization", authorization)
	}
	return r
}

// namespace reloads a namespace row (conditions change under the tests).
func (f *fixture) namespace(slug string) *store.Namespace {
	f.t.Helper()
	ns, err := f.st.NamespaceBySlug(context.Background(), slug)
	if err != nil {
		f.t.Fatal(err)
	}
	return ns
}

// outcome runs a request through Authenticate and Authorize and reports
// "ok" or the HTTP status of the refusal.
func (f *fixture) outcome(authorization string, action Action, target Target) string {
	f.t.Helper()
	p, err := f.authn.Authenticate(request(authorization))
	if err == nil {
		err = Authorize(context.Background(), p, action, target)
	}
	return statusText(f.t, err)
}

func statusText(t testing.TB, err error) string {
	t.Helper()
	if err == nil {
		return "ok"
	}
	st := HTTPStatus(err)
	if st == 0 {
		t.Fatalf("not a decision error: %v", err)
	}
	return map[int]string{401: "401", 403: "403", 404: "404"}[st]
}
