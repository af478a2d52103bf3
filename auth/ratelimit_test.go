package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

func from(addr, authorization string) *http.Request {
	r := request(authorization)
	r.RemoteAddr = addr
	return r
}

const wrongToken = "not-the-admin-token-and-not-an-access-token"

// After FailureLimit failures an address is refused with 429 before its
// credential is checked (even the right one), other addresses and
// anonymous requests are not affected, successful requests never count,
// and the bucket refills at FailureLimit per FailureWindow.
func TestFailureLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{FailureLimit: 3, FailureWindow: time.Minute})
	read := f.mint("read", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead)})
	const attacker, other = "198.51.100.7:5555", "203.0.113.9:4444"

	// A busy client that authenticates is never limited.
	for range 50 {
		if _, err := f.authn.Authenticate(from(other, basic("ci", read))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := f.authn.Authenticate(from(attacker, bearer(wrongToken))); HTTPStatus(err) != 401 {
			t.Fatalf("failure %d: %v, want 401", i+1, err)
		}
	}
	for name, authz := range map[string]string{"wrong": bearer(wrongToken), "right": bearer(testAdminToken), "malformed": "Basic !!"} {
		_, err := f.authn.Authenticate(from(attacker, authz))
		if HTTPStatus(err) != 429 || !errors.Is(err, ErrRateLimited) || GraphQLCode(err) != CodeRateLimited {
			t.Fatalf("%s token after the limit: %v, want 429", name, err)
		}
		if s := RetryAfterSeconds(err); s != 20 {
			t.Fatalf("Retry-After %d s, want 20 (one failure back every 20 s)", s)
		}
	}
	if p, err := f.authn.Authenticate(from(attacker, "")); err != nil || !p.IsAnonymous() {
		t.Fatalf("anonymous from the limited address: %v", err)
	}
	if p, err := f.authn.Authenticate(from(other, bearer(testAdminToken))); err != nil || !p.IsAdmin() {
		t.Fatalf("the right token from another address: %v", err)
	}
	f.clock.Advance(20 * time.Second)
	if p, err := f.authn.Authenticate(from(attacker, bearer(testAdminToken))); err != nil || !p.IsAdmin() {
		t.Fatalf("after the refill, the right token: %v", err)
	}
	// A success gave its token back: one wrong guess is allowed, not two.
	if _, err := f.authn.Authenticate(from(attacker, bearer(wrongToken))); HTTPStatus(err) != 401 {
		t.Fatalf("after the refill, a wrong token: %v", err)
	}
	if _, err := f.authn.Authenticate(from(attacker, bearer(wrongToken))); HTTPStatus(err) != 429 {
		t.Fatalf("second wrong token after the refill: %v", err)
	}

	m := f.authn.limiter
	if got := testutil.ToFloat64(m.failures.WithLabelValues(reasonUnknown)); got != 4 {
		t.Errorf("failures{reason=unknown_token} = %v, want 4", got)
	}
	if got := testutil.ToFloat64(m.limited); got != 4 {
		t.Errorf("rate_limited_total = %v, want 4", got)
	}
	if n := testutil.CollectAndCount(m.failures); n != 1 {
		t.Errorf("%d failure reasons, want 1 (no failure was counted for the 429s)", n)
	}
}

// Concurrent guesses from one address cannot pass the check together:
// exactly the remaining failures are checked, the rest get 429.
func TestFailureLimitConcurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{FailureLimit: 5})
	const addr = "192.0.2.50:1"
	if _, err := f.authn.Authenticate(from(addr, bearer(wrongToken))); HTTPStatus(err) != 401 {
		t.Fatal(err)
	}
	var unauthorized, limited atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.authn.Authenticate(from(addr, bearer(wrongToken)))
			switch HTTPStatus(err) {
			case 401:
				unauthorized.Add(1)
			case 429:
				limited.Add(1)
			default:
				t.Errorf("unexpected %v", err)
			}
		}()
	}
	wg.Wait()
	if unauthorized.Load() != 4 || limited.Load() != 36 {
		t.Fatalf("%d checked, %d limited; want 4 and 36", unauthorized.Load(), limited.Load())
	}
}

