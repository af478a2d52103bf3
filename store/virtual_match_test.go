package store

import (
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/store/enum"
)

func TestMatchVirtualPattern(t *testing.T) {
	for _, c := range []struct {
		pattern, value string
		want           bool
	}{
		{"acme/*", "acme/app", true},
		{"acme/*", "acme/app/sub", false},
		{"acme/**", "acme/app/sub", true},
		{"acme/**", "acme", false},
		{"**", "", true},
		{"*", "", true},
		{"*", "a/b", false},
		{"@acme/*", "@acme/lib", true},
		{"@acme/*", "@acmex/lib", false},
		{"com/acme/**", "com/acme/tools/cli", true},
		{"*-rc*", "2.0-rc1", true},
		{"*-rc*", "2.0", false},
		{"v?", "v1", true},
		{"v?", "v10", false},
		{"?", "/", false},
		{"library/**/x", "library/a/b/x", true},
		{"library/**/x", "library/x", false},
		{"a**b", "a/x/b", true},
		{"ACME/*", "acme/app", false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"é*", "été", true},
	} {
		if got := MatchVirtualPattern(c.pattern, c.value); got != c.want {
			t.Errorf("MatchVirtualPattern(%q, %q) = %v, want %v", c.pattern, c.value, got, c.want)
		}
	}
	// No backtracking blow-up: a pattern of many stars against a long
	// value that fails at the end answers at once.
	p := strings.Repeat("**a", 80) + "b"
	v := strings.Repeat("a", 255)
	if MatchVirtualPattern(p, v) {
		t.Fatal("pathological pattern matched")
	}
}

func TestVirtualRulesAdmit(t *testing.T) {
	name, tag := int16(enum.ContainerTargetImage), int16(enum.ContainerTargetTag)
	allow := func(f int16, p string) VirtualRule {
		return VirtualRule{Type: enum.UpstreamRuleAllow, Field: f, Pattern: p}
	}
	deny := func(f int16, p string) VirtualRule {
		return VirtualRule{Type: enum.UpstreamRuleDeny, Field: f, Pattern: p}
	}
	rules := []VirtualRule{allow(name, "library/**"), allow(name, "team/*"), deny(name, "team/secret"), deny(tag, "*-rc*")}
	for _, c := range []struct {
		field int16
		value string
		want  bool
	}{
		{name, "library/alpine", true},
		{name, "team/app", true},
		{name, "team/secret", false}, // deny wins
		{name, "other/app", false},   // allow rules exist, none matches
		{tag, "1.0", true},           // no allow rule on the tag
		{tag, "1.0-rc1", false},
	} {
		if got := VirtualRulesAdmit(rules, c.field, c.value); got != c.want {
			t.Errorf("admit %d %q = %v, want %v", c.field, c.value, got, c.want)
		}
	}
	if !VirtualRulesAdmit(nil, name, "anything") {
		t.Fatal("no rules must admit everything")
	}
}
