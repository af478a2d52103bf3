package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// matrixFixture mints one token per column of the matrix and returns the
// Authorization header of each.
func matrixFixture(t *testing.T) (*fixture, map[string]string) {
	f := newFixture(t, Options{})
	R, W, D, A := enum.TokenScopeRead, enum.TokenScopeWrite, enum.TokenScopeDelete, enum.TokenScopeAdmin
	soon := f.clock.Now().Add(time.Hour)
	f.mint("read", f.acme, TokenSpec{Scopes: scopes(R)})
	f.mint("write", f.acme, TokenSpec{Scopes: scopes(W)})
	f.mint("delete", f.acme, TokenSpec{Scopes: scopes(D)})
	f.mint("admin", f.acme, TokenSpec{Scopes: scopes(A)})
	f.mint("read+write", f.acme, TokenSpec{Scopes: scopes(R, W)})
	f.mint("other", f.other, TokenSpec{Scopes: scopes(A)})
	f.mint("other-restricted", f.other, TokenSpec{Scopes: scopes(A), Repositories: []string{"shared"}})
	f.mint("expired", f.acme, TokenSpec{Scopes: scopes(A), ExpiresAt: &soon})
	f.mint("revoked", f.acme, TokenSpec{Scopes: scopes(A)})
	f.mint("restricted", f.acme, TokenSpec{Scopes: scopes(A), Repositories: []string{"elsewhere"}})
	f.mint("listed", f.acme, TokenSpec{Scopes: scopes(W), Repositories: []string{"public", "internal", "private"}})
	if _, err := f.authn.RevokeToken(context.Background(), f.admin, NamespaceOf(f.acme), f.tokens["revoked"].ID); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Hour) // "expired" expires
	h := map[string]string{"none": "", "superuser": basic("admin", testAdminToken)}
	for label, secret := range f.secrets {
		// Half the tokens go as Basic passwords, half as Bearer.
		if len(label)%2 == 0 {
			h[label] = basic("ci-user", secret)
		} else {
			h[label] = bearer(secret)
		}
	}
	return f, h
}

