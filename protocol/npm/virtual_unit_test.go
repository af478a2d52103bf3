package npm

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMergePackuments: the merge without a database, over documents as
// upstreams send them (pretty-printed, odd tarball names, install
// scripts) and as the hosted path stores them.
func TestMergePackuments(t *testing.T) {
	first := []byte(`{
  "_id": "p", "_rev": "9-x", "name": "p", "readme": "first",
  "dist-tags": {"latest": "2.0.0", "beta": "3.0.0-b.1"},
  "versions": {
    "1.0.0": {"name": "p", "version": "1.0.0", "description": "one",
              "dist": {"shasum": "aa", "tarball": "https://up.example/p/-/p-1.0.0.tgz"}},
    "2.0.0": {"name": "p", "version": "2.0.0", "scripts": {"postinstall": "x"},
              "dist": {"shasum": "bb", "tarball": "https://up.example/files/odd-name.tgz"}},
    "3.0.0-b.1": {"name": "p", "version": "3.0.0-b.1", "dist": {"shasum": "cc"}}
  },
  "time": {"created": "2020-01-01T00:00:00.000Z", "modified": "2021-01-01T00:00:00.000Z",
           "1.0.0": "2020-01-01T00:00:00.000Z", "2.0.0": "2021-01-01T00:00:00.000Z"},
  "_attachments": {}
}`)
	second := []byte(`{"_id":"p","name":"p","readme":"second","dist-tags":{"latest":"1.5.0","next":"1.5.0","beta":"1.0.0"},` +
		`"versions":{"1.0.0":{"name":"p","version":"1.0.0","description":"other","dist":{"shasum":"dd","tarball":"http://h/npm/a/b/p/-/p-1.0.0.tgz"}},` +
		`"1.5.0":{"name":"p","version":"1.5.0","dist":{"shasum":"ee","tarball":"http://h/npm/a/b/p/-/p-1.5.0.tgz"}}},` +
		`"time":{"created":"2019-01-01T00:00:00.000Z","modified":"2022-01-01T00:00:00.000Z","1.5.0":"2022-01-01T00:00:00.000Z"}}`)
	noV2 := func(v string) bool { return v != "2.0.0" }
	all := func(string) bool { return true }
	base := "http://reg/npm/acme/all/p/-/"
	type doc struct {
		Readme   string                     `json:"readme"`
		Rev      *string                    `json:"_rev"`
		DistTags map[string]string          `json:"dist-tags"`
		Versions map[string]map[string]any  `json:"versions"`
		Time     map[string]string          `json:"time"`
		Att      map[string]json.RawMessage `json:"_attachments"`
	}
	merge := func(corgi bool, in ...mergeInput) doc {
		t.Helper()
		out, err := mergePackuments("p", in, base, corgi)
		if err != nil {
			t.Fatal(err)
		}
		var d doc
		if err := json.Unmarshal(out, &d); err != nil {
			t.Fatalf("merged document is not JSON: %v\n%s", err, out)
		}
		return d
	}
	d := merge(false, mergeInput{body: first, admits: all}, mergeInput{body: second, admits: all})
	if len(d.Versions) != 4 || d.Versions["1.0.0"]["description"] != "one" || d.DistTags["latest"] != "2.0.0" ||
		d.DistTags["next"] != "1.5.0" || d.DistTags["beta"] != "3.0.0-b.1" || d.Readme != "first" || d.Rev != nil || d.Att != nil {
		t.Fatalf("merge: %+v", d)
	}
	if tb := d.Versions["2.0.0"]["dist"].(map[string]any)["tarball"]; tb != base+"odd-name.tgz" {
		t.Fatalf("odd tarball name: %v", tb)
	}
	if tb := d.Versions["3.0.0-b.1"]["dist"].(map[string]any)["tarball"]; tb != base+"p-3.0.0-b.1.tgz" {
		t.Fatalf("missing tarball URL: %v", tb)
	}
	if d.Time["created"] != "2019-01-01T00:00:00.000Z" || d.Time["modified"] != "2022-01-01T00:00:00.000Z" || d.Time["1.5.0"] == "" || d.Time["2.0.0"] == "" {
		t.Fatalf("time: %v", d.Time)
	}
	// The first upstream's latest is denied: recomputed over what is
	// served (1.5.0 beats 1.0.0; the prerelease does not count), and the
	// top-level members follow the upstream that supplies it.
	d = merge(false, mergeInput{body: first, admits: noV2}, mergeInput{body: second, admits: all})
	if d.DistTags["latest"] != "1.5.0" || d.Versions["2.0.0"] != nil || d.Readme != "second" {
		t.Fatalf("denied latest: %v %v", d.DistTags, d.Readme)
	}
	// latest from a later upstream when the first has none served; a
	// stale copy narrowed to its cached versions.
	d = merge(false, mergeInput{body: first, admits: all, keep: map[string]bool{"1.0.0": true}}, mergeInput{body: second, admits: all})
	if len(d.Versions) != 2 || d.DistTags["latest"] != "1.5.0" || d.DistTags["beta"] != "1.0.0" {
		t.Fatalf("stale narrowing: %v %v", d.DistTags, d.Versions)
	}
	// Abbreviated: install fields only, hasInstallScript from scripts.
	out, err := mergePackuments("p", []mergeInput{{body: first, admits: all}}, base, true)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); strings.Contains(s, "readme") || strings.Contains(s, "description") || strings.Contains(s, `"time"`) ||
		!strings.Contains(s, `"hasInstallScript":true`) || !strings.Contains(s, `"modified":"2021-01-01T00:00:00.000Z"`) {
		t.Fatalf("abbreviated: %s", out)
	}
	// No version served: no latest.
	d = merge(false, mergeInput{body: first, admits: func(string) bool { return false }})
	if len(d.Versions) != 0 || len(d.DistTags) != 0 {
		t.Fatalf("nothing served: %+v", d)
	}
	if _, err := mergePackuments("p", []mergeInput{{body: []byte(`{"versions": [`), admits: all}}, base, false); err == nil {
		t.Fatal("a truncated document merged")
	}
}
