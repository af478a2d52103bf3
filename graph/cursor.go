package graph

import (
	"encoding/base64"
	"encoding/json"
)

// Cursors are opaque to clients: base64url of a JSON envelope naming the
// list they belong to ("k") and the keyset values of the row ("v").
type cursorEnvelope struct {
	Kind string          `json:"k"`
	V    json.RawMessage `json:"v"`
}

func encodeCursor(kind string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // keyset structs always marshal
	}
	env, _ := json.Marshal(cursorEnvelope{Kind: kind, V: b})
	return base64.RawURLEncoding.EncodeToString(env)
}

// decodeCursor decodes after into v; nil after means the first page.
func decodeCursor(after *string, kind string, v any) (bool, error) {
	if after == nil || *after == "" {
		return false, nil
	}
	bad := invalidInput("invalid cursor: pass an endCursor returned by this list")
	raw, err := base64.RawURLEncoding.DecodeString(*after)
	if err != nil {
		return false, bad
	}
	var env cursorEnvelope
	if err := json.Unmarshal(raw, &env); err != nil || env.Kind != kind {
		return false, bad
	}
	if err := json.Unmarshal(env.V, v); err != nil {
		return false, bad
	}
	return true, nil
}

const (
	defaultPageSize = 20
	maxPageSize     = 100
)

// pageSize validates first.
func pageSize(first *int) (int, error) {
	if first == nil {
		return defaultPageSize, nil
	}
	if *first < 1 || *first > maxPageSize {
		return 0, invalidInput("first must be between 1 and %d, got %d", maxPageSize, *first)
	}
	return *first, nil
}