// The buckets are bounded: many failing addresses keep at most
// FailureAddresses of them.
func TestFailureLimitBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{FailureLimit: 2, FailureAddresses: 100})
	for i := range 1000 {
		addr := fmt.Sprintf("10.%d.%d.1:80", i/256, i%256)
		if _, err := f.authn.Authenticate(from(addr, bearer(wrongToken))); HTTPStatus(err) != 401 {
			t.Fatal(err)
		}
	}
	if n := f.authn.limiter.buckets.Len(); n > 100 {
		t.Fatalf("%d buckets, want at most 100", n)
	}
	// The most recent addresses are still limited.
	last := fmt.Sprintf("10.%d.%d.1:80", 999/256, 999%256)
	f.authn.Authenticate(from(last, bearer(wrongToken)))
	if _, err := f.authn.Authenticate(from(last, bearer(wrongToken))); HTTPStatus(err) != 429 {
		t.Fatalf("recent address: %v", err)
	}
}

// Without a limit (FailureLimit 0) nothing is refused, failures are still
// counted.
func TestFailureLimitOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for range 30 {
		if _, err := f.authn.Authenticate(from("192.0.2.1:1", bearer(wrongToken))); HTTPStatus(err) != 401 {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(f.authn.limiter.failures.WithLabelValues(reasonUnknown)); got != 30 {
		t.Fatalf("failures = %v", got)
	}
}

// The token endpoint's password grant (secret in the body) is limited too,
// with the OCI error shape, 429 and Retry-After.
func TestFailureLimitTokenEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{FailureLimit: 2})
	post := func(password string) *httptest.ResponseRecorder {
		form := url.Values{"grant_type": {"password"}, "username": {"x"}, "password": {password}, "service": {DefaultService}}
		r := httptest.NewRequest(http.MethodPost, "/v2/token", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = "192.0.2.77:1"
		w := httptest.NewRecorder()
		f.authn.TokenHandler(ContainerResolver(f.st)).ServeHTTP(w, r)
		return w
	}
	for range 2 {
		if w := post(wrongToken); w.Code != 401 {
			t.Fatalf("wrong password: %d", w.Code)
		}
	}
	w := post(testAdminToken)
	if w.Code != 429 || w.Header().Get("Retry-After") != "30" || !strings.Contains(w.Body.String(), `"code":"TOOMANYREQUESTS"`) {
		t.Fatalf("after the limit: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	// GET with Basic credentials goes through Authenticate: same bucket.
	r := httptest.NewRequest(http.MethodGet, "/v2/token?service="+DefaultService, nil)
	r.Header.Set("Authorization", basic("x", testAdminToken))
	r.RemoteAddr = "192.0.2.77:2"
	w = httptest.NewRecorder()
	f.authn.TokenHandler(ContainerResolver(f.st)).ServeHTTP(w, r)
	if w.Code != 429 {
		t.Fatalf("GET after the limit: %d", w.Code)
	}
}

func TestClientAddr(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, c := range []struct{ peer, xff, want string }{
		{"192.0.2.1:1234", "", "192.0.2.1"},
		{"192.0.2.1:1234", "203.0.113.5", "192.0.2.1"},                   // untrusted peer: header ignored
		{"10.1.2.3:80", "203.0.113.5", "203.0.113.5"},                    // trusted proxy
		{"10.1.2.3:80", "1.1.1.1, 203.0.113.5, 10.9.9.9", "203.0.113.5"}, // nearest untrusted hop, not the forgeable first
		{"10.1.2.3:80", "10.9.9.9", "10.1.2.3"},                          // only proxies: the peer
		{"10.1.2.3:80", "garbage", "10.1.2.3"},
		{"[::1]:80", "2001:db8::7", "2001:db8::7"},
		{"[::ffff:192.0.2.9]:80", "", "192.0.2.9"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = c.peer
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := ClientAddr(r, trusted).String(); got != c.want {
			t.Errorf("peer %s XFF %q: %s, want %s", c.peer, c.xff, got, c.want)
		}
	}
	// IPv6 clients share a bucket per /64.
	l := newFailureLimiter(Options{FailureLimit: 1, FailureWindow: time.Minute, FailureAddresses: 10, Clock: &fakeclock.Clock{}}.withDefaults())
	a := httptest.NewRequest(http.MethodGet, "/", nil)
	a.RemoteAddr = "[2001:db8:1:2::1]:1"
	b := httptest.NewRequest(http.MethodGet, "/", nil)
	b.RemoteAddr = "[2001:db8:1:2:ffff::9]:1"
	if l.clientKey(a) != l.clientKey(b) {
		t.Fatalf("%v and %v differ", l.clientKey(a), l.clientKey(b))
	}
}
