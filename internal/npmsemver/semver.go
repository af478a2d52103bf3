// Package npmsemver holds npm's version and dist-tag rules, shared by the
// store, the npm protocol and the management API. It depends on the
// standard library alone, so that fuzzing the npm publish parser compiles
// nothing of the store.
package npmsemver

import (
	"regexp"
	"strconv"
	"strings"
)

// npm's flavour of SemVer 2.0.0, ported from node-semver 7 (the library the
// npm CLI and the public registry use): strict version parsing, precedence,
// and the range grammar, which the registry needs for one rule: a dist-tag
// that is a valid range ("v0", "1.x", "^2") would shadow versions on the
// client, so it is refused.

const semverMaxLength = 256

// The token sources of node-semver's internal/re.js (non-loose forms).
const (
	reNumericIdentifier    = `0|[1-9]\d*`
	reNonNumericIdentifier = `\d*[a-zA-Z-][a-zA-Z0-9-]*`
	reMainVersion          = `(` + reNumericIdentifier + `)\.(` + reNumericIdentifier + `)\.(` + reNumericIdentifier + `)`
	rePrereleaseIdentifier = `(?:` + reNonNumericIdentifier + `|` + reNumericIdentifier + `)`
	rePrerelease           = `(?:-(` + rePrereleaseIdentifier + `(?:\.` + rePrereleaseIdentifier + `)*))`
	reBuildIdentifier      = `[a-zA-Z0-9-]+`
	reBuild                = `(?:\+(` + reBuildIdentifier + `(?:\.` + reBuildIdentifier + `)*))`
	reFullPlain            = `v?` + reMainVersion + rePrerelease + `?` + reBuild + `?`
	reGTLT                 = `((?:<|>)?=?)`
	reXRangeIdentifier     = reNumericIdentifier + `|x|X|\*`
	reXRangePlain          = `[v=\s]*(` + reXRangeIdentifier + `)(?:\.(` + reXRangeIdentifier + `)(?:\.(` + reXRangeIdentifier + `)(?:` + rePrerelease + `)?` + reBuild + `?)?)?`
	// LOOSEPLAIN is only used by the comparator trim of ranges.
	reMainVersionLoose          = `(\d+)\.(\d+)\.(\d+)`
	rePrereleaseIdentifierLoose = `(?:` + reNonNumericIdentifier + `|\d+)`
	rePrereleaseLoose           = `(?:-?(` + rePrereleaseIdentifierLoose + `(?:\.` + rePrereleaseIdentifierLoose + `)*))`
	reLoosePlain                = `[v=\s]*` + reMainVersionLoose + rePrereleaseLoose + `?` + reBuild + `?`
)

var (
	versionRe      = regexp.MustCompile(`^` + reMainVersion + rePrerelease + `?` + reBuild + `?$`)
	versionLooseRe = regexp.MustCompile(`^v?` + reMainVersion)
	xRangeRe       = regexp.MustCompile(`^` + reGTLT + `\s*` + reXRangePlain + `$`)
	tildeRe        = regexp.MustCompile(`^(?:~>?)` + reXRangePlain + `$`)
	caretRe        = regexp.MustCompile(`^(?:\^)` + reXRangePlain + `$`)
	comparatorRe   = regexp.MustCompile(`^` + reGTLT + `\s*(` + reFullPlain + `)$|^$`)
	starRe         = regexp.MustCompile(`^(<|>)?=?\s*\*$`)
	hyphenRe       = regexp.MustCompile(`^\s*(` + reXRangePlain + `)\s+-\s+(` + reXRangePlain + `)\s*$`)
	compTrimRe     = regexp.MustCompile(`(\s*)` + reGTLT + `\s*(` + reLoosePlain + `|` + reXRangePlain + `)`)
	tildeTrimRe    = regexp.MustCompile(`(\s*)(?:~>?)\s+`)
	caretTrimRe    = regexp.MustCompile(`(\s*)(?:\^)\s+`)
	buildStripRe   = regexp.MustCompile(reBuild)
	spacesRe       = regexp.MustCompile(`\s+`)
)

