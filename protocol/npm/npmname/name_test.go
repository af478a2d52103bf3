package npmname

import (
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	good := []string{"a", "left-pad", "lodash.merge", "@scope/pkg", "@s/a.b-c_d", "x1", "a_b"}
	bad := []string{"", ".hidden", "-x", "_x", "Upper", "@Scope/x", "a b", " a", "../x", "a/b", "@s/.x", "@/x", "@s/",
		"node_modules", "favicon.ico", "http", "fs", "a~b", "a'b", "a(b)", "a*b", "a!b", "@s/a~b", strings.Repeat("a", 215), "é", "a%2fb"}
	for _, n := range good {
		if err := Validate(n); err != nil {
			t.Errorf("Validate(%q) = %v", n, err)
		}
	}
	for _, n := range bad {
		if err := Validate(n); err == nil {
			t.Errorf("Validate(%q) passed", n)
		}
	}
}
