package npmpublish

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// decodeJSON is json.Unmarshal after CheckJSONText.
func decodeJSON(raw []byte, v any) error {
	if err := CheckJSONText(raw); err != nil {
		return refuse("malformed JSON body: %v", err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return refuse("malformed JSON body: %v", err)
	}
	return nil
}

// CheckJSONText refuses JSON text that encoding/json would accept but
// PostgreSQL cannot store, in jsonb or text: invalid UTF-8 (Go would
// silently replace it), the escape \u0000, and UTF-16 surrogates that do
// not pair up. It looks at escapes wherever they are: in valid JSON a
// backslash only occurs inside strings, and invalid JSON fails to decode
// anyway.
func CheckJSONText(b []byte) error {
	if !utf8.Valid(b) {
		return errors.New("the body is not valid UTF-8")
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 >= len(b) {
			return nil // truncated: the decoder reports it
		}
		if b[i+1] != 'u' {
			i++ // a one-character escape, \\ included
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			return nil // the decoder reports it
		}
		switch {
		case r == 0:
			return errors.New(`the escape \u0000 is not allowed in strings`)
		case r >= 0xDC00 && r <= 0xDFFF:
			return fmt.Errorf(`lone UTF-16 surrogate \u%04x`, r)
		case r >= 0xD800 && r <= 0xDBFF:
			var low rune
			ok := i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u'
			if ok {
				low, ok = hex4(b, i+8)
			}
			if !ok || low < 0xDC00 || low > 0xDFFF {
				return fmt.Errorf(`lone UTF-16 surrogate \u%04x`, r)
			}
			i += 11
			continue
		}
		i += 5
	}
	return nil
}

// hex4 parses the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
