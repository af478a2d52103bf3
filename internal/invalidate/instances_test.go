package invalidate_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/auth"
	"github.com/artifact-registry/artifact-registry/internal/invalidate"
	"github.com/artifact-registry/artifact-registry/internal/testserver"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// The tests run two servers, A and B, each with its own pool and
// Listener, on one database and one bucket, as two serve processes of one
// deployment. A change made through A must be enforced by B within
// invalidate.Bound: B's caches were warmed first, and the fake clocks
// never advance, so no TTL expiry helps. Where it shows something, a
// third server C without a Listener (caches on TTL only) still answers
// from its cache: the change did need the notification.

const pollEvery = 20 * time.Millisecond

// untilBound polls check every 20 ms until it returns true and fails the
// test if that took longer than invalidate.Bound after since.
func untilBound(t *testing.T, what string, since time.Time, check func() bool) {
	t.Helper()
	for !check() {
		if time.Since(since) > 5*invalidate.Bound {
			t.Fatalf("%s: still not enforced after %s", what, time.Since(since).Round(time.Millisecond))
		}
		time.Sleep(pollEvery)
	}
	took := time.Since(since)
	t.Logf("%s: enforced by the other instance after %s", what, took.Round(time.Millisecond))
	if took > invalidate.Bound {
		t.Errorf("%s: took %s, over the bound %s", what, took.Round(time.Millisecond), invalidate.Bound)
	}
}

// noListener is a server on e's database and bucket whose caches only
// have their TTL.
func noListener(t *testing.T, e *testserver.Env) *testserver.Env {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(e.Ctx, e.Store.Pool().Config().Copy())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return testserver.New(t, testserver.Options{Pool: pool, Objects: e.Store.Objects()})
}

func status(e *testserver.Env, method, path, authorization string) int {
	return e.Do(method, path, authorization, nil).Status
}

func mustStatus(t *testing.T, e *testserver.Env, method, path, authorization string, want int) {
	t.Helper()
	if got := e.Do(method, path, authorization, nil); got.Status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, got.Status, got.Body, want)
	}
}

func TestRevokedTokenRefusedByOtherInstance(t *testing.T) {
	a := testserver.New(t, testserver.Options{Listen: true})
	b, c := a.Instance(), noListener(t, a)
	a.Repo("private", enum.FormatOCI, enum.VisibilityPrivate)
	a.PushImage(testserver.Home+"/private/app", "v1")
	secret, tok := a.Mint(testserver.Home, "reader", auth.TokenSpec{Scopes: []enum.TokenScope{enum.TokenScopeRead}})
	path := "/v2/" + testserver.Home + "/private/app/manifests/v1"
	for _, e := range []*testserver.Env{b, c} {
		mustStatus(t, e, http.MethodGet, path, testserver.Basic(secret), http.StatusOK)
	}

	revoked := time.Now()
	if _, err := a.Auth.RevokeToken(a.Ctx, auth.AdminPrincipal(""), auth.NamespaceOf(a.NS[testserver.Home]), tok.ID); err != nil {
		t.Fatal(err)
	}
	untilBound(t, "token revoked", revoked, func() bool {
		return status(b, http.MethodGet, path, testserver.Basic(secret)) == http.StatusUnauthorized
	})
	mustStatus(t, c, http.MethodGet, path, testserver.Basic(secret), http.StatusOK)
}

// A token of another namespace reads an INTERNAL repository: whether its
// own namespace is blocked is part of the cached lookup.
func TestBlockedNamespaceRefusedByOtherInstance(t *testing.T) {
	a := testserver.New(t, testserver.Options{Listen: true})
	b, c := a.Instance(), noListener(t, a)
	a.Repo("internal", enum.FormatOCI, enum.VisibilityInternal)
	a.PushImage(testserver.Home+"/internal/app", "v1")
	secret, _ := a.Mint(testserver.Other, "stranger", auth.TokenSpec{Scopes: []enum.TokenScope{enum.TokenScopeRead}})
	path := "/v2/" + testserver.Home + "/internal/app/manifests/v1"
	for _, e := range []*testserver.Env{b, c} {
		mustStatus(t, e, http.MethodGet, path, testserver.Basic(secret), http.StatusOK)
	}

	blocked := time.Now()
	if _, err := a.Store.SetNamespaceCondition(a.Ctx, testserver.Other, store.ConditionBlocked, true); err != nil {
		t.Fatal(err)
	}
	untilBound(t, "token's namespace blocked", blocked, func() bool {
		return status(b, http.MethodGet, path, testserver.Basic(secret)) != http.StatusOK
	})
	mustStatus(t, c, http.MethodGet, path, testserver.Basic(secret), http.StatusOK)
}

