package npm

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestValidateTag(t *testing.T) {
	t.Parallel()
	for _, tag := range []string{"latest", "beta", "next", "legacy", "v2-beta", "canary-1", "rc"} {
		if err := validateTag(tag); err != nil {
			t.Errorf("validateTag(%q) = %v", tag, err)
		}
	}
	for _, tag := range []string{"", "v1", "1.x", "^2", "1.0.0", "*", "a b", "a/b", "a%b", strings.Repeat("t", 256)} {
		if err := validateTag(tag); err == nil {
			t.Errorf("validateTag(%q) passed", tag)
		}
	}
}

func TestFileNames(t *testing.T) {
	t.Parallel()
	if got := tarballFileName("@anchor/lib", "1.0.0"); got != "lib-1.0.0.tgz" {
		t.Errorf("tarballFileName = %q", got)
	}
	for _, c := range []struct{ name, file, version string }{
		{"lib", "lib-1.0.0.tgz", "1.0.0"},
		{"@a/lib", "lib-2.0.0-beta.1.tgz", "2.0.0-beta.1"},
		{"a-b", "a-b-1.2.3.tgz", "1.2.3"},
		{"lib", "lib-1.0.tgz", ""},
		{"lib", "other-1.0.0.tgz", ""},
		{"lib", "lib-1.0.0.tar", ""},
	} {
		v, ok := versionFromFileName(c.name, c.file)
		if v != c.version || ok != (c.version != "") {
			t.Errorf("versionFromFileName(%q, %q) = %q %v", c.name, c.file, v, ok)
		}
	}
}

// TestEachMember compares the scanner with encoding/json on jsonb-shaped
// and other valid objects.
func TestEachMember(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{}`, ` { } `,
		`{"a": 1}`,
		`{"a": "x, y: {z}", "b": [1, 2, {"c": "]"}], "d": {"e": null, "f": true}, "g": -1.5e3}`,
		`{"esc\"aped": "quote \" and \\ backslash", "u": "\u00e9\u2028", "sp": "  spaces  inside  "}`,
		"{\n\t\"a\" :\n [ 1 ,\n 2 ] ,\"b\":{}}",
		`{"dist": {"shasum": "abc", "tarball": "old", "integrity": "sha512-x"}, "name": "n"}`,
	}
	for _, d := range docs {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &want); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		got := map[string]string{}
		var buf []byte
		err := eachMember([]byte(d), &buf, func(k, v []byte) error {
			var key string
			if err := json.Unmarshal(k, &key); err != nil {
				return err
			}
			got[key] = string(v)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d members, want %d", d, len(got), len(want))
		}
		for k, raw := range want {
			var c bytes.Buffer
			_ = json.Compact(&c, raw)
			if got[k] != c.String() {
				t.Errorf("%s: %q = %s, want %s", d, k, got[k], c.String())
			}
		}
	}
	for _, bad := range []string{``, `[]`, `{"a"}`, `{"a": }`, `{"a": 1`, `{"a": "x}`, `{a: 1}`} {
		var buf []byte
		if err := eachMember([]byte(bad), &buf, func(k, v []byte) error { return nil }); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestBuildDocuments checks the rendered documents are valid JSON with the
// expected shape.
func TestBuildDocuments(t *testing.T) {
	t.Parallel()
	st := syntheticState(30)
	docs, err := buildDocuments(st, "http://r/npm/acme/js/big/-/")
	if err != nil {
		t.Fatal(err)
	}
	var full, corgi map[string]any
	if err := json.Unmarshal(docs[0], &full); err != nil {
		t.Fatalf("full: %v", err)
	}
	if err := json.Unmarshal(docs[2], &corgi); err != nil {
		t.Fatalf("corgi: %v", err)
	}
	v := full["versions"].(map[string]any)["0.2.9"].(map[string]any)
	if v["dist"].(map[string]any)["tarball"] != "http://r/npm/acme/js/big/-/big-0.2.9.tgz" || v["dist"].(map[string]any)["fileCount"] != 2.0 {
		t.Errorf("dist: %v", v["dist"])
	}
	if full["_rev"] != "30-0123456789abcdef0123456789abcdef" || full["readme"] != "# big" || full["description"] == nil {
		t.Errorf("envelope: %v %v %v", full["_rev"], full["readme"], full["description"])
	}
	cv := corgi["versions"].(map[string]any)["0.0.0"].(map[string]any)
	for k := range cv {
		if !abbreviatedSet[k] {
			t.Errorf("corgi field %q", k)
		}
	}
	if len(cv) != 6 { // name version dist engines dependencies _hasShrinkwrap
		t.Errorf("corgi version: %v", cv)
	}
	var tags map[string]string
	if err := json.Unmarshal(docs[1], &tags); err != nil || tags["latest"] != "0.2.9" {
		t.Errorf("dist-tags: %s", docs[1])
	}
}
