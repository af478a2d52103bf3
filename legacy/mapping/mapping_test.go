package mapping

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const yamlRules = `
exact:
  - path: old/app
    namespace: acme
    repository: docker
    image: legacy-app
prefixes:
  - prefix: team-a/
    namespace: team-a
    repository: images
  - prefix: team-a/special/
    namespace: special
    repositoryFromPath: true
  - prefix: platform/
    namespace: platform
    repositoryFromPath: true
`

func TestMap(t *testing.T) {
	r, err := Parse([]byte(yamlRules))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want Target
		why  string // substring of the unmapped reason; "" = mapped
	}{
		{"old/app", Target{"acme", "docker", "legacy-app"}, ""},
		{"team-a/web", Target{"team-a", "images", "web"}, ""},
		{"team-a/web/api", Target{"team-a", "images", "web/api"}, ""},
		{"team-a/special/ci/runner", Target{"special", "ci", "runner"}, ""}, // longest prefix wins
		{"platform/ci/runner/x", Target{"platform", "ci", "runner/x"}, ""},
		{"platform/ci", Target{}, "no image"},
		{"other/app", Target{}, "no rule"},
		{"old", Target{}, "no rule"},
		{"Bad/Upper", Target{}, "not a valid repository name"},
		{"platform/-x/y", Target{}, "not a valid"},
	}
	for _, c := range cases {
		got, err := r.Explain(c.path)
		if c.why == "" {
			if err != nil || got != c.want {
				t.Errorf("%s: %+v %v, want %+v", c.path, got, err, c.want)
			}
			continue
		}
		if !errors.Is(err, ErrUnmapped) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: %v, want unmapped (%s)", c.path, err, c.why)
		}
		if _, ok := r.Map(c.path); ok {
			t.Errorf("%s: Map says mapped", c.path)
		}
	}
}

func TestLoadJSONAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rules.json")
	if err := os.WriteFile(p, []byte(`{"prefixes":[{"prefix":"","namespace":"legacy","repositoryFromPath":true}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := r.Map("a/b/c"); !ok || got != (Target{"legacy", "a", "b/c"}) {
		t.Fatalf("json rules: %+v %v", got, ok)
	}
	bad := map[string]string{
		"empty":             `{}`,
		"unknown field":     `{"prefixes":[{"prefix":"","namespace":"x","repository":"y","extra":1}]}`,
		"duplicate exact":   "exact:\n - {path: a/b, namespace: n, repository: r, image: i}\n - {path: a/b, namespace: n, repository: r, image: j}",
		"duplicate prefix":  "prefixes:\n - {prefix: a/, namespace: n, repository: r}\n - {prefix: a/, namespace: m, repository: r}",
		"prefix without /":  "prefixes:\n - {prefix: a, namespace: n, repository: r}",
		"both repositories": "prefixes:\n - {prefix: a/, namespace: n, repository: r, repositoryFromPath: true}",
		"bad namespace":     "prefixes:\n - {prefix: a/, namespace: N_S, repository: r}",
		"bad image":         "exact:\n - {path: a/b, namespace: n, repository: r, image: 'UP'}",
		"not yaml":          "{{{",
	}
	for name, text := range bad {
		if _, err := Parse([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}