// A suspended namespace refuses writes: its state is read with the target
// on every request.
func TestSuspendedNamespaceRefusedByOtherInstance(t *testing.T) {
	a := testserver.New(t, testserver.Options{Listen: true})
	b := a.Instance()
	a.Repo("app", enum.FormatOCI, enum.VisibilityPrivate)
	a.PushImage(testserver.Home+"/app/img", "v1")
	secret, _ := a.Mint(testserver.Home, "writer", auth.TokenSpec{Scopes: []enum.TokenScope{enum.TokenScopeWrite}})
	upload := "/v2/" + testserver.Home + "/app/img/blobs/uploads/"
	mustStatus(t, b, http.MethodPost, upload, testserver.Basic(secret), http.StatusAccepted)

	suspended := time.Now()
	if _, err := a.Store.SetNamespaceCondition(a.Ctx, testserver.Home, store.ConditionSuspended, true); err != nil {
		t.Fatal(err)
	}
	untilBound(t, "namespace suspended", suspended, func() bool {
		return status(b, http.MethodPost, upload, testserver.Basic(secret)) != http.StatusAccepted
	})
	mustStatus(t, b, http.MethodGet, "/v2/"+testserver.Home+"/app/img/tags/list", testserver.Basic(secret), http.StatusOK)
}

// Visibility is read with the repository on every request.
func TestPrivateRepositoryRefusedByOtherInstance(t *testing.T) {
	a := testserver.New(t, testserver.Options{Listen: true})
	b, c := a.Instance(), noListener(t, a)
	a.Repo("shared", enum.FormatOCI, enum.VisibilityPublic)
	a.PushImage(testserver.Home+"/shared/app", "v1")
	path := "/v2/" + testserver.Home + "/shared/app/manifests/v1"
	for _, e := range []*testserver.Env{b, c} {
		mustStatus(t, e, http.MethodGet, path, "", http.StatusOK)
	}

	private, made := enum.VisibilityPrivate, time.Now()
	if _, err := a.Store.UpdateRepository(a.Ctx, store.RepositoryRef{Namespace: testserver.Home, Name: "shared"},
		store.RepositoryUpdate{Visibility: &private}); err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]*testserver.Env{"with a listener": b, "without one": c} {
		untilBound(t, "repository made private, anonymous pull "+name, made, func() bool {
			s := status(e, http.MethodGet, path, "")
			return s == http.StatusUnauthorized || s == http.StatusNotFound
		})
	}
}

