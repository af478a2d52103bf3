package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

func headerOf(t *testing.T, token string) jwtHeader {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h jwtHeader
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

func hs256(key []byte, token string) bool {
	i := strings.LastIndexByte(token, '.')
	m := hmac.New(sha256.New, key)
	m.Write([]byte(token[:i]))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)) == token[i+1:]
}

// An issued bearer token must not let anyone test admin-token guesses
// offline: it is signed with the random key stored in the database and
// named by kid, not with a key derived from the admin token.
func TestBearerKeyNotDerivedFromAdminToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.repo("acme", "pubimages", enum.FormatOCI, enum.VisibilityPublic)
	tok := f.fetchToken("", "repository:acme/pubimages/app:pull").body.Token // anonymous

	derived := hmac.New(sha256.New, []byte(testAdminToken))
	derived.Write([]byte("artifact-registry OCI bearer token signing key v1"))
	if hs256(derived.Sum(nil), tok) {
		t.Fatal("the token verifies with the key derived from the admin token")
	}
	keys, err := f.st.SigningKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := headerOf(t, tok)
	if h.Alg != "HS256" || h.Kid != kid(keys[0].ID) || !hs256(keys[0].Key, tok) {
		t.Fatalf("header %+v: not signed with the current stored key %d", h, keys[0].ID)
	}
	if strings.Contains(string(keys[0].Key), testAdminToken) {
		t.Fatal("the stored key contains the admin token")
	}
}

// Two instances that start on an empty database at once create one key
// between them and accept each other's tokens.
func TestSigningKeySharedOnFirstUse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.repo("acme", "pubimages", enum.FormatOCI, enum.VisibilityPublic)
	scope := "repository:acme/pubimages/app:pull"
	instances := []*Authenticator{
		New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock}),
		New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock}),
		New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock}),
	}
	tokens := make([]string, len(instances))
	var wg sync.WaitGroup
	for i, a := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, _, err := a.issue(context.Background(), anonymous, []string{scope}, ContainerResolver(f.st))
			if err != nil {
				t.Error(err)
			}
			tokens[i] = tok
		}()
	}
	wg.Wait()
	for i, tok := range tokens {
		for j, a := range instances {
			if _, err := a.Authenticate(request(bearer(tok))); err != nil {
				t.Errorf("instance %d refused the token of instance %d: %v", j, i, err)
			}
		}
	}
	keys, err := f.st.SigningKeys(context.Background())
	if err != nil || len(keys) != 1 {
		t.Fatalf("%d keys, %v", len(keys), err)
	}
}

// Rotation: the new key signs on every instance within KeyRefresh, a
// token with a new kid verifies at once everywhere, tokens of the
// previous key stay valid until they expire, and the retired key is
// deleted after SigningKeyRetention.
func TestSigningKeyRotation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.repo("acme", "pubimages", enum.FormatOCI, enum.VisibilityPublic)
	scope := "repository:acme/pubimages/app:pull"
	issue := func(a *Authenticator) string {
		t.Helper()
		tok, _, err := a.issue(ctx, anonymous, []string{scope}, ContainerResolver(f.st))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	verify := func(a *Authenticator, tok, what string) {
		t.Helper()
		if _, err := a.Authenticate(request(bearer(tok))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	a, b := f.authn, New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock})
	before := issue(a)
	verify(b, before, "b verifies a's token") // b has the first key cached now
	oldKid := headerOf(t, before).Kid

	newKid, err := RotateSigningKey(ctx, f.st)
	if err != nil {
		t.Fatal(err)
	}
	if newKid == oldKid {
		t.Fatal("rotation kept the kid")
	}
	verify(a, before, "the previous key's token right after the rotation")
	// a learns the new key through a fresh instance's token (unknown kid:
	// reload), b through its refresh.
	c := New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock})
	fresh := issue(c)
	if got := headerOf(t, fresh).Kid; got != newKid {
		t.Fatalf("a new instance signs with kid %s, want %s", got, newKid)
	}
	f.clock.Advance(minKeyReloadGap)
	verify(a, fresh, "a verifies a token of the new key at once")
	if got := headerOf(t, issue(b)).Kid; got != oldKid {
		t.Fatalf("b signs with kid %s within KeyRefresh, want the cached %s", got, oldKid)
	}
	f.clock.Advance(KeyRefresh)
	late := issue(b)
	if got := headerOf(t, late).Kid; got != newKid {
		t.Fatalf("b signs with kid %s after KeyRefresh, want %s", got, newKid)
	}
	verify(a, late, "a verifies b's refreshed token")

	// The old key stays for tokens it signed until they expire, then goes.
	f.clock.Advance(SigningKeyRetention - KeyRefresh - minKeyReloadGap - time.Second)
	keys, _ := f.st.SigningKeys(ctx)
	if len(keys) != 2 {
		t.Fatalf("within the retention: %d keys, want 2", len(keys))
	}
	f.clock.Advance(2 * time.Second)
	if _, err := RotateSigningKey(ctx, f.st); err != nil {
		t.Fatal(err)
	}
	keys, _ = f.st.SigningKeys(ctx)
	for _, k := range keys {
		if kid(k.ID) == oldKid {
			t.Fatalf("the key retired %v ago is still stored", SigningKeyRetention+time.Second)
		}
	}
	if _, err := a.Authenticate(request(bearer(before))); err == nil {
		t.Fatal("a token of the deleted key was accepted")
	}
}

// A token signed elsewhere with a key created after this instance last
// read the keys, even under minKeyReloadGap ago, verifies at once; a
// forged kid newer than every key is refused.
func TestSigningKeyNewKidWithinReloadGap(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.repo("acme", "pubimages", enum.FormatOCI, enum.VisibilityPublic)
	scope := "repository:acme/pubimages/app:pull"
	issue := func(a *Authenticator) string {
		t.Helper()
		tok, _, err := a.issue(ctx, anonymous, []string{scope}, ContainerResolver(f.st))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	b := New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock})
	old := issue(f.authn)
	if _, err := b.Authenticate(request(bearer(old))); err != nil { // b reads the keys now
		t.Fatal(err)
	}
	if _, err := RotateSigningKey(ctx, f.st); err != nil {
		t.Fatal(err)
	}
	c := New(f.st, Options{AdminToken: testAdminToken, Clock: f.clock})
	if _, err := b.Authenticate(request(bearer(issue(c)))); err != nil {
		t.Fatalf("a token of the new key, no time after b read the keys: %v", err)
	}
	n, _ := strconv.ParseInt(headerOf(t, issue(c)).Kid, 10, 64)
	if key, err := b.keys.verifying(ctx, kid(n+100)); key != nil || err != nil {
		t.Fatalf("a forged newer kid: %v %v, want no key", key, err)
	}
	if key, err := b.keys.verifying(ctx, headerOf(t, old).Kid); key == nil || err != nil {
		t.Fatalf("the retired key: %v %v, want it", key, err)
	}
}
