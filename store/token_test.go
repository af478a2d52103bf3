package store

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/internal/testsupport/fakeclock"
	"github.com/artifact-registry/artifact-registry/store/enum"
	"github.com/artifact-registry/artifact-registry/store/objstore"
)

// tokenFixture is a fresh database with namespace "acme" holding
// repositories "alpha" and "beta", and namespace "other".
type tokenFixture struct {
	st    *Store
	clock *fakeclock.Clock
	ns    *Namespace
	other *Namespace
	alpha *Repository
	beta  *Repository
}

func newTokenFixture(t *testing.T) *tokenFixture {
	t.Helper()
	ctx := context.Background()
	f := &tokenFixture{clock: newFakeClock()}
	f.st = New(testdb.New(t), objstore.NewMem(), Options{Clock: f.clock})
	var err error
	if f.ns, err = f.st.CreateNamespace(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if f.other, err = f.st.CreateNamespace(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		name string
		dst  **Repository
	}{{"alpha", &f.alpha}, {"beta", &f.beta}} {
		*r.dst, err = f.st.CreateRepository(ctx, NewRepository{Namespace: "acme", Name: r.name,
			Format: enum.FormatMaven, Kind: enum.KindHosted, Visibility: enum.VisibilityPrivate})
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func secretHash(s string) [32]byte { return sha256.Sum256([]byte(s)) }

func (f *tokenFixture) create(t *testing.T, in NewAccessToken) *AccessToken {
	t.Helper()
	if in.NamespaceID == uuid.Nil {
		in.NamespaceID = f.ns.ID
	}
	if in.SecretSHA256 == ([32]byte{}) {
		in.SecretSHA256 = secretHash(in.Name + "-secret")
	}
	if in.Scopes == nil {
		in.Scopes = []enum.TokenScope{enum.TokenScopeRead}
	}
	tok, err := f.st.CreateAccessToken(context.Background(), in)
	if err != nil {
		t.Fatalf("create token %q: %v", in.Name, err)
	}
	return tok
}

func wantCode(t *testing.T, err error, code Code) {
	t.Helper()
	if got := CodeOf(err); got != code {
		t.Fatalf("error %v: want code %s, got %q", err, code, got)
	}
}

func TestAccessTokenCreateAndLookup(t *testing.T) {
	t.Parallel()
	f := newTokenFixture(t)
	ctx := context.Background()
	exp := f.clock.Now().Add(24 * time.Hour)
	tok := f.create(t, NewAccessToken{
		Name:         "ci deploy",
		Scopes:       []enum.TokenScope{enum.TokenScopeWrite, enum.TokenScopeRead, enum.TokenScopeWrite},
		Repositories: []string{"beta", "alpha", "beta"},
		ExpiresAt:    &exp,
		SecretSHA256: secretHash("s1"),
	})
	if tok.ID.Version() != 7 || tok.NamespaceID != f.ns.ID || tok.Name != "ci deploy" {
		t.Fatalf("token %+v", tok)
	}
	if !slices.Equal(tok.Scopes, []enum.TokenScope{enum.TokenScopeRead, enum.TokenScopeWrite}) {
		t.Fatalf("scopes %v: want sorted, deduplicated", tok.Scopes)
	}
	wantRepos := []uuid.UUID{f.alpha.ID, f.beta.ID}
	slices.SortFunc(wantRepos, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	if !slices.Equal(tok.RepositoryIDs, wantRepos) {
		t.Fatalf("repository ids %v, want %v", tok.RepositoryIDs, wantRepos)
	}
	if tok.ExpiresAt == nil || !tok.ExpiresAt.Equal(exp) || tok.RevokedAt != nil || tok.LastUsedAt != nil {
		t.Fatalf("token times %+v", tok)
	}
	if !tok.CreatedAt.Equal(f.clock.Now()) {
		t.Fatalf("created_at %v, want the clock's %v", tok.CreatedAt, f.clock.Now())
	}

	got, err := f.st.AccessTokenByHash(ctx, f.ns.ID, secretHash("s1"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != tok.ID || got.Namespace.Slug != "acme" || got.Namespace.ID != f.ns.ID || !slices.Equal(got.RepositoryIDs, wantRepos) {
		t.Fatalf("lookup %+v", got)
	}
	if _, err := f.st.AccessTokenByHash(ctx, f.ns.ID, secretHash("s2")); !HasCode(err, CodeAccessTokenNotFound) {
		t.Fatalf("unknown hash: %v", err)
	}
	// The namespace is part of the key: the right hash under another
	// namespace finds nothing.
	if _, err := f.st.AccessTokenByHash(ctx, f.other.ID, secretHash("s1")); !HasCode(err, CodeAccessTokenNotFound) {
		t.Fatalf("hash under another namespace: %v", err)
	}
	byID, err := f.st.AccessTokenByID(ctx, f.ns.ID, tok.ID)
	if err != nil || byID.ID != tok.ID {
		t.Fatalf("by id: %v %v", byID, err)
	}
	if _, err := f.st.AccessTokenByID(ctx, f.other.ID, tok.ID); !HasCode(err, CodeAccessTokenNotFound) {
		t.Fatalf("by id under another namespace: %v", err)
	}

	// Unrestricted token: NULL repository_ids.
	all := f.create(t, NewAccessToken{Name: "all", SecretSHA256: secretHash("s3")})
	if all.RepositoryIDs != nil {
		t.Fatalf("unrestricted token has repository ids %v", all.RepositoryIDs)
	}
	// The condition columns come with the lookup.
	if _, err := f.st.SetNamespaceCondition(ctx, "acme", ConditionSuspended, true); err != nil {
		t.Fatal(err)
	}
	got, err = f.st.AccessTokenByHash(ctx, f.ns.ID, secretHash("s3"))
	if err != nil || got.Namespace.SuspendedAt == nil || got.Namespace.BlockedAt != nil {
		t.Fatalf("lookup in a suspended namespace: %+v %v", got, err)
	}
}

func TestAccessTokenCreateRefusals(t *testing.T) {
	t.Parallel()
	f := newTokenFixture(t)
	ctx := context.Background()
	past := f.clock.Now().Add(-time.Second)
	now := f.clock.Now()
	long := strings.Repeat("x", MaxNameLength+1)
	cases := []struct {
		name string
		in   NewAccessToken
		code Code
	}{
		{"empty name", NewAccessToken{Name: ""}, CodeInvalidInput},
		{"long name", NewAccessToken{Name: long}, CodeInvalidInput},
		{"padded name", NewAccessToken{Name: " ci"}, CodeInvalidInput},
		{"control character", NewAccessToken{Name: "ci\n"}, CodeInvalidInput},
		{"invalid UTF-8", NewAccessToken{Name: "ci\xff"}, CodeInvalidInput},
		{"no scopes", NewAccessToken{Name: "a", Scopes: []enum.TokenScope{}}, CodeInvalidInput},
		{"unknown scope", NewAccessToken{Name: "a", Scopes: []enum.TokenScope{7}}, CodeInvalidInput},
		{"empty repository list", NewAccessToken{Name: "a", Repositories: []string{}}, CodeInvalidInput},
		{"unknown repository", NewAccessToken{Name: "a", Repositories: []string{"alpha", "gamma"}}, CodeNotFound},
		{"repository of another namespace", NewAccessToken{Name: "a", NamespaceID: f.other.ID, Repositories: []string{"alpha"}}, CodeNotFound},
		{"expired already", NewAccessToken{Name: "a", ExpiresAt: &past}, CodeInvalidInput},
		{"expires now", NewAccessToken{Name: "a", ExpiresAt: &now}, CodeInvalidInput},
		{"unknown namespace", NewAccessToken{Name: "a", NamespaceID: uuid.Must(uuid.NewV7())}, CodeNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			if in.NamespaceID == uuid.Nil {
				in.NamespaceID = f.ns.ID
			}
			if in.Scopes == nil {
				in.Scopes = []enum.TokenScope{enum.TokenScopeRead}
			}
			in.SecretSHA256 = secretHash(c.name)
			_, err := f.st.CreateAccessToken(ctx, in)
			wantCode(t, err, c.code)
		})
	}
	// A trashed repository cannot be listed.
	if _, err := f.st.SoftDeleteRepository(ctx, RepositoryRef{Namespace: "acme", Name: "beta"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.st.CreateAccessToken(ctx, NewAccessToken{NamespaceID: f.ns.ID, Name: "t", Scopes: []enum.TokenScope{0},
		Repositories: []string{"beta"}, SecretSHA256: secretHash("trash")})
	wantCode(t, err, CodeNotFound)
	// Nothing was written by any refusal.
	toks, _, err := f.st.ListAccessTokens(ctx, f.ns.ID, nil, 100, true)
	if err != nil || len(toks) != 0 {
		t.Fatalf("tokens after refusals: %d %v", len(toks), err)
	}
	// A deleted namespace gets no tokens.
	if _, err := f.st.SoftDeleteNamespace(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	_, err = f.st.CreateAccessToken(ctx, NewAccessToken{NamespaceID: f.other.ID, Name: "t", Scopes: []enum.TokenScope{0}, SecretSHA256: secretHash("deleted")})
	wantCode(t, err, CodeConflict)
}

func TestAccessTokenNamesAndRevocation(t *testing.T) {
	t.Parallel()
	f := newTokenFixture(t)
	ctx := context.Background()
	first := f.create(t, NewAccessToken{Name: "ci", SecretSHA256: secretHash("a")})
	_, err := f.st.CreateAccessToken(ctx, NewAccessToken{NamespaceID: f.ns.ID, Name: "ci",
		Scopes: []enum.TokenScope{0}, SecretSHA256: secretHash("b")})
	wantCode(t, err, CodeAlreadyExists)
	// The same name in another namespace is fine.
	f.create(t, NewAccessToken{NamespaceID: f.other.ID, Name: "ci", SecretSHA256: secretHash("c")})

	f.clock.Advance(time.Minute)
	revoked, err := f.st.RevokeAccessToken(ctx, f.ns.ID, first.ID)
	if err != nil || revoked.RevokedAt == nil || !revoked.RevokedAt.Equal(f.clock.Now()) {
		t.Fatalf("revoke: %+v %v", revoked, err)
	}
	// Idempotent: the first revocation time stays.
	f.clock.Advance(time.Minute)
	again, err := f.st.RevokeAccessToken(ctx, f.ns.ID, first.ID)
	if err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("revoke again: %+v %v", again, err)
	}
	_, err = f.st.RevokeAccessToken(ctx, f.ns.ID, uuid.Must(uuid.NewV7()))
	wantCode(t, err, CodeNotFound)
	_, err = f.st.RevokeAccessToken(ctx, f.other.ID, first.ID)
	wantCode(t, err, CodeNotFound)
	// A revoked token frees its name; the lookup still returns it, revoked.
	f.create(t, NewAccessToken{Name: "ci", SecretSHA256: secretHash("d")})
	got, err := f.st.AccessTokenByHash(ctx, f.ns.ID, secretHash("a"))
	if err != nil || got.RevokedAt == nil {
		t.Fatalf("lookup of the revoked token: %+v %v", got, err)
	}
}

func TestAccessTokenListKeyset(t *testing.T) {
	t.Parallel()
	f := newTokenFixture(t)
	ctx := context.Background()
	var want []uuid.UUID
	for i := range 7 {
		tok := f.create(t, NewAccessToken{Name: fmt.Sprintf("t%d", i), SecretSHA256: secretHash(fmt.Sprint(i))})
		want = append([]uuid.UUID{tok.ID}, want...) // newest first
		if i%2 == 0 {
			f.clock.Advance(time.Second) // some share created_at: id breaks the tie
		}
	}
	f.create(t, NewAccessToken{NamespaceID: f.other.ID, Name: "elsewhere", SecretSHA256: secretHash("x")})
	if _, err := f.st.RevokeAccessToken(ctx, f.ns.ID, want[2]); err != nil {
		t.Fatal(err)
	}
	for _, includeRevoked := range []bool{true, false} {
		expect := want
		if !includeRevoked {
			expect = slices.Delete(slices.Clone(want), 2, 3)
		}
		var got []uuid.UUID
		var after *AccessTokenKey
		pages := 0
		for {
			page, more, err := f.st.ListAccessTokens(ctx, f.ns.ID, after, 2, includeRevoked)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, tok := range page {
				got = append(got, tok.ID)
			}
			if !more {
				break
			}
			k := page[len(page)-1].Key()
			after = &k
		}
		if !slices.Equal(got, expect) {
			t.Fatalf("includeRevoked=%v: listed %v, want %v", includeRevoked, got, expect)
		}
		if pages != (len(expect)+1)/2 {
			t.Fatalf("includeRevoked=%v: %d pages for %d tokens", includeRevoked, pages, len(expect))
		}
	}
	_, _, err := f.st.ListAccessTokens(ctx, f.ns.ID, nil, 0, false)
	wantCode(t, err, CodeInvalidInput)
}

func TestTouchAccessTokens(t *testing.T) {
	t.Parallel()
	f := newTokenFixture(t)
	ctx := context.Background()
	a := f.create(t, NewAccessToken{Name: "a", SecretSHA256: secretHash("a")})
	b := f.create(t, NewAccessToken{Name: "b", SecretSHA256: secretHash("b")})
	c := f.create(t, NewAccessToken{NamespaceID: f.other.ID, Name: "c", SecretSHA256: secretHash("c")})
	t0 := f.clock.Now().Add(time.Minute).Truncate(time.Microsecond)
	lastUsed := func(ns uuid.UUID, sha string) *time.Time {
		t.Helper()
		got, err := f.st.AccessTokenByHash(ctx, ns, secretHash(sha))
		if err != nil {
			t.Fatal(err)
		}
		return got.LastUsedAt
	}

	if n, err := f.st.TouchAccessTokens(ctx, nil); err != nil || n != 0 {
		t.Fatalf("empty touch: %d %v", n, err)
	}
	n, err := f.st.TouchAccessTokens(ctx, []AccessTokenUse{
		{f.ns.ID, a.ID, t0},
		{f.ns.ID, a.ID, t0.Add(time.Second)}, // the max wins within a batch
		{f.ns.ID, b.ID, t0},
		{f.other.ID, c.ID, t0.Add(2 * time.Second)},
		{f.ns.ID, uuid.Must(uuid.NewV7()), t0}, // a deleted token: skipped
	})
	if err != nil || n != 3 {
		t.Fatalf("touch: %d rows, %v", n, err)
	}
	if got := lastUsed(f.ns.ID, "a"); got == nil || !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("a last used %v", got)
	}
	if got := lastUsed(f.other.ID, "c"); got == nil || !got.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("c last used %v", got)
	}
	// Never backwards, and no rewrite of an equal value.
	n, err = f.st.TouchAccessTokens(ctx, []AccessTokenUse{{f.ns.ID, a.ID, t0}, {f.ns.ID, b.ID, t0}})
	if err != nil || n != 0 {
		t.Fatalf("older touch: %d rows, %v", n, err)
	}
	if got := lastUsed(f.ns.ID, "a"); !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("a moved back to %v", got)
	}
	n, err = f.st.TouchAccessTokens(ctx, []AccessTokenUse{{f.ns.ID, b.ID, t0.Add(time.Hour)}})
	if err != nil || n != 1 || !lastUsed(f.ns.ID, "b").Equal(t0.Add(time.Hour)) {
		t.Fatalf("newer touch: %d rows, %v", n, err)
	}
}

// Two replicas flushing overlapping sets at once neither deadlock nor
// lose the maximum.
func TestTouchAccessTokensConcurrent(t *testing.T) {
	t.Parallel()
	f := newTokenFixture(t)
	ctx := context.Background()
	var ids []uuid.UUID
	for i := range 20 {
		ids = append(ids, f.create(t, NewAccessToken{Name: fmt.Sprint(i), SecretSHA256: secretHash(fmt.Sprint(i))}).ID)
	}
	base := f.clock.Now().Truncate(time.Microsecond)
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			var err error
			for round := range 20 {
				uses := make([]AccessTokenUse, 0, len(ids))
				for i := range ids {
					// Workers visit the tokens in different orders.
					j := (i*7 + w*3) % len(ids)
					uses = append(uses, AccessTokenUse{f.ns.ID, ids[j], base.Add(time.Duration(round*8+w) * time.Millisecond)})
				}
				if _, err = f.st.TouchAccessTokens(ctx, uses); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent touch: %v", err)
		}
	}
	want := base.Add(time.Duration(19*8+7) * time.Millisecond)
	for i := range ids {
		got, err := f.st.AccessTokenByHash(ctx, f.ns.ID, secretHash(fmt.Sprint(i)))
		if err != nil || got.LastUsedAt == nil || !got.LastUsedAt.Equal(want) {
			t.Fatalf("token %d last used %v, want %v (%v)", i, got.LastUsedAt, want, err)
		}
	}
}
