package errs

import (
	"errors"
	"fmt"
	"testing"
)

var (
	codeA = Code{"A", KindNotFound}
	codeB = Code{"B", KindConflict}
)

func TestCodesThroughWrapping(t *testing.T) {
	t.Parallel()
	inner := New(codeA, "a missing: %s", "x")
	outer := fmt.Errorf("load: %w", Wrap(codeB, inner, "b refused"))
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"first code", CodeOf(outer), codeB},
		{"first kind", KindOf(outer), KindConflict},
		{"outer code anywhere", Has(outer, codeB), true},
		{"inner code anywhere", Has(outer, codeA), true},
		{"absent code", Has(outer, Retryable), false},
		{"plain error has no code", CodeOf(errors.New("boom")), Code{}},
		{"nil has no code", Has(nil, codeA), false},
		{"message with cause", outer.Error(), "load: b refused: a missing: x"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestDigestAndDefaultMessage(t *testing.T) {
	t.Parallel()
	var sha [32]byte
	sha[0] = 0xab
	e := WithDigest(codeA, sha, "blob unknown")
	if want := "blob unknown: sha256:ab" + fmt.Sprintf("%062d", 0); e.Error() != want {
		t.Errorf("got %q, want %q", e.Error(), want)
	}
	if got := (&Error{Code: codeB}).Error(); got != "B" {
		t.Errorf("an error without a message reads as its code: %q", got)
	}
	if got, ok := As(fmt.Errorf("x: %w", e)); !ok || got.Digest == nil || *got.Digest != sha {
		t.Errorf("As lost the digest: %v %v", got, ok)
	}
}
