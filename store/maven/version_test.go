package maven

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestCompareMavenVersionsOrder(t *testing.T) {
	t.Parallel()
	// Each list is strictly increasing in Maven 3.8's order
	// (ComparableVersion; many taken from its own test suite).
	lists := [][]string{
		{"1-alpha2snapshot", "1-alpha2", "1-alpha-123", "1-beta-2", "1-beta123", "1-m2", "1-m11", "1-rc", "1-cr2",
			"1-rc123", "1-SNAPSHOT", "1", "1-sp", "1-sp2", "1-sp123", "1-abc", "1-def", "1-pom-1", "1-1-snapshot",
			"1-1", "1-2", "1-123"},
		{"2.0", "2-1", "2.0.a", "2.0.0.a", "2.0.2", "2.0.123", "2.1.0", "2.1-a", "2.1b", "2.1-c", "2.1-1", "2.1.0.1", "2.2",
			"2.123", "11.a2", "11.a11", "11.b2", "11.b11", "11.m2", "11.m11", "11", "11.a", "11b", "11c", "11m"},
		{"1.0-SNAPSHOT", "1.0", "1.0.1-SNAPSHOT", "1.0.1", "1.0.2", "1.0.10", "1.1-alpha-1", "1.1-alpha-2",
			"1.1-beta", "1.1-RC1", "1.1", "1.9", "1.10", "2.0.0-M1", "2.0.0-RC1", "2.0.0"},
	}
	for _, l := range lists {
		for i := range l {
			for j := range l {
				got := CompareVersions(l[i], l[j])
				want := 0
				if i < j {
					want = -1
				} else if i > j {
					want = 1
				}
				if sign(got) != want {
					t.Errorf("compare(%q, %q) = %d, want %d", l[i], l[j], got, want)
				}
			}
		}
		shuffled := slices.Clone(l)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		slices.SortFunc(shuffled, CompareVersions)
		if !slices.Equal(shuffled, l) {
			t.Errorf("sorted %v, want %v", shuffled, l)
		}
	}
}

func TestCompareMavenVersionsEqual(t *testing.T) {
	t.Parallel()
	groups := [][]string{
		{"1", "1.0", "1.0.0", "1-0", "1.0-0", "1-ga", "1.0.ga", "1-final", "1.0-FINAL", "1.RELEASE", "1-0.0"},
		{"1a1", "1-a1", "1-alpha-1", "1alpha1"},
		{"1b2", "1-b2", "1-beta-2", "1beta2"},
		{"1m3", "1-m3", "1-milestone-3", "1milestone3"},
		{"1rc4", "1-rc4", "1-rc-4", "1cr4", "1-cr-4", "1RC4"},
		{"1x", "1-x", "1.0.0-x", "1.0.0-X"},
	}
	for _, g := range groups {
		for _, a := range g {
			for _, b := range g {
				if c := CompareVersions(a, b); c != 0 {
					t.Errorf("compare(%q, %q) = %d, want 0", a, b, c)
				}
			}
		}
	}
}

func TestCompareMavenVersionsHuge(t *testing.T) {
	t.Parallel()
	if CompareVersions("1.99999999999999999999999", "1.99999999999999999999998") <= 0 {
		t.Fatal("big integers compare numerically")
	}
	if CompareVersions("1.0002", "1.2") != 0 {
		t.Fatal("leading zeroes are ignored")
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}
