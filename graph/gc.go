package graph

import (
	"time"
	"unicode/utf8"

	"github.com/artifact-registry/artifact-registry/graph/model"
	"github.com/artifact-registry/artifact-registry/store"
)

// maxGCReasonLength is gc_controls.reason's CHECK.
const maxGCReasonLength = 1024

// gcExcludedKey is the cursor of excludedGcCandidates: the store's keyset
// (excluded_at, sha256), descending.
type gcExcludedKey struct {
	ExcludedAt time.Time `json:"t"`
	SHA256     []byte    `json:"d"`
}

func toGCCandidate(c *store.GCCandidate) *model.GCCandidate {
	return &model.GCCandidate{
		NamespaceID:  c.NamespaceID,
		Digest:       store.FormatSHA256(c.SHA256),
		ReviewAfter:  c.ReviewAfter,
		Attempts:     c.Attempts,
		Strikes:      c.Strikes,
		BackoffUntil: c.BackoffUntil,
		ExcludedAt:   c.ExcludedAt,
		LastError:    c.LastError,
		CreatedAt:    c.CreatedAt,
	}
}

func toGarbageCollection(sw *store.GCReclaimSwitch) *model.GarbageCollection {
	return &model.GarbageCollection{Enabled: sw.Enabled, ChangedBy: sw.ChangedBy, Reason: sw.Reason, UpdatedAt: sw.UpdatedAt}
}

// validateText refuses text the database would reject (length in
// characters, NUL bytes, invalid UTF-8) with a clear INVALID_INPUT.
func validateText(field, s string, max int) error {
	switch {
	case !utf8.ValidString(s):
		return invalidInput("%s is not valid UTF-8", field)
	case utf8.RuneCountInString(s) > max:
		return invalidInput("%s is longer than %d characters", field, max)
	}
	for _, r := range s {
		if r == 0 {
			return invalidInput("%s contains a NUL character", field)
		}
	}
	return nil
}