// Version is a parsed strict SemVer version.
type Version struct {
	Major, Minor, Patch uint64
	Prerelease          []string
	Build               string
	raw                 string
}

// String returns the version as it was parsed.
func (v Version) String() string { return v.raw }

// IsPrerelease reports whether the version has a prerelease part.
func (v Version) IsPrerelease() bool { return len(v.Prerelease) > 0 }

// ParseVersion parses a strict SemVer version the way the registry
// stores it (semver.valid(s) === s): no leading "v" or "=", no build
// metadata, no surrounding spaces, at most 256 characters, numeric parts at
// most 2^53-1 (node-semver's limits).
func ParseVersion(s string) (Version, bool) {
	if len(s) > semverMaxLength {
		return Version{}, false
	}
	m := versionRe.FindStringSubmatch(s)
	if m == nil || m[5] != "" {
		// Build metadata is refused: npm's semver.valid drops it, so a
		// version key with "+build" is never what the client resolves.
		return Version{}, false
	}
	v := Version{raw: s}
	for i, p := range []*uint64{&v.Major, &v.Minor, &v.Patch} {
		n, err := strconv.ParseUint(m[i+1], 10, 64)
		if err != nil || n > 1<<53-1 {
			return Version{}, false
		}
		*p = n
	}
	if m[4] != "" {
		v.Prerelease = strings.Split(m[4], ".")
		for _, id := range v.Prerelease {
			if isNumericID(id) {
				if n, err := strconv.ParseUint(id, 10, 64); err != nil || n > 1<<53-1 {
					return Version{}, false
				}
			}
		}
	}
	v.Build = m[5]
	return v, true
}

// ValidVersion reports whether s is a strict SemVer version as the
// registry stores it (see ParseVersion).
func ValidVersion(s string) bool {
	_, ok := ParseVersion(s)
	return ok
}

func isNumericID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareIdentifiers is node-semver's: numeric identifiers compare
// numerically and sort before alphanumeric ones.
func compareIdentifiers(a, b string) int {
	an, bn := isNumericID(a), isNumericID(b)
	if an && bn {
		x, _ := strconv.ParseUint(a, 10, 64)
		y, _ := strconv.ParseUint(b, 10, 64)
		return cmpUint(x, y)
	}
	switch {
	case a == b:
		return 0
	case an && !bn:
		return -1
	case bn && !an:
		return 1
	case a < b:
		return -1
	}
	return 1
}

// Compare orders versions by SemVer precedence (build metadata ignored).
func (v Version) Compare(o Version) int {
	if c := cmpUint(v.Major, o.Major); c != 0 {
		return c
	}
	if c := cmpUint(v.Minor, o.Minor); c != 0 {
		return c
	}
	if c := cmpUint(v.Patch, o.Patch); c != 0 {
		return c
	}
	switch {
	case len(v.Prerelease) > 0 && len(o.Prerelease) == 0:
		return -1
	case len(v.Prerelease) == 0 && len(o.Prerelease) > 0:
		return 1
	}
	for i := 0; ; i++ {
		switch {
		case i >= len(v.Prerelease) && i >= len(o.Prerelease):
			return 0
		case i >= len(o.Prerelease):
			return 1
		case i >= len(v.Prerelease):
			return -1
		}
		if c := compareIdentifiers(v.Prerelease[i], o.Prerelease[i]); c != 0 {
			return c
		}
	}
}

// ValidRange reports whether s is a valid node-semver range
// (semver.validRange(s) !== null in non-loose mode). The empty string and
// "*" are ranges; "latest", "beta" or "next" are not.
func ValidRange(s string) bool {
	raw := spacesRe.ReplaceAllString(strings.TrimSpace(s), " ")
	if len(raw) > semverMaxLength {
		return false
	}
	for _, part := range strings.Split(raw, "||") {
		if !validRangePart(strings.TrimSpace(part)) {
			return false
		}
	}
	return true
}

