package npmpublish

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSplitPublish: the streaming splitter agrees with encoding/json. On
// a valid JSON object it succeeds (unless it breaks one of the publish
// rules: one data string, one _attachments, no attachment named twice,
// bounded nesting), returns valid JSON, and hands over the data string
// encoding/json decodes; it never panics on anything.
func FuzzSplitPublish(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"name":"a","versions":{"1.0.0":{"name":"a"}},"_attachments":{"a-1.0.0.tgz":{"data":"aGVsbG8=","length":5}}}`,
		`{"_attachments":{"f":{"content_type":"x","data":"aGVs\/bG8=\n"}},"versions":{}}`,
		`{"_attachments":{"f":{"data":null}},"a":[1,-2.5e+3,true,false,null,"\u00e9\"\\"]}`,
		`{"_attachments":{"f":{"data":"\u0041\u0042"}},"b":{"c":{"d":[]}}}`,
		`{"_attachments":[],"data":"x"}`,
		`{"a" : "b" , "c" : [ 1 , 2 ] }`,
		`{"a":"\ud83d\ude00"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var got *string
		meta, err := Split(strings.NewReader(in), 1<<20, func(_ string, r io.Reader) error {
			b, err := io.ReadAll(r)
			s := string(b)
			got = &s
			return err
		})
		var doc map[string]any
		if json.Unmarshal([]byte(in), &doc) != nil || doc == nil {
			return // not an object: any refusal will do, as long as nothing panicked
		}
		if err != nil {
			var pe *Error
			if errors.As(err, &pe) && (strings.Contains(pe.Message, "exactly one attachment") ||
				strings.Contains(pe.Message, "two _attachments") || strings.Contains(pe.Message, "named twice") || strings.Contains(pe.Message, "nested too deeply")) {
				return
			}
			if errors.Is(err, errNotBase64) {
				return // an escaped non-ASCII character in the data string
			}
			t.Fatalf("valid object %q refused: %v", in, err)
		}
		if !json.Valid(meta) {
			t.Fatalf("%q split into invalid JSON %q", in, meta)
		}
		atts, _ := doc["_attachments"].(map[string]any)
		var want *string
		for _, a := range atts {
			if m, ok := a.(map[string]any); ok {
				if s, ok := m["data"].(string); ok {
					want = &s
				}
			}
		}
		switch {
		case want == nil && got != nil, want != nil && got == nil:
			t.Fatalf("%q: data %v, encoding/json finds %v", in, got, want)
		case want != nil && *want != *got && replaceInvalidUTF8(*got) != *want:
			t.Fatalf("%q: data %q, encoding/json decodes %q", in, *got, *want)
		}
	})
}

// replaceInvalidUTF8 replaces each byte that is not part of valid UTF-8
// with U+FFFD, as encoding/json decodes a string (strings.ToValidUTF8
// replaces a run of them with one).
func replaceInvalidUTF8(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