// B's listening connection is terminated: a revocation made while it is
// down, or just as it goes, is enforced within the bound all the same,
// and B's Listener comes back.
func TestListenerConnectionLost(t *testing.T) {
	a := testserver.New(t, testserver.Options{Listen: true})
	b := a.Instance()
	a.Repo("private", enum.FormatOCI, enum.VisibilityPrivate)
	a.PushImage(testserver.Home+"/private/app", "v1")
	path := "/v2/" + testserver.Home + "/private/app/manifests/v1"
	ns := auth.NamespaceOf(a.NS[testserver.Home])

	for _, wait := range []bool{false, true} {
		secret, tok := a.Mint(testserver.Home, "reader-"+map[bool]string{false: "racing", true: "down"}[wait],
			auth.TokenSpec{Scopes: []enum.TokenScope{enum.TokenScopeRead}})
		mustStatus(t, b, http.MethodGet, path, testserver.Basic(secret), http.StatusOK)
		pid := b.Listener.BackendPID()
		var ok bool
		if err := a.Store.Pool().QueryRow(a.Ctx, `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&ok); err != nil || !ok {
			t.Fatalf("terminate the listening backend %d: %v %v", pid, ok, err)
		}
		if wait {
			for b.Listener.BackendPID() == pid && b.Listener.Fresh() {
				time.Sleep(time.Millisecond)
			}
		}
		revoked := time.Now()
		if _, err := a.Auth.RevokeToken(a.Ctx, auth.AdminPrincipal(""), ns, tok.ID); err != nil {
			t.Fatal(err)
		}
		untilBound(t, map[bool]string{false: "revoked as the listener is cut", true: "revoked while the listener is down"}[wait], revoked, func() bool {
			return status(b, http.MethodGet, path, testserver.Basic(secret)) == http.StatusUnauthorized
		})
		back := time.Now()
		for !b.Listener.Fresh() || b.Listener.BackendPID() == pid {
			if time.Since(back) > 10*time.Second {
				t.Fatal("the listener did not reconnect within 10s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("listener fresh again on a new connection after %s", time.Since(back).Round(time.Millisecond))
	}
}

// A rotates the signing key: B signs with the new key within the bound;
// a token A signs with it verifies at once on B and on C, which has no
// listener and read the keys under a second ago.
func TestSigningKeyRotationAcrossInstances(t *testing.T) {
	a := testserver.New(t, testserver.Options{Listen: true})
	b, c := a.Instance(), noListener(t, a)
	a.Repo("private", enum.FormatOCI, enum.VisibilityPrivate)
	a.PushImage(testserver.Home+"/private/app", "v1")
	secret, _ := a.Mint(testserver.Home, "reader", auth.TokenSpec{Scopes: []enum.TokenScope{enum.TokenScopeRead}})
	path := "/v2/" + testserver.Home + "/private/app/manifests/v1"
	scope := "repository:" + testserver.Home + "/private/app:pull"
	for _, e := range []*testserver.Env{b, c} { // both read the keys now
		mustStatus(t, e, http.MethodGet, path, testserver.Bearer(bearerToken(t, e, secret, scope)), http.StatusOK)
	}
	before := kidOf(t, bearerToken(t, b, secret, scope))

	newKid, err := auth.RotateSigningKey(a.Ctx, a.Store)
	if err != nil {
		t.Fatal(err)
	}
	untilBound(t, "B signs with the new key", time.Now(), func() bool {
		return kidOf(t, bearerToken(t, b, secret, scope)) == newKid
	})
	fresh := bearerToken(t, a, secret, scope)
	if kidOf(t, fresh) != newKid || newKid == before {
		t.Fatalf("A signed with kid %s after rotating to %s (was %s)", kidOf(t, fresh), newKid, before)
	}
	for name, e := range map[string]*testserver.Env{"B": b, "C (no listener, keys read under a second ago)": c} {
		if r := e.Do(http.MethodGet, path, testserver.Bearer(fresh), nil); r.Status != http.StatusOK {
			t.Errorf("%s refused a token of the new key: %d %s", name, r.Status, r.Body)
		}
	}
}

func bearerToken(t *testing.T, e *testserver.Env, secret, scope string) string {
	t.Helper()
	q := url.Values{"service": {auth.DefaultService}, "scope": {scope}}
	r := e.Do(http.MethodGet, "/v2/token?"+q.Encode(), testserver.Basic(secret), nil)
	var body struct {
		Token string `json:"token"`
	}
	if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &body) != nil {
		t.Fatalf("token: %d %s", r.Status, r.Body)
	}
	return body.Token
}

func kidOf(t *testing.T, token string) string {
	t.Helper()
	h, err := base64.RawURLEncoding.DecodeString(strings.SplitN(token, ".", 2)[0])
	var header struct {
		Kid string `json:"kid"`
	}
	if err != nil || json.Unmarshal(h, &header) != nil {
		t.Fatalf("token header of %q: %v", token, err)
	}
	return header.Kid
}