func validRangePart(r string) bool {
	r = buildStripRe.ReplaceAllString(r, "")
	if m := hyphenRe.FindStringSubmatch(r); m != nil {
		r = hyphenReplace(m)
	}
	r = compTrimRe.ReplaceAllString(r, "${1}${2}${3}")
	r = tildeTrimRe.ReplaceAllString(r, "${1}~")
	r = caretTrimRe.ReplaceAllString(r, "${1}^")
	for _, tok := range strings.Fields(r) {
		if !validComparatorToken(tok) {
			return false
		}
	}
	return true
}

// hyphenReplace is node-semver's: "1.2.3 - 2.3.4" becomes ">=1.2.3 <=2.3.4".
func hyphenReplace(m []string) string {
	from, fM, fm, fp, fpr := m[1], m[2], m[3], m[4], m[5]
	to, tM, tm, tp, tpr := m[7], m[8], m[9], m[10], m[11]
	switch {
	case isXID(fM):
		from = ""
	case isXID(fm):
		from = ">=" + fM + ".0.0"
	case isXID(fp):
		from = ">=" + fM + "." + fm + ".0"
	case fpr != "":
		from = ">=" + from
	default:
		from = ">=" + from
	}
	switch {
	case isXID(tM):
		to = ""
	case isXID(tm):
		to = "<" + incDecimal(tM) + ".0.0-0"
	case isXID(tp):
		to = "<" + tM + "." + incDecimal(tm) + ".0-0"
	case tpr != "":
		to = "<=" + tM + "." + tm + "." + tp + "-" + tpr
	default:
		to = "<=" + to
	}
	return strings.TrimSpace(from + " " + to)
}

// incDecimal adds one to a decimal string (x.y.z parts are at most 2^53-1
// in node-semver; larger ones fail validation elsewhere).
func incDecimal(s string) string {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return s
	}
	return strconv.FormatUint(n+1, 10)
}

func isXID(s string) bool { return s == "" || s == "x" || s == "X" || s == "*" }

// validXRangeOrder is the negation of node-semver's invalidXRangeOrder.
func validXRangeOrder(major, minor, patch string) bool {
	return !((isXID(major) && !isXID(minor)) || (isXID(minor) && patch != "" && !isXID(patch)))
}

// validComparatorToken: one whitespace-free token of a range is valid
// when one of the replacements of node-semver (caret, tilde, x-range,
// star) turns it into comparators, or when it already is a comparator.
func validComparatorToken(tok string) bool {
	if m := caretRe.FindStringSubmatch(tok); m != nil {
		return true
	}
	if m := tildeRe.FindStringSubmatch(tok); m != nil {
		return true
	}
	if m := xRangeRe.FindStringSubmatch(tok); m != nil {
		if (isXID(m[2]) || isXID(m[3]) || isXID(m[4])) && validXRangeOrder(m[2], m[3], m[4]) {
			return safeParts(m[2], m[3], m[4])
		}
		// A full version (or an invalid x order) is left as it is and
		// must then be a plain comparator.
		return validComparator(tok)
	}
	if starRe.MatchString(tok) {
		return true
	}
	return validComparator(tok)
}

// validComparator is node-semver's Comparator constructor check: an
// operator and a full version whose numbers are at most 2^53-1.
func validComparator(tok string) bool {
	m := comparatorRe.FindStringSubmatch(tok)
	if m == nil {
		return false
	}
	if tok == "" {
		return true
	}
	v := versionLooseRe.FindStringSubmatch(m[2])
	if v == nil {
		return false
	}
	for _, p := range v[1:4] {
		if n, err := strconv.ParseUint(p, 10, 64); err != nil || n > 1<<53-1 {
			return false
		}
	}
	return true
}

// safeParts reports whether the numeric parts are at most 2^53-2 (so that
// the upper bounds x-ranges compute stay safe integers).
func safeParts(parts ...string) bool {
	for _, p := range parts {
		if isXID(p) {
			continue
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || n >= 1<<53-1 {
			return false
		}
	}
	return true
}
