package model

import (
	"time"

	"github.com/google/uuid"
)

// AccessToken is a namespace access token (never its secret or hash);
// namespace and repositories are resolved through the dataloaders.
type AccessToken struct {
	// RepositoryGroup holds the repository ids of every token of the page,
	// so the first repositories resolver loads them all in one batch.
	RepositoryGroup *Group
	ID              uuid.UUID
	NamespaceID     uuid.UUID
	Name            string
	Scopes          []AccessTokenScope
	RepositoryIDs   []uuid.UUID // nil: every repository
	ExpiresAt       *time.Time
	RevokedAt       *time.Time
	LastUsedAt      *time.Time
	CreatedAt       time.Time
}
