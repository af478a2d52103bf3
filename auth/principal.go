package auth

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Kind is who a Principal is.
type Kind uint8

const (
	// KindAnonymous: no credential.
	KindAnonymous Kind = iota
	// KindAdmin: the configured admin token, the instance super-user.
	KindAdmin
	// KindToken: a namespace access token.
	KindToken
)

func (k Kind) String() string {
	switch k {
	case KindAnonymous:
		return "anonymous"
	case KindAdmin:
		return "admin"
	case KindToken:
		return "token"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// scopeSet is the set of scopes a token effectively holds (bit i = enum
// value i).
type scopeSet uint8

func bit(s enum.TokenScope) scopeSet { return 1 << uint(s) }

// effectiveScopes applies the implications: every scope implies READ
// (pushing needs HEAD and GET of blobs and manifests, deleting needs to
// find what to delete), and ADMIN implies every scope (an administrator
// can mint any token of the namespace anyway). WRITE does not imply
// DELETE: overwriting a tag is a write, removing artifacts is not.
func effectiveScopes(scopes []enum.TokenScope) scopeSet {
	var set scopeSet
	for _, s := range scopes {
		switch s {
		case enum.TokenScopeRead:
			set |= bit(enum.TokenScopeRead)
		case enum.TokenScopeWrite:
			set |= bit(enum.TokenScopeRead) | bit(enum.TokenScopeWrite)
		case enum.TokenScopeDelete:
			set |= bit(enum.TokenScopeRead) | bit(enum.TokenScopeDelete)
		case enum.TokenScopeAdmin:
			set |= bit(enum.TokenScopeRead) | bit(enum.TokenScopeWrite) | bit(enum.TokenScopeDelete) | bit(enum.TokenScopeAdmin)
		}
	}
	return set
}

func (s scopeSet) has(scope enum.TokenScope) bool { return s&bit(scope) != 0 }

// tokenIdentity is the part of a token a decision needs, copied from the
// row when it was authenticated.
type tokenIdentity struct {
	id        uuid.UUID
	nsID      uuid.UUID
	nsSlug    string
	name      string
	scopes    []enum.TokenScope
	effective scopeSet
	repos     []uuid.UUID // sorted; nil: every repository
	expiresAt *time.Time
	// nsReason is set when the token's own namespace serves no reads
	// (blocked or disabled): the token then gets nothing anywhere.
	nsReason Reason
}

func compareUUID(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }

func (t *tokenIdentity) restricted() bool { return t.repos != nil }

func (t *tokenIdentity) covers(repositoryID uuid.UUID) bool {
	if t.repos == nil {
		return true
	}
	_, ok := slices.BinarySearchFunc(t.repos, repositoryID, compareUUID)
	return ok
}

// Principal is who makes a request: anonymous, the admin super-user, or
// a namespace access token. The zero value and a nil *Principal are
// anonymous. Principals come from Authenticator.Authenticate and are
// immutable.
type Principal struct {
	kind      Kind
	adminUser string
	tok       *tokenIdentity
	// grants, when non-nil, narrows the principal to the repositories and
	// actions an OCI bearer token was issued for (key "<slug>/<repo>").
	grants map[string]actionSet
}

var anonymous = &Principal{}

// Anonymous returns the anonymous principal.
func Anonymous() *Principal { return anonymous }

// AdminPrincipal returns the super-user principal (for wiring and tests;
// requests get it from Authenticate with the configured admin token).
func AdminPrincipal(user string) *Principal {
	if user == "" {
		user = DefaultAdminUser
	}
	return &Principal{kind: KindAdmin, adminUser: user}
}

func principalFromToken(c *store.AccessTokenCredential) *Principal {
	t := &tokenIdentity{
		id:        c.ID,
		nsID:      c.NamespaceID,
		nsSlug:    c.Namespace.Slug,
		name:      c.Name,
		scopes:    slices.Clone(c.Scopes),
		effective: effectiveScopes(c.Scopes),
		expiresAt: c.ExpiresAt,
	}
	if c.RepositoryIDs != nil {
		t.repos = slices.Clone(c.RepositoryIDs)
		slices.SortFunc(t.repos, compareUUID)
	}
	switch {
	case c.Namespace.BlockedAt != nil:
		t.nsReason = ReasonBlocked
	case c.Namespace.DisabledAt != nil:
		t.nsReason = ReasonDisabled
	}
	return &Principal{kind: KindToken, tok: t}
}

// Kind says who the principal is.
func (p *Principal) Kind() Kind {
	if p == nil {
		return KindAnonymous
	}
	return p.kind
}

// IsAnonymous reports whether no credential was presented.
func (p *Principal) IsAnonymous() bool { return p.Kind() == KindAnonymous }

// IsAdmin reports whether the principal is the super-user.
func (p *Principal) IsAdmin() bool { return p.Kind() == KindAdmin }

// IsToken reports whether the principal is a namespace access token.
func (p *Principal) IsToken() bool { return p.Kind() == KindToken }

// TokenID is the access token's id (uuid.Nil unless IsToken).
func (p *Principal) TokenID() uuid.UUID {
	if !p.IsToken() {
		return uuid.Nil
	}
	return p.tok.id
}

// NamespaceID is the token's namespace (uuid.Nil unless IsToken).
func (p *Principal) NamespaceID() uuid.UUID {
	if !p.IsToken() {
		return uuid.Nil
	}
	return p.tok.nsID
}

// NamespaceSlug is the token's namespace slug ("" unless IsToken).
func (p *Principal) NamespaceSlug() string {
	if !p.IsToken() {
		return ""
	}
	return p.tok.nsSlug
}

// Scopes are the token's scopes as stored (nil unless IsToken).
func (p *Principal) Scopes() []enum.TokenScope {
	if !p.IsToken() {
		return nil
	}
	return slices.Clone(p.tok.scopes)
}

// HasScope reports whether the token effectively holds a scope (with the
// implications of effectiveScopes); the admin holds every scope.
func (p *Principal) HasScope(s enum.TokenScope) bool {
	switch p.Kind() {
	case KindAdmin:
		return true
	case KindToken:
		return p.tok.effective.has(s)
	}
	return false
}

// RepositoryIDs is the token's repository restriction, nil for every
// repository (and unless IsToken).
func (p *Principal) RepositoryIDs() []uuid.UUID {
	if !p.IsToken() || p.tok.repos == nil {
		return nil
	}
	return slices.Clone(p.tok.repos)
}

// Restricted reports whether the token is limited to some repositories.
func (p *Principal) Restricted() bool { return p.IsToken() && p.tok.restricted() }

// ExpiresAt is the token's expiry (nil: none, or not a token).
func (p *Principal) ExpiresAt() *time.Time {
	if !p.IsToken() {
		return nil
	}
	return p.tok.expiresAt
}

// Name is what "who am I" answers: the admin user name, the token's name,
// or "anonymous".
func (p *Principal) Name() string {
	switch p.Kind() {
	case KindAdmin:
		return p.adminUser
	case KindToken:
		return p.tok.name
	}
	return "anonymous"
}

// String describes the principal for logs (never a secret).
func (p *Principal) String() string {
	switch p.Kind() {
	case KindAdmin:
		return "admin"
	case KindToken:
		return fmt.Sprintf("token %s (%q) of namespace %s", p.tok.id, p.tok.name, p.tok.nsSlug)
	}
	return "anonymous"
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p (GraphQL resolvers read it back with
// FromContext).
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	if a := p.Actor(); a != "" {
		// What the trash records as the deleter of rows it soft-deletes.
		ctx = store.WithActor(ctx, a)
	}
	return context.WithValue(ctx, principalKey{}, p)
}

// Actor names the principal as the trash records it ("admin:<user>",
// "token:<id>"); "" for anonymous.
func (p *Principal) Actor() string {
	switch p.Kind() {
	case KindAdmin:
		return "admin:" + p.adminUser
	case KindToken:
		return "token:" + p.tok.id.String()
	}
	return ""
}

// FromContext returns the principal of ctx; anonymous when there is none.
func FromContext(ctx context.Context) *Principal {
	if p, ok := ctx.Value(principalKey{}).(*Principal); ok && p != nil {
		return p
	}
	return anonymous
}