// TestMatrix is visibility × token × action, each cell the exact outcome
// through Authenticate and Authorize ("ok", or the HTTP status).
func TestMatrix(t *testing.T) {
	t.Parallel()
	f, headers := matrixFixture(t)
	actions := []Action{ActionRead, ActionWrite, ActionDelete, ActionAdmin}
	//                         read  write delete admin
	want := map[string]map[enum.Visibility]string{
		"none": {
			enum.VisibilityPublic:   "ok 401 401 401",
			enum.VisibilityInternal: "401 401 401 401",
			enum.VisibilityPrivate:  "401 401 401 401",
		},
		"read": {
			enum.VisibilityPublic:   "ok 403 403 403",
			enum.VisibilityInternal: "ok 403 403 403",
			enum.VisibilityPrivate:  "ok 403 403 403",
		},
		"write": {
			enum.VisibilityPublic:   "ok ok 403 403",
			enum.VisibilityInternal: "ok ok 403 403",
			enum.VisibilityPrivate:  "ok ok 403 403",
		},
		"read+write": {
			enum.VisibilityPublic:   "ok ok 403 403",
			enum.VisibilityInternal: "ok ok 403 403",
			enum.VisibilityPrivate:  "ok ok 403 403",
		},
		"delete": {
			enum.VisibilityPublic:   "ok 403 ok 403",
			enum.VisibilityInternal: "ok 403 ok 403",
			enum.VisibilityPrivate:  "ok 403 ok 403",
		},
		"admin": {
			enum.VisibilityPublic:   "ok ok ok ok",
			enum.VisibilityInternal: "ok ok ok ok",
			enum.VisibilityPrivate:  "ok ok ok ok",
		},
		"other": { // ADMIN token of namespace "other"
			enum.VisibilityPublic:   "ok 403 403 403",
			enum.VisibilityInternal: "ok 403 403 403",
			enum.VisibilityPrivate:  "403 403 403 403",
		},
		"other-restricted": { // ADMIN of "other", restricted to other/shared
			enum.VisibilityPublic:   "ok 403 403 403",
			enum.VisibilityInternal: "403 403 403 403",
			enum.VisibilityPrivate:  "403 403 403 403",
		},
		"expired": {
			enum.VisibilityPublic:   "401 401 401 401",
			enum.VisibilityInternal: "401 401 401 401",
			enum.VisibilityPrivate:  "401 401 401 401",
		},
		"revoked": {
			enum.VisibilityPublic:   "401 401 401 401",
			enum.VisibilityInternal: "401 401 401 401",
			enum.VisibilityPrivate:  "401 401 401 401",
		},
		"superuser": {
			enum.VisibilityPublic:   "ok ok ok ok",
			enum.VisibilityInternal: "ok ok ok ok",
			enum.VisibilityPrivate:  "ok ok ok ok",
		},
		"restricted": { // ADMIN of acme, restricted to acme/elsewhere
			enum.VisibilityPublic:   "ok 403 403 403",
			enum.VisibilityInternal: "403 403 403 403",
			enum.VisibilityPrivate:  "403 403 403 403",
		},
		"listed": { // WRITE of acme, restricted to the three repositories
			enum.VisibilityPublic:   "ok ok 403 403",
			enum.VisibilityInternal: "ok ok 403 403",
			enum.VisibilityPrivate:  "ok ok 403 403",
		},
	}
	if len(want) != len(headers) {
		t.Fatalf("the matrix has %d columns for %d credentials", len(want), len(headers))
	}
	for label, byVis := range want {
		for vis, cells := range byVis {
			target := RepositoryTarget(f.acme, f.repos[vis])
			var got []string
			for _, a := range actions {
				got = append(got, f.outcome(headers[label], a, target))
			}
			if g := strings.Join(got, " "); g != cells {
				t.Errorf("%-16s %-8s read/write/delete/admin: got %q, want %q", label, vis, g, cells)
			}
		}
	}

	// The namespace itself as the target (create repository = admin,
	// token listing = admin-read).
	nsActions := []Action{ActionRead, ActionWrite, ActionDelete, ActionAdmin, ActionAdminRead}
	//                           read write delete admin admin-read
	wantNS := map[string]string{
		"none":             "ok 401 401 401 401",
		"read":             "ok 403 403 403 403",
		"write":            "ok ok 403 403 403",
		"read+write":       "ok ok 403 403 403",
		"delete":           "ok 403 ok 403 403",
		"admin":            "ok ok ok ok ok",
		"other":            "ok 403 403 403 403",
		"other-restricted": "ok 403 403 403 403",
		"expired":          "401 401 401 401 401",
		"revoked":          "401 401 401 401 401",
		"superuser":        "ok ok ok ok ok",
		"restricted":       "ok 403 403 403 403",
		"listed":           "ok 403 403 403 403",
	}
	for label, cells := range wantNS {
		var got []string
		for _, a := range nsActions {
			got = append(got, f.outcome(headers[label], a, NamespaceTarget(f.acme)))
		}
		if g := strings.Join(got, " "); g != cells {
			t.Errorf("%-16s namespace read/write/delete/admin/admin-read: got %q, want %q", label, g, cells)
		}
	}

	// The restricted token acts on its one repository.
	if got := f.outcome(headers["restricted"], ActionAdmin, RepositoryTarget(f.acme, f.else_)); got != "ok" {
		t.Errorf("restricted token on its repository: %s", got)
	}
	// INTERNAL across namespaces, the other way: acme's tokens read
	// other/shared, acme's restricted token does not.
	shared := RepositoryTarget(f.namespace("other"), f.shared)
	for label, cell := range map[string]string{"read": "ok", "admin": "ok", "restricted": "403", "listed": "403", "none": "401", "other-restricted": "ok"} {
		if got := f.outcome(headers[label], ActionRead, shared); got != cell {
			t.Errorf("%s reading other/shared (INTERNAL): %s, want %s", label, got, cell)
		}
	}
}

// The repository filter of listings agrees with Authorize(ActionRead) on
// every repository, for every credential.
func TestReadableRepositoriesAgreesWithAuthorize(t *testing.T) {
	t.Parallel()
	f, headers := matrixFixture(t)
	repos := []*store.Repository{f.repos[enum.VisibilityPublic], f.repos[enum.VisibilityInternal],
		f.repos[enum.VisibilityPrivate], f.else_, f.images}
	for label, h := range headers {
		p, err := f.authn.Authenticate(request(h))
		if err != nil {
			continue // expired, revoked: nothing to list
		}
		for _, ns := range []*store.Namespace{f.acme, f.other} {
			filter := ReadableRepositories(p, NamespaceOf(ns))
			list := repos
			if ns == f.other {
				list = []*store.Repository{f.shared}
			}
			for _, r := range list {
				allowed := Authorize(context.Background(), p, ActionRead, RepositoryTarget(ns, r)) == nil
				if got := filter.Allows(*RepositoryOf(r)); got != allowed {
					t.Errorf("%s on %s/%s: filter %v, Authorize %v", label, ns.Slug, r.Name, got, allowed)
				}
			}
		}
	}
}

