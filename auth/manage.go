package auth

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// Token management with its authorization, for GraphQL
// (createAccessToken, accessTokens, revokeAccessToken) and npm (login,
// logout, npm token). Store failures pass through: store.Error for
// bad input, taken names and unknown repositories, as the GraphQL error
// presenter already maps them.

// TokenSpec describes a token to create.
type TokenSpec struct {
	Name string
	// Scopes: at least one of READ, WRITE, DELETE, ADMIN (see Authorize for
	// what each grants).
	Scopes []enum.TokenScope
	// Repositories restricts the token to these repositories (names) of
	// the namespace; nil: every repository, also future ones.
	Repositories []string
	// ExpiresAt: nil for no expiry.
	ExpiresAt *time.Time
}

// CreateToken creates an access token in ns and returns its row and its
// secret; the secret is shown once and never stored. The caller needs
// ActionAdmin on the namespace itself (the super-user, or an unrestricted
// ADMIN token of ns while ns accepts changes). A token that expires cannot
// mint one that outlives it.
func (a *Authenticator) CreateToken(ctx context.Context, p *Principal, ns Namespace, spec TokenSpec) (*store.AccessToken, string, error) {
	if err := Authorize(ctx, p, ActionAdmin, Target{Namespace: ns}); err != nil {
		return nil, "", err
	}
	if exp := p.ExpiresAt(); exp != nil && (spec.ExpiresAt == nil || spec.ExpiresAt.After(*exp)) {
		return nil, "", forbidden("a token that expires cannot create a token that outlives it: set expiresAt at or before %s",
			exp.UTC().Format(time.RFC3339))
	}
	secret, err := NewSecret(ns.ID)
	if err != nil {
		return nil, "", err
	}
	tok, err := a.st.CreateAccessToken(ctx, store.NewAccessToken{
		NamespaceID:  ns.ID,
		Name:         spec.Name,
		Scopes:       spec.Scopes,
		Repositories: spec.Repositories,
		ExpiresAt:    spec.ExpiresAt,
		SecretSHA256: HashSecret(secret),
		SecretHint:   SecretHint(secret),
	})
	if err != nil {
		return nil, "", err
	}
	return tok, secret, nil
}

// ListTokens lists the tokens of ns, newest first (keyset after, at most
// limit, and whether more follow). The caller needs ActionAdminRead on the
// namespace (an ADMIN token of it, or the super-user).
func (a *Authenticator) ListTokens(ctx context.Context, p *Principal, ns Namespace, after *store.AccessTokenKey, limit int, includeRevoked bool) ([]*store.AccessToken, bool, error) {
	if err := Authorize(ctx, p, ActionAdminRead, Target{Namespace: ns}); err != nil {
		return nil, false, err
	}
	return a.st.ListAccessTokens(ctx, ns.ID, after, limit, includeRevoked)
}

// RevokeToken revokes token id of ns (idempotent). The caller needs
// ActionAdmin on the namespace, except that a token may always revoke
// itself (npm logout), also in a suspended namespace. The revocation takes
// effect at once on this replica and within the cache TTL on the others.
func (a *Authenticator) RevokeToken(ctx context.Context, p *Principal, ns Namespace, id uuid.UUID) (*store.AccessToken, error) {
	self := p.IsToken() && p.tok.id == id && p.tok.nsID == ns.ID
	if !self {
		if err := Authorize(ctx, p, ActionAdmin, Target{Namespace: ns}); err != nil {
			return nil, err
		}
	}
	tok, err := a.st.RevokeAccessToken(ctx, ns.ID, id)
	if err != nil {
		return nil, err
	}
	a.Forget(ns.ID, id)
	return tok, nil
}

// RevokeSecret revokes the token whose secret is given (npm logout sends
// it: DELETE /-/user/token/<token>). The caller must be that token or be
// allowed ActionAdmin on its namespace. An unknown secret is
// ErrUnauthenticated.
func (a *Authenticator) RevokeSecret(ctx context.Context, p *Principal, secret string) (*store.AccessToken, error) {
	nsID, ok := ParseSecret(secret)
	if !ok {
		return nil, unauthenticated("invalid token")
	}
	c, err := a.tokens.AccessTokenByHash(ctx, nsID, HashSecret(secret))
	if store.HasCode(err, store.CodeAccessTokenNotFound) {
		return nil, unauthenticated("invalid token")
	}
	if err != nil {
		return nil, err
	}
	return a.RevokeToken(ctx, p, NamespaceOf(&c.Namespace), c.ID)
}
