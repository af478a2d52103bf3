package maven

import (
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Maven version ordering: a port of org.apache.maven.artifact.versioning.
// ComparableVersion as shipped with Maven 3.8 (maven-artifact 3.8.7), the
// order mvn itself uses for version ranges, "latest" and "release". The
// server uses it to sort <versions> in maven-metadata.xml and to choose
// <latest> and <release> from the stored versions.
//
// A version is parsed into a tree of items: integers, qualifier strings and
// lists (a new list starts at every '-' and at every digit/letter
// transition). Trailing "null" items (0, "", empty list) are dropped, so
// 1.0 == 1 == 1-0 and 1.0-ga == 1. Well-known qualifiers order as
// alpha < beta < milestone < rc (= cr) < snapshot < "" (release, ga, final)
// < sp; unknown qualifiers sort after sp, lexically.

type mvItemKind int

const (
	mvInt mvItemKind = iota
	mvString
	mvList
)

type mvItem struct {
	kind mvItemKind
	num  *big.Int // mvInt
	str  string   // mvString: the comparable qualifier form
	list []*mvItem
}

var mvQualifiers = []string{"alpha", "beta", "milestone", "rc", "snapshot", "", "sp"}

// mvReleaseIndex is comparableQualifier("") — the position of a release.
var mvReleaseIndex = strconv.Itoa(5)

func mvComparableQualifier(q string) string {
	for i, k := range mvQualifiers {
		if k == q {
			return strconv.Itoa(i)
		}
	}
	return strconv.Itoa(len(mvQualifiers)) + "-" + q
}

func mvNewString(v string, followedByDigit bool) *mvItem {
	if followedByDigit && len(v) == 1 {
		switch v[0] {
		case 'a':
			v = "alpha"
		case 'b':
			v = "beta"
		case 'm':
			v = "milestone"
		}
	}
	switch v {
	case "ga", "final", "release":
		v = ""
	case "cr":
		v = "rc"
	}
	return &mvItem{kind: mvString, str: mvComparableQualifier(v)}
}

func mvParseItem(isDigit bool, s string) *mvItem {
	if isDigit {
		s = strings.TrimLeft(s, "0")
		n := new(big.Int)
		if s != "" {
			n.SetString(s, 10)
		}
		return &mvItem{kind: mvInt, num: n}
	}
	return mvNewString(s, false)
}

func (it *mvItem) isNull() bool {
	switch it.kind {
	case mvInt:
		return it.num.Sign() == 0
	case mvString:
		return it.str == mvReleaseIndex
	}
	return len(it.list) == 0
}

func (it *mvItem) normalize() {
	for i := len(it.list) - 1; i >= 0; i-- {
		last := it.list[i]
		if last.isNull() {
			it.list = append(it.list[:i], it.list[i+1:]...)
		} else if last.kind != mvList {
			break
		}
	}
}

// compare compares it with o; o == nil stands for "nothing" (a shorter
// version).
func (it *mvItem) compare(o *mvItem) int {
	switch it.kind {
	case mvInt:
		if o == nil {
			if it.num.Sign() == 0 {
				return 0
			}
			return 1
		}
		switch o.kind {
		case mvInt:
			return it.num.Cmp(o.num)
		default:
			return 1 // 1.1 > 1-sp, 1.1 > 1-1
		}
	case mvString:
		if o == nil {
			return strings.Compare(it.str, mvReleaseIndex)
		}
		switch o.kind {
		case mvString:
			return strings.Compare(it.str, o.str)
		default:
			return -1 // 1.any < 1.1, 1.any < 1-1
		}
	}
	// list
	if o == nil {
		for _, i := range it.list {
			if r := i.compare(nil); r != 0 {
				return r
			}
		}
		return 0
	}
	switch o.kind {
	case mvInt:
		return -1
	case mvString:
		return 1
	}
	for i := 0; i < len(it.list) || i < len(o.list); i++ {
		var l, r *mvItem
		if i < len(it.list) {
			l = it.list[i]
		}
		if i < len(o.list) {
			r = o.list[i]
		}
		var c int
		switch {
		case l == nil && r == nil:
			c = 0
		case l == nil:
			c = -r.compare(nil)
		default:
			c = l.compare(r)
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func mvParse(version string) *mvItem {
	version = strings.ToLower(version)
	root := &mvItem{kind: mvList}
	list := root
	stack := []*mvItem{root}
	isDigit := false
	start := 0
	push := func() {
		n := &mvItem{kind: mvList}
		list.list = append(list.list, n)
		list = n
		stack = append(stack, n)
	}
	for i := 0; i < len(version); i++ {
		c := version[i]
		switch {
		case c == '.':
			if i == start {
				list.list = append(list.list, &mvItem{kind: mvInt, num: new(big.Int)})
			} else {
				list.list = append(list.list, mvParseItem(isDigit, version[start:i]))
			}
			start = i + 1
		case c == '-':
			if i == start {
				list.list = append(list.list, &mvItem{kind: mvInt, num: new(big.Int)})
			} else {
				list.list = append(list.list, mvParseItem(isDigit, version[start:i]))
			}
			start = i + 1
			push()
		case c >= '0' && c <= '9':
			if !isDigit && i > start {
				list.list = append(list.list, mvNewString(version[start:i], true))
				start = i
				push()
			}
			isDigit = true
		default:
			if isDigit && i > start {
				list.list = append(list.list, mvParseItem(true, version[start:i]))
				start = i
				push()
			}
			isDigit = false
		}
	}
	if len(version) > start {
		list.list = append(list.list, mvParseItem(isDigit, version[start:]))
	}
	for i := len(stack) - 1; i >= 0; i-- {
		stack[i].normalize()
	}
	return root
}

// CompareVersions orders two Maven versions the way Maven 3.8 does
// (ComparableVersion): negative when a < b, 0 when equivalent, positive
// when a > b.
func CompareVersions(a, b string) int {
	if a == b {
		return 0
	}
	return mvParse(a).compare(mvParse(b))
}

// sortVersions returns the versions in Maven order (ties keep their
// input order), parsing each version once.
func sortVersions(versions []string) []string {
	type parsed struct {
		v  string
		it *mvItem
	}
	ps := make([]parsed, len(versions))
	for i, v := range versions {
		ps[i] = parsed{v, mvParse(v)}
	}
	slices.SortStableFunc(ps, func(a, b parsed) int { return a.it.compare(b.it) })
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.v
	}
	return out
}
