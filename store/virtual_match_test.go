package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

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

// TestDecideVirtual: the per-member decision, in order of precedence:
// rules first (the first refused value and the DENY rule that refused it,
// nil when no ALLOW rule matched), then a hosted member is a candidate
// only when it holds the name, and a remote one unless any hosted member
// holds the name (whatever its rules) or the name is reserved on the way
// to it.
func TestDecideVirtual(t *testing.T) {
	repo := func(kind enum.Kind) *Repository { return &Repository{ID: uuid.New(), Kind: kind} }
	h1, h2, r1, r2 := repo(enum.KindHosted), repo(enum.KindHosted), repo(enum.KindRemote), repo(enum.KindRemote)
	deny := VirtualRule{Type: enum.UpstreamRuleDeny, Field: 1, Pattern: "*-rc*"}
	allow := VirtualRule{Type: enum.UpstreamRuleAllow, Field: 0, Pattern: "library/**"}
	members := []*VirtualMember{
		{Repository: h1, Rules: [][]VirtualRule{{deny}}},
		{Repository: r1, Rules: [][]VirtualRule{{allow}}},
		{Repository: r2, Reserved: []string{"acme/**"}},
		{Repository: h2},
	}
	summary := func(ds []VirtualDecision) string {
		var out []string
		for _, d := range ds {
			s := fmt.Sprint(d.Outcome)
			if d.Refused != nil {
				s += fmt.Sprintf("(%d", d.Refused.Field)
				if d.Rule != nil {
					s += " " + d.Rule.Pattern
				}
				s += ")"
			}
			out = append(out, s)
		}
		return strings.Join(out, ",")
	}
	name := func(n string) VirtualValue { return VirtualValue{Field: 0, Value: n} }
	tag := func(v string) VirtualValue { return VirtualValue{Field: 1, Value: v} }
	for _, c := range []struct {
		holding map[uuid.UUID]bool
		name    string
		values  []VirtualValue
		want    string
	}{
		// candidate=0 absent=1 denied=2 shadowed=3 reserved=4
		{map[uuid.UUID]bool{h1.ID: true}, "app", []VirtualValue{name("app"), tag("v1")}, "0,2(0),3,1"},
		{map[uuid.UUID]bool{h2.ID: true}, "app", []VirtualValue{name("app"), tag("v1-rc1")}, "2(1 *-rc*),2(0),3,0"},
		{nil, "library/alpine", []VirtualValue{name("library/alpine")}, "1,0,0,1"},
		{nil, "acme/app", []VirtualValue{name("acme/app")}, "1,2(0),4,1"},
		{map[uuid.UUID]bool{h1.ID: true}, "library/x", []VirtualValue{name("library/x")}, "0,3,3,1"},
	} {
		if got := summary(DecideVirtual(members, c.holding, c.name, c.values...)); got != c.want {
			t.Errorf("%s %v: got %s, want %s", c.name, c.values, got, c.want)
		}
	}
}
