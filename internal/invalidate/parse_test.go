package invalidate_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/internal/invalidate"
)

func TestParse(t *testing.T) {
	ns, tok := uuid.MustParse("0190a000-0000-7000-8000-000000000001"), uuid.MustParse("0190a000-0000-7000-8000-000000000002")
	for payload, want := range map[string]invalidate.Event{
		"token " + ns.String() + " " + tok.String(): {Kind: invalidate.Token, Namespace: ns, Token: tok},
		"namespace " + ns.String():                  {Kind: invalidate.Namespace, Namespace: ns},
		"signing-keys":                              {Kind: invalidate.SigningKeys},
	} {
		if got, err := invalidate.Parse(payload); err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", payload, got, err, want)
		}
	}
	for _, bad := range []string{"", "token", "token " + ns.String(), "namespace x", "signing-keys 1", "repository " + ns.String()} {
		if got, err := invalidate.Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", bad, got)
		}
	}
}
