package model

import (
	"time"

	"github.com/google/uuid"
)

// GCCandidate is a garbage-collection review candidate; namespace is
// resolved through the dataloader.
type GCCandidate struct {
	NamespaceID  uuid.UUID
	Digest       string
	ReviewAfter  time.Time
	Attempts     int
	Strikes      int
	BackoffUntil *time.Time
	ExcludedAt   *time.Time
	LastError    *string
	CreatedAt    time.Time
}
