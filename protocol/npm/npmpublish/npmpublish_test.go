package npmpublish

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testsupport/npmpack"
)

// TestSplitPublish checks the splitter on its own: the document comes back
// without the data string, equal as JSON to the input with data "".
func TestSplitPublish(t *testing.T) {
	t.Parallel()
	in := `{"a": [1, 2.5e3, true, null, {"b": "c\"d\\"}], "_attachments": {"f.tgz": {"data": "aGVs\/bG8=\n", "length": 5}, "g": 3}, "z": "\u00e9"}`
	var got []byte
	meta, err := Split(strings.NewReader(in), 1<<20, func(file string, r io.Reader) error {
		if file != "f.tgz" {
			t.Errorf("file %q", file)
		}
		var err error
		got, err = io.ReadAll(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "aGVs/bG8=\n" {
		t.Errorf("data %q", got)
	}
	var a, b any
	want := strings.Replace(in, `"aGVs\/bG8=\n"`, `""`, 1)
	if json.Unmarshal(meta, &a) != nil || json.Unmarshal([]byte(want), &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("meta %s\nwant %s", meta, want)
	}
	// The limit counts the document, not the data.
	if _, err := Split(strings.NewReader(in), 40, func(string, io.Reader) error { return nil }); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("limit: %v", err)
	}
	for _, bad := range []string{``, `[]`, `{"a" 1}`, `{"a": }`, `{"a": 1,}`, `{"a": [1 2]}`, "{\"a\": \"\x01\"}", `{"a": "b"} x`} {
		if _, err := Split(strings.NewReader(bad), 1<<20, func(string, io.Reader) error { return nil }); err == nil {
			if json.Valid([]byte(bad)) {
				continue
			}
			// The splitter may pass what encoding/json then refuses.
			if _, err := ParseDocument([]byte(bad)); err == nil {
				t.Errorf("%q accepted", bad)
			}
		}
	}
	// An attachment named twice: the data would stream from one member and
	// the document decode to the other.
	for _, dup := range []string{
		`{"_attachments": {"f.tgz": {"data": "aGVsbG8="}, "f.tgz": null}}`,
		`{"_attachments": {"f.tgz": null, "f\u002etgz": {"data": "aGVsbG8="}}}`,
	} {
		_, err := Split(strings.NewReader(dup), 1<<20, func(_ string, r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		})
		var pe *Error
		if !errors.As(err, &pe) || pe.TooLarge || !strings.Contains(pe.Message, "named twice") {
			t.Errorf("%s: %v, want a 400 for an attachment named twice", dup, err)
		}
	}
}

// TestCheckJSONText pins the escapes that are refused and those that are not.
func TestCheckJSONText(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{
		`"plain"`:                true,
		`"\\u0000"`:              true, // an escaped backslash, then text
		`"\u0000"`:               false,
		`"\ud83d\ude00"`:         true,
		`"\uD83D\uDE00"`:         true,
		`"\ud83d"`:               false,
		`"\ude00"`:               false,
		`"\ud83d\n"`:             false,
		`"\ud83d\ud83d"`:         false,
		"\"\xc3\xa9\"":           true,
		"\"\xc3\"":               false,
		"\"\xed\xa0\x80\"":       false, // a surrogate encoded in UTF-8
		`"\u00e9\u0041\"\\\/\b"`: true,
	} {
		if err := CheckJSONText([]byte(in)); (err == nil) != ok {
			t.Errorf("CheckJSONText(%q) = %v", in, err)
		}
	}
}

func TestInspectTarball(t *testing.T) {
	t.Parallel()
	pj := map[string]any{"name": "x", "version": "1.0.0"}
	sw, gyp, err := inspectTarball(bytes.NewReader(npmpack.Tarball(t, pj, map[string]string{"npm-shrinkwrap.json": "{}", "binding.gyp": "{}"})), 1<<30)
	if err != nil || !sw || !gyp {
		t.Errorf("with both: %v %v %v", sw, gyp, err)
	}
	sw, gyp, err = inspectTarball(bytes.NewReader(npmpack.Tarball(t, pj, map[string]string{"lib/npm-shrinkwrap.json": "{}"})), 1<<30)
	if err != nil || sw || gyp {
		t.Errorf("nested file: %v %v %v", sw, gyp, err)
	}
	if _, _, err := inspectTarball(strings.NewReader("not gzip"), 1<<30); err == nil {
		t.Errorf("garbage accepted")
	}
}

// TestInspectTarballLimit: the inspection stops at its limit, counting
// what gzip expands, and the error says so.
func TestInspectTarballLimit(t *testing.T) {
	t.Parallel()
	pj := map[string]any{"name": "x", "version": "1.0.0"}
	bomb := npmpack.GzipBomb(t, pj, 64<<20)
	_, _, err := inspectTarball(bytes.NewReader(bomb), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "expands past") {
		t.Fatalf("64 MiB under a 1 MiB limit: %v", err)
	}
	tgz := append(npmpack.GzipBomb(t, pj, 8<<20), npmpack.GzipTrailer(t)...)
	if _, _, err := inspectTarball(bytes.NewReader(tgz), 16<<20); err != nil {
		t.Fatalf("8 MiB under a 16 MiB limit: %v", err)
	}
}
