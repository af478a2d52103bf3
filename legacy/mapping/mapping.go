// Package mapping decides where each repository of a legacy registry:2
// lands: a (namespace, container repository, image) of ours. The rules
// come from a file (YAML or JSON) the operator writes; a legacy path that
// no rule maps is reported, never guessed.
//
//	exact:                      # one legacy path -> one target (checked first)
//	  - path: old/app
//	    namespace: acme
//	    repository: docker
//	    image: app
//	prefixes:                   # longest prefix wins
//	  - prefix: team-a/         # the rest of the path is the image
//	    namespace: team-a
//	    repository: images
//	  - prefix: platform/       # first component after the prefix is the
//	    namespace: platform     # repository, the rest the image
//	    repositoryFromPath: true
package mapping

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Target is where a legacy repository lands.
type Target struct {
	Namespace, Repository, Image string
}

// ExactRule maps one legacy path.
type ExactRule struct {
	Path       string `yaml:"path" json:"path"`
	Namespace  string `yaml:"namespace" json:"namespace"`
	Repository string `yaml:"repository" json:"repository"`
	Image      string `yaml:"image" json:"image"`
}

// PrefixRule maps every legacy path under a prefix.
type PrefixRule struct {
	// Prefix is "" (everything) or ends with "/".
	Prefix    string `yaml:"prefix" json:"prefix"`
	Namespace string `yaml:"namespace" json:"namespace"`
	// Repository is the fixed repository; the rest of the path is the image.
	Repository string `yaml:"repository" json:"repository"`
	// RepositoryFromPath takes the repository from the first component
	// after the prefix instead (Repository must then be empty).
	RepositoryFromPath bool `yaml:"repositoryFromPath" json:"repositoryFromPath"`
}

// Rules is a loaded, validated rule set. It is safe for concurrent use.
type Rules struct {
	Exact    []ExactRule  `yaml:"exact" json:"exact"`
	Prefixes []PrefixRule `yaml:"prefixes" json:"prefixes"`

	exact map[string]Target
}

// ErrUnmapped: no rule maps the legacy path.
var ErrUnmapped = errors.New("mapping: no rule maps the legacy path")

// Load reads and validates a rule file (YAML, or JSON, which YAML reads).
// Unknown fields, duplicate exact paths and duplicate prefixes are errors.
func Load(path string) (*Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mapping: read %s: %w", path, err)
	}
	r, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("mapping: %s: %w", path, err)
	}
	return r, nil
}

// Parse reads and validates rules from YAML or JSON text.
func Parse(b []byte) (*Rules, error) {
	r := &Rules{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("parse rules: %w", err)
	}
	if err := r.compile(); err != nil {
		return nil, err
	}
	return r, nil
}

// component is one path component of an OCI name (distribution's grammar).
var component = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)

// ValidName reports whether s is a "/"-separated OCI name (one component
// or more).
func ValidName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range strings.Split(s, "/") {
		if !component.MatchString(c) {
			return false
		}
	}
	return true
}

// The namespace slug and repository name grammars of store
// (namespace_errors.go); a target that store would refuse is unmapped here,
// not failed later.
var (
	slugPattern = regexp.MustCompile(`^[a-z](?:[a-z0-9]|-[a-z0-9])*$`)
	repoPattern = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)
)

func validNamespace(s string) bool  { return len(s) >= 2 && len(s) <= 63 && slugPattern.MatchString(s) }
func validRepository(s string) bool { return len(s) <= 255 && repoPattern.MatchString(s) }

func (r *Rules) compile() error {
	if len(r.Exact) == 0 && len(r.Prefixes) == 0 {
		return errors.New("no rules: give exact and/or prefixes")
	}
	r.exact = make(map[string]Target, len(r.Exact))
	for i, e := range r.Exact {
		if !ValidName(e.Path) {
			return fmt.Errorf("exact[%d]: invalid legacy path %q", i, e.Path)
		}
		if _, dup := r.exact[e.Path]; dup {
			return fmt.Errorf("exact[%d]: path %q mapped twice", i, e.Path)
		}
		t := Target{Namespace: e.Namespace, Repository: e.Repository, Image: e.Image}
		if err := t.validate(); err != nil {
			return fmt.Errorf("exact[%d] (%s): %w", i, e.Path, err)
		}
		r.exact[e.Path] = t
	}
	seen := map[string]bool{}
	for i, p := range r.Prefixes {
		if p.Prefix != "" && (!strings.HasSuffix(p.Prefix, "/") || !ValidName(strings.TrimSuffix(p.Prefix, "/"))) {
			return fmt.Errorf("prefixes[%d]: prefix %q must be empty or a name followed by /", i, p.Prefix)
		}
		if seen[p.Prefix] {
			return fmt.Errorf("prefixes[%d]: prefix %q given twice", i, p.Prefix)
		}
		seen[p.Prefix] = true
		if !validNamespace(p.Namespace) {
			return fmt.Errorf("prefixes[%d]: invalid namespace %q", i, p.Namespace)
		}
		switch {
		case p.RepositoryFromPath && p.Repository != "":
			return fmt.Errorf("prefixes[%d]: repository and repositoryFromPath are exclusive", i)
		case !p.RepositoryFromPath && !validRepository(p.Repository):
			return fmt.Errorf("prefixes[%d]: invalid repository %q", i, p.Repository)
		}
	}
	// Longest prefix first.
	slices.SortStableFunc(r.Prefixes, func(a, b PrefixRule) int { return len(b.Prefix) - len(a.Prefix) })
	return nil
}

func (t Target) validate() error {
	switch {
	case !validNamespace(t.Namespace):
		return fmt.Errorf("invalid namespace %q", t.Namespace)
	case !validRepository(t.Repository):
		return fmt.Errorf("invalid repository %q", t.Repository)
	case !ValidName(t.Image):
		return fmt.Errorf("invalid image %q", t.Image)
	}
	return nil
}

// Map returns the target of a legacy path; false when no rule maps it.
func (r *Rules) Map(legacyPath string) (Target, bool) {
	t, err := r.Explain(legacyPath)
	return t, err == nil
}

// Explain is Map with the reason a path is unmapped (ErrUnmapped wrapped).
func (r *Rules) Explain(legacyPath string) (Target, error) {
	if !ValidName(legacyPath) {
		return Target{}, fmt.Errorf("%w: %q is not a valid repository name", ErrUnmapped, legacyPath)
	}
	if t, ok := r.exact[legacyPath]; ok {
		return t, nil
	}
	for _, p := range r.Prefixes {
		rest, ok := strings.CutPrefix(legacyPath, p.Prefix)
		if !ok {
			continue
		}
		t := Target{Namespace: p.Namespace, Repository: p.Repository, Image: rest}
		if p.RepositoryFromPath {
			repo, image, found := strings.Cut(rest, "/")
			if !found {
				return Target{}, fmt.Errorf("%w: %q under prefix %q has no image below its repository component",
					ErrUnmapped, legacyPath, p.Prefix)
			}
			t.Repository, t.Image = repo, image
		}
		if err := t.validate(); err != nil {
			return Target{}, fmt.Errorf("%w: %q: %v", ErrUnmapped, legacyPath, err)
		}
		return t, nil
	}
	return Target{}, fmt.Errorf("%w: %q", ErrUnmapped, legacyPath)
}