// Service conditions × read/write, for a token of the namespace, the
// super-user and anonymous readers of a PUBLIC repository.
func TestServiceConditions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type cell struct{ read, write string }
	cases := []struct {
		condition string
		impose    func(f *fixture)
		token     cell // WRITE+READ token of acme on the PRIVATE repository
		superuser cell // on the PRIVATE repository
		anonymous cell // on the PUBLIC repository
		reason    Reason
	}{
		{"active", func(*fixture) {}, cell{"ok", "ok"}, cell{"ok", "ok"}, cell{"ok", "401"}, ""},
		{"suspended", condition(store.ConditionSuspended), cell{"ok", "403"}, cell{"ok", "403"}, cell{"ok", "401"}, ReasonSuspended},
		{"blocked", condition(store.ConditionBlocked), cell{"403", "403"}, cell{"403", "403"}, cell{"403", "401"}, ReasonBlocked},
		{"disabled", condition(store.ConditionDisabled), cell{"403", "403"}, cell{"403", "403"}, cell{"403", "401"}, ReasonDisabled},
		// Tokens of a deleted or purged namespace are invalid.
		{"deleted", func(f *fixture) {
			if _, err := f.st.SoftDeleteNamespace(ctx, "acme"); err != nil {
				f.t.Fatal(err)
			}
		}, cell{"401", "401"}, cell{"404", "404"}, cell{"404", "401"}, ReasonDeleted},
		{"purged", func(f *fixture) {
			if _, err := f.st.Pool().Exec(ctx, `UPDATE namespaces SET purged_at = now() WHERE slug = 'acme'`); err != nil {
				f.t.Fatal(err)
			}
		}, cell{"401", "401"}, cell{"404", "404"}, cell{"404", "401"}, ReasonPurged},
	}
	for _, c := range cases {
		t.Run(c.condition, func(t *testing.T) {
			f := newFixture(t, Options{})
			token := bearer(f.mint("rw", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeRead, enum.TokenScopeWrite)}))
			f.mint("admin", f.acme, TokenSpec{Scopes: scopes(enum.TokenScopeAdmin)})
			// Warm the cache, then change the condition: the cached
			// namespace state is used until the TTL passes.
			if got := f.outcome(token, ActionRead, RepositoryTarget(f.acme, f.repos[enum.VisibilityPrivate])); got != "ok" {
				t.Fatalf("before: %s", got)
			}
			c.impose(f)
			f.clock.Advance(DefaultCacheTTL)
			ns := f.namespace("acme")
			private := RepositoryTarget(ns, f.repos[enum.VisibilityPrivate])
			public := RepositoryTarget(ns, f.repos[enum.VisibilityPublic])
			check := func(who, header string, target Target, want cell) {
				t.Helper()
				got := cell{f.outcome(header, ActionRead, target), f.outcome(header, ActionWrite, target)}
				if got != want {
					t.Errorf("%s: read/write %v, want %v", who, got, want)
				}
			}
			check("token", token, private, c.token)
			check("superuser", basic("x", testAdminToken), private, c.superuser)
			check("anonymous", "", public, c.anonymous)
			if c.reason == "" {
				return
			}
			// The error names the reason and says what is refused.
			p, _ := f.authn.Authenticate(request(basic("x", testAdminToken)))
			err := Authorize(ctx, p, ActionWrite, private)
			var nu *NamespaceUnavailableError
			if !errors.As(err, &nu) || nu.Reason != c.reason || nu.Namespace != "acme" || !errors.Is(err, ErrNamespaceUnavailable) {
				t.Fatalf("write error %v, want reason %s", err, c.reason)
			}
			if c.reason == ReasonSuspended && !strings.Contains(err.Error(), "read-only") {
				t.Errorf("suspended message %q does not say read-only", err)
			}
			// The super-user's administration is exempt; a namespace
			// token's is not (and needs writes to be served).
			for _, a := range []Action{ActionAdmin, ActionAdminRead} {
				if err := Authorize(ctx, p, a, NamespaceTarget(ns)); err != nil {
					t.Errorf("super-user %s in a %s namespace: %v", a, c.condition, err)
				}
			}
			if c.reason == ReasonSuspended {
				admin, err := f.authn.Authenticate(request(bearer(f.secrets["admin"])))
				if err != nil {
					t.Fatal(err)
				}
				if err := Authorize(ctx, admin, ActionAdmin, NamespaceTarget(ns)); !errors.As(err, &nu) || nu.Reason != ReasonSuspended {
					t.Errorf("token administration in a suspended namespace: %v", err)
				}
				if err := Authorize(ctx, admin, ActionAdminRead, NamespaceTarget(ns)); err != nil {
					t.Errorf("token admin-read in a suspended namespace: %v", err)
				}
			}
		})
	}
}

func condition(c store.NamespaceCondition) func(f *fixture) {
	return func(f *fixture) {
		if _, err := f.st.SetNamespaceCondition(context.Background(), "acme", c, true); err != nil {
			f.t.Fatal(err)
		}
	}
}

