package npm

import "errors"

// A small scanner for the one JSON shape packument builds read thousands of
// times: a stored package.json as PostgreSQL renders jsonb (valid JSON, an
// object, a space after every ':' and ','). It splits the object at its top
// level and compacts values while copying, in one pass and without
// allocating per value, so a 1,000-version packument is assembled in about
// a millisecond instead of decoding and re-encoding every version.

var errScan = errors.New("npm: malformed JSON object")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// scanString returns the index after the string starting at b[i] == '"'.
func scanString(b []byte, i int) (int, error) {
	i++
	for i < len(b) {
		switch b[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1, nil
		default:
			i++
		}
	}
	return 0, errScan
}

// scanValue returns the end of the value starting at b[i] (first
// non-space byte) and whether it contains whitespace outside strings.
func scanValue(b []byte, i int) (end int, spaces bool, err error) {
	depth := 0
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			if i, err = scanString(b, i); err != nil {
				return 0, false, err
			}
			if depth == 0 {
				return i, spaces, nil
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return i, spaces, nil
			}
			depth--
			if depth == 0 {
				return i + 1, spaces, nil
			}
		case c == ',':
			if depth == 0 {
				return i, spaces, nil
			}
		case isSpace(c):
			if depth == 0 {
				return i, spaces, nil
			}
			spaces = true
		}
		i++
	}
	if depth == 0 {
		return i, spaces, nil
	}
	return 0, false, errScan
}

// appendCompact appends v without the whitespace outside strings.
func appendCompact(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case c == '"':
			end, err := scanString(v, i)
			if err != nil {
				return append(dst, v[i:]...)
			}
			dst = append(dst, v[i:end]...)
			i = end
		case isSpace(c):
			i++
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// eachMember calls fn for every member of the JSON object obj with the
// key as it appears (quoted) and the value compacted into buf (the slice
// is only valid during the call).
func eachMember(obj []byte, buf *[]byte, fn func(key, val []byte) error) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return errScan
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return errScan
		}
		kend, err := scanString(obj, i)
		if err != nil {
			return err
		}
		key := obj[i:kend]
		i = skipSpace(obj, kend)
		if i >= len(obj) || obj[i] != ':' {
			return errScan
		}
		i = skipSpace(obj, i+1)
		vend, spaces, err := scanValue(obj, i)
		if err != nil || vend == i {
			return errScan
		}
		val := obj[i:vend]
		if spaces {
			*buf = appendCompact((*buf)[:0], val)
			val = *buf
		}
		if err := fn(key, val); err != nil {
			return err
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) {
			return errScan
		}
		if obj[i] == '}' {
			return nil
		}
		if obj[i] != ',' {
			return errScan
		}
		i = skipSpace(obj, i+1)
	}
}

// keyIs compares a quoted key with a plain field name (keys with escapes
// never match a field name we look for).
func keyIs(key []byte, name string) bool {
	return len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
}
