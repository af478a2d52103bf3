package store

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/artifact-registry/artifact-registry/store/internal/errs"
)

// Input rules (docs/schema.md "Lengths, names and limits": slug, names
// 255; description 1024).
const (
	MinSlugLength        = 2
	MaxSlugLength        = 63
	MaxNameLength        = 255
	MaxDescriptionLength = 1024
)

var (
	// Namespace slugs appear in every URL (/v2/<slug>/..., /maven/<slug>/...)
	// and may become a DNS label: lowercase letters, digits and hyphens,
	// starting with a letter, ending with a letter or digit, no "--".
	slugPattern = regexp.MustCompile(`^[a-z](?:[a-z0-9]|-[a-z0-9])*$`)
	// Repository and collection names are one URL path segment: lowercase
	// alphanumeric runs joined by single '.', '_' or '-'.
	namePattern = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*$`)
	// reservedSlugs are refused at creation; the list stays out of the
	// database (docs/schema.md "Slugs and anchors").
	reservedSlugs = map[string]bool{
		"admin": true, "api": true, "graphql": true, "health": true, "metrics": true,
		"maven": true, "npm": true, "v2": true, "static": true, "assets": true,
	}
)

// ValidateNamespaceSlug checks the slug rules.
func ValidateNamespaceSlug(slug string) error {
	switch {
	case slug == "":
		return errs.New(CodeInvalidInput, "slug must not be empty")
	case utf8.RuneCountInString(slug) < MinSlugLength || utf8.RuneCountInString(slug) > MaxSlugLength:
		return errs.New(CodeInvalidInput, "slug must be %d to %d characters", MinSlugLength, MaxSlugLength)
	case !slugPattern.MatchString(slug):
		return errs.New(CodeInvalidInput,
			"slug %q is invalid: use lowercase letters, digits and single hyphens, starting with a letter and ending with a letter or digit", slug)
	case reservedSlugs[slug]:
		return errs.New(CodeInvalidInput, "slug %q is reserved", slug)
	}
	return nil
}

// ValidateRepositoryName checks the repository (and collection) name rules.
func ValidateRepositoryName(what, name string) error {
	switch {
	case name == "":
		return errs.New(CodeInvalidInput, "%s name must not be empty", what)
	case utf8.RuneCountInString(name) > MaxNameLength:
		return errs.New(CodeInvalidInput, "%s name must be at most %d characters", what, MaxNameLength)
	case !namePattern.MatchString(name):
		return errs.New(CodeInvalidInput,
			"%s name %q is invalid: use lowercase letters and digits, separated by single '.', '_' or '-'", what, name)
	}
	return nil
}

// ValidateDescription checks a free-text description.
func ValidateDescription(d string) error {
	switch {
	case !utf8.ValidString(d):
		return errs.New(CodeInvalidInput, "description must be valid UTF-8")
	case strings.ContainsRune(d, 0):
		return errs.New(CodeInvalidInput, "description must not contain NUL characters")
	case utf8.RuneCountInString(d) > MaxDescriptionLength:
		return errs.New(CodeInvalidInput, "description must be at most %d characters", MaxDescriptionLength)
	}
	return nil
}