// A token of a blocked or disabled namespace gets nothing anywhere, not
// even what anonymous callers get; the error names its own namespace.
func TestTokenOfUnavailableNamespace(t *testing.T) {
	t.Parallel()
	for _, c := range []store.NamespaceCondition{store.ConditionBlocked, store.ConditionDisabled} {
		t.Run(string(c), func(t *testing.T) {
			f := newFixture(t, Options{})
			h := bearer(f.mint("o", f.other, TokenSpec{Scopes: scopes(enum.TokenScopeRead)}))
			if _, err := f.st.SetNamespaceCondition(context.Background(), "other", c, true); err != nil {
				t.Fatal(err)
			}
			p, err := f.authn.Authenticate(request(h))
			if err != nil {
				t.Fatal(err)
			}
			err = Authorize(context.Background(), p, ActionRead, RepositoryTarget(f.acme, f.repos[enum.VisibilityPublic]))
			var nu *NamespaceUnavailableError
			if !errors.As(err, &nu) || nu.Namespace != "other" || HTTPStatus(err) != 403 {
				t.Fatalf("read of acme/public: %v", err)
			}
			if fl := ReadableRepositories(p, NamespaceOf(f.acme)); fl.All || len(fl.Visibilities)+len(fl.IDs) != 0 {
				t.Fatalf("filter %+v, want nothing", fl)
			}
		})
	}
}

func TestMaskNotFound(t *testing.T) {
	t.Parallel()
	f, headers := matrixFixture(t)
	notFound := errors.New("repository acme/nope not found")
	want := map[string]string{
		"none": "401", "read": "404", "write": "404", "read+write": "404", "delete": "404", "admin": "404",
		"superuser": "404", "other": "403", "other-restricted": "403", "restricted": "403", "listed": "403",
	}
	for label, cell := range want {
		p, err := f.authn.Authenticate(request(headers[label]))
		if err != nil {
			t.Fatal(label, err)
		}
		err = MaskNotFound(p, "acme", notFound)
		got := "404"
		if err != notFound {
			got = statusText(t, err)
		}
		if got != cell {
			t.Errorf("%s: %s, want %s", label, got, cell)
		}
	}
}

func TestErrorMappings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{unauthenticated("x"), 401, CodeUnauthenticated},
		{forbidden("x"), 403, CodeForbidden},
		{&NamespaceUnavailableError{Namespace: "a", Reason: ReasonDeleted}, 404, CodeNotFound},
		{&NamespaceUnavailableError{Namespace: "a", Reason: ReasonPurged}, 404, CodeNotFound},
		{&NamespaceUnavailableError{Namespace: "a", Reason: ReasonBlocked}, 403, CodeNamespaceUnavailable},
		{&NamespaceUnavailableError{Namespace: "a", Reason: ReasonDisabled}, 403, CodeNamespaceUnavailable},
		{&NamespaceUnavailableError{Namespace: "a", Reason: ReasonSuspended}, 403, CodeNamespaceUnavailable},
		{fmt.Errorf("wrapped: %w", forbidden("x")), 403, CodeForbidden},
		{errors.New("database down"), 0, ""},
	}
	for _, c := range cases {
		if got := HTTPStatus(c.err); got != c.status {
			t.Errorf("HTTPStatus(%v) = %d, want %d", c.err, got, c.status)
		}
		if got := GraphQLCode(c.err); got != c.code {
			t.Errorf("GraphQLCode(%v) = %q, want %q", c.err, got, c.code)
		}
		if IsDecision(c.err) != (c.status != 0) {
			t.Errorf("IsDecision(%v) wrong", c.err)
		}
	}
	if err := Authorize(context.Background(), nil, Action(99), Target{}); !errors.Is(err, ErrForbidden) {
		t.Errorf("unknown action: %v", err)
	}
}

// The messages say what is missing.
func TestMessages(t *testing.T) {
	t.Parallel()
	f, headers := matrixFixture(t)
	private := RepositoryTarget(f.acme, f.repos[enum.VisibilityPrivate])
	for _, c := range []struct {
		label  string
		action Action
		want   string
	}{
		{"read", ActionWrite, "lacks the WRITE scope needed to write to repository acme/private (it has READ)"},
		{"write", ActionDelete, "lacks the DELETE scope"},
		{"other", ActionRead, `a token of namespace "other" cannot read repository acme/private`},
		{"restricted", ActionRead, "restricted to other repositories"},
		{"none", ActionRead, "authentication required to read repository acme/private"},
		{"expired", ActionRead, "the token expired at"},
		{"revoked", ActionRead, "the token has been revoked"},
	} {
		p, err := f.authn.Authenticate(request(headers[c.label]))
		if err == nil {
			err = Authorize(context.Background(), p, c.action, private)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: message %v, want it to contain %q", c.label, c.action, err, c.want)
		}
		for _, secret := range f.secrets {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("a message contains a secret")
			}
		}
	}
}
