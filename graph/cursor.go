package graph

import (
	"encoding/base64"
	"encoding/json"

	"github.com/artifact-registry/artifact-registry/graph/model"
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
func pageSize(first *int) (int, error) { return pageSizeOf("first", first) }

func pageSizeOf(arg string, n *int) (int, error) {
	if n == nil {
		return defaultPageSize, nil
	}
	if *n < 1 || *n > maxPageSize {
		return 0, invalidInput("%s must be between 1 and %d, got %d", arg, maxPageSize, *n)
	}
	return *n, nil
}

// page is a validated Relay page request: forward (first, after) or
// backward (last, before).
type page struct {
	limit    int
	cursor   *string // after, or before when backward
	backward bool
}

func pageArgs(first *int, after *string, last *int, before *string) (page, error) {
	backward := last != nil || before != nil
	if backward && (first != nil || after != nil) {
		return page{}, invalidInput("page forward (first, after) or backward (last, before), not both")
	}
	if backward {
		n, err := pageSizeOf("last", last)
		return page{limit: n, cursor: before, backward: true}, err
	}
	n, err := pageSize(first)
	return page{limit: n, cursor: after}, err
}

// info builds PageInfo for the page's cursors (in list order); more says
// whether rows lie beyond the page in the walking direction.
func (p page) info(cursors []string, more bool) *model.PageInfo {
	given := p.cursor != nil && *p.cursor != ""
	pi := &model.PageInfo{HasNextPage: more, HasPreviousPage: given}
	if p.backward {
		pi.HasNextPage, pi.HasPreviousPage = given, more
	}
	if len(cursors) > 0 {
		pi.StartCursor = &cursors[0]
		pi.EndCursor = &cursors[len(cursors)-1]
	}
	return pi
}
