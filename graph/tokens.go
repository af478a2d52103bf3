package graph

import (
	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

var scopesToEnum = map[model.AccessTokenScope]enum.TokenScope{
	model.AccessTokenScopeRead:   enum.TokenScopeRead,
	model.AccessTokenScopeWrite:  enum.TokenScopeWrite,
	model.AccessTokenScopeDelete: enum.TokenScopeDelete,
	model.AccessTokenScopeAdmin:  enum.TokenScopeAdmin,
}

var scopesFromEnum = func() map[enum.TokenScope]model.AccessTokenScope {
	m := make(map[enum.TokenScope]model.AccessTokenScope, len(scopesToEnum))
	for k, v := range scopesToEnum {
		m[v] = k
	}
	return m
}()

func toScopes(in []enum.TokenScope) []model.AccessTokenScope {
	out := make([]model.AccessTokenScope, 0, len(in))
	for _, s := range in {
		out = append(out, scopesFromEnum[s])
	}
	return out
}

// toAccessToken converts a token row (which never carries the secret).
func toAccessToken(t *store.AccessToken) *model.AccessToken {
	return &model.AccessToken{
		ID:            t.ID,
		NamespaceID:   t.NamespaceID,
		Name:          t.Name,
		Scopes:        toScopes(t.Scopes),
		RepositoryIDs: t.RepositoryIDs,
		ExpiresAt:     t.ExpiresAt,
		RevokedAt:     t.RevokedAt,
		LastUsedAt:    t.LastUsedAt,
		CreatedAt:     t.CreatedAt,
	}
}
