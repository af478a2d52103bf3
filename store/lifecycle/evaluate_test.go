package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/artifact-registry/artifact-registry/store"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func lastN(n int) Rule            { return Rule{Type: KeepLastN, Count: ptr(n)} }
func regex(p string) Rule         { return Rule{Type: KeepRegex, Pattern: ptr(p)} }
func downloadedWithin(d int) Rule { return Rule{Type: KeepDownloadedWithin, Days: ptr(d)} }
func snapshotBuilds(n int) Rule   { return Rule{Type: KeepSnapshotBuilds, Count: ptr(n)} }

func policy(minAge int, rules ...Rule) *Policy {
	return &Policy{Enabled: true, MinAgeDays: minAge, Rules: rules}
}

// cand is a test candidate: group g, pushed age days ago, with names.
type cand struct {
	group      int
	ageDays    int
	names      []string
	downloaded *int // days ago
	pinned     bool
}

var groups = []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}

// run evaluates candidates (given in stream order) and returns the
// indexes deleted.
func run(p *Policy, cs []cand) []int {
	ev := NewEvaluator(p, now)
	var out []int
	for i, c := range cs {
		k := &Candidate{Group: groups[c.group], ID: uuid.New(), Names: c.names, Pinned: c.pinned,
			CreatedAt: now.Add(-time.Duration(c.ageDays) * 24 * time.Hour)}
		if c.downloaded != nil {
			k.LastDownloadedAt = ptr(now.Add(-time.Duration(*c.downloaded) * 24 * time.Hour))
		}
		if ev.Delete(k) {
			out = append(out, i)
		}
	}
	return out
}

func tagged(group, age int, tags ...string) cand {
	return cand{group: group, ageDays: age, names: tags}
}

func TestEvaluator(t *testing.T) {
	t.Parallel()
	// Eight tags of one image, newest first, ten days old or more.
	eight := make([]cand, 8)
	for i := range eight {
		eight[i] = tagged(0, 10+i, fmt.Sprintf("v%d", 8-i))
	}
	for _, tc := range []struct {
		name   string
		policy *Policy
		cs     []cand
		want   []int
	}{
		{"no policy deletes nothing", nil, eight, nil},
		{"disabled deletes nothing", &Policy{Enabled: false, Rules: []Rule{lastN(1)}}, eight, nil},
		{"no artifact rule deletes nothing", policy(0, snapshotBuilds(1)), eight, nil},
		{"keep last 3 of 8", policy(0, lastN(3)), eight, []int{3, 4, 5, 6, 7}},
		{"keep last 3 per group", policy(0, lastN(1)),
			[]cand{tagged(0, 5, "a"), tagged(0, 6, "b"), tagged(1, 5, "c"), tagged(1, 6, "d")}, []int{1, 3}},
		{"untagged is not counted and is deleted", policy(0, lastN(2)),
			[]cand{{group: 0, ageDays: 5}, tagged(0, 6, "a"), tagged(0, 7, "b"), tagged(0, 8, "c")}, []int{0, 3}},
		{"regex keeps matching tags", policy(0, regex(`v[12]`)), eight, []int{0, 1, 2, 3, 4, 5}},
		{"regex is anchored", policy(0, regex(`v`)), eight, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"regex matches any tag", policy(0, regex(`stable`)),
			[]cand{tagged(0, 5, "x", "stable"), tagged(0, 6, "y")}, []int{1}},
		{"rules are or-ed", policy(0, lastN(1), regex(`v1`)), eight, []int{1, 2, 3, 4, 5, 6}},
		{"downloaded within keeps", policy(0, downloadedWithin(7)),
			[]cand{{group: 0, ageDays: 30, names: []string{"a"}, downloaded: ptr(3)},
				{group: 0, ageDays: 30, names: []string{"b"}, downloaded: ptr(10)},
				{group: 0, ageDays: 30, names: []string{"c"}}}, []int{1, 2}},
		{"downloaded within keeps untagged", policy(0, downloadedWithin(7)),
			[]cand{{group: 0, ageDays: 30, downloaded: ptr(1)}}, nil},
		{"minimum age spares young ones but they count", policy(12, lastN(1)), eight, []int{2, 3, 4, 5, 6, 7}},
		{"pinned is kept", policy(0, lastN(1)),
			[]cand{tagged(0, 5, "2.0.0"), {group: 0, ageDays: 6, names: []string{"1.0.0"}, pinned: true}, tagged(0, 7, "0.9.0")}, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := run(tc.policy, tc.cs); !slices.Equal(got, tc.want) {
				t.Errorf("deleted %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvaluatorSnapshotBuilds(t *testing.T) {
	t.Parallel()
	builds := make([]Build, 5)
	for i := range builds {
		builds[i] = Build{BuiltAt: now.Add(-time.Duration(i) * 24 * time.Hour)}
	}
	for _, tc := range []struct {
		name   string
		policy *Policy
		want   []int
	}{
		{"keep 2", policy(0, snapshotBuilds(2)), []int{2, 3, 4}},
		{"largest count wins", policy(0, snapshotBuilds(2), snapshotBuilds(4)), []int{4}},
		{"minimum age", policy(3, snapshotBuilds(1)), []int{3, 4}},
		{"no rule", policy(0, lastN(1)), nil},
		{"disabled", &Policy{Rules: []Rule{snapshotBuilds(1)}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := NewEvaluator(tc.policy, now).DeleteBuilds(builds); !slices.Equal(got, tc.want) {
				t.Errorf("deleted %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tooMany := make([]Rule, MaxRules+1)
	for i := range tooMany {
		tooMany[i] = lastN(i + 1)
	}
	for _, tc := range []struct {
		name string
		in   Input
		want string // "" = valid; else part of the message
	}{
		{"empty", Input{}, ""},
		{"every type", Input{Enabled: true, MinAgeDays: 1, Rules: []Rule{lastN(3), regex(`v\d+`), downloadedWithin(30), snapshotBuilds(2)}}, ""},
		{"negative age", Input{MinAgeDays: -1}, "/minAgeDays"},
		{"too many rules", Input{Rules: tooMany}, "/rules"},
		{"count missing", Input{Rules: []Rule{{Type: KeepLastN}}}, "/rules/0"},
		{"zero count", Input{Rules: []Rule{lastN(0)}}, "/rules/0"},
		{"pattern on last n", Input{Rules: []Rule{{Type: KeepLastN, Count: ptr(1), Pattern: ptr("x")}}}, "/rules/0"},
		{"unknown type", Input{Rules: []Rule{{Type: "KEEP_ALL"}}}, "/rules/0"},
		{"bad regex", Input{Rules: []Rule{regex(`(`)}}, "/rules/0/pattern"},
		{"zero days", Input{Rules: []Rule{downloadedWithin(0)}}, "/rules/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tc.in)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid input refused: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("invalid input accepted")
			case tc.want != "" && (!store.HasCode(err, store.CodeInvalidInput) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want INVALID_INPUT at %s", err, tc.want)
			}
		})
	}
}
