package store

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrorCode classifies a DomainError for API layers (GraphQL extensions.code).
type ErrorCode string

const (
	CodeNotFound      ErrorCode = "NOT_FOUND"
	CodeAlreadyExists ErrorCode = "ALREADY_EXISTS"
	CodeInvalidInput  ErrorCode = "INVALID_INPUT"
	CodeConflict      ErrorCode = "CONFLICT"
	CodeForbidden     ErrorCode = "FORBIDDEN"
)

// DomainError is an expected failure of a management operation (missing
// row, taken name, bad input, refused state change). Its message is meant
// for the caller and never contains SQL; anything else a management method
// returns is an internal error.
type DomainError struct {
	Code    ErrorCode
	Message string
}

func (e *DomainError) Error() string { return e.Message }

func domainErr(code ErrorCode, format string, args ...any) error {
	return &DomainError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// DomainErrorCode returns the code of a DomainError in err's chain.
func DomainErrorCode(err error) (ErrorCode, bool) {
	var de *DomainError
	if errors.As(err, &de) {
		return de.Code, true
	}
	return "", false
}

func pgCode(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

// Input rules (docs/schema.md "Lengths, names and limits": slug, names
// 255; description 1024).
const (
	MaxSlugLength        = 255
	MaxNameLength        = 255
	MaxDescriptionLength = 1024
)

var (
	// Namespace slugs appear in every URL (/v2/<slug>/..., /maven/<slug>/...):
	// lowercase letters, digits and hyphens, starting and ending with a
	// letter or digit, no "--".
	slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9]|-[a-z0-9])*$`)
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
		return domainErr(CodeInvalidInput, "slug must not be empty")
	case utf8.RuneCountInString(slug) > MaxSlugLength:
		return domainErr(CodeInvalidInput, "slug must be at most %d characters", MaxSlugLength)
	case !slugPattern.MatchString(slug):
		return domainErr(CodeInvalidInput,
			"slug %q is invalid: use lowercase letters, digits and single hyphens, starting and ending with a letter or digit", slug)
	case reservedSlugs[slug]:
		return domainErr(CodeInvalidInput, "slug %q is reserved", slug)
	}
	return nil
}

// ValidateRepositoryName checks the repository (and collection) name rules.
func ValidateRepositoryName(what, name string) error {
	switch {
	case name == "":
		return domainErr(CodeInvalidInput, "%s name must not be empty", what)
	case utf8.RuneCountInString(name) > MaxNameLength:
		return domainErr(CodeInvalidInput, "%s name must be at most %d characters", what, MaxNameLength)
	case !namePattern.MatchString(name):
		return domainErr(CodeInvalidInput,
			"%s name %q is invalid: use lowercase letters and digits, separated by single '.', '_' or '-'", what, name)
	}
	return nil
}

// ValidateDescription checks a free-text description.
func ValidateDescription(d string) error {
	switch {
	case !utf8.ValidString(d):
		return domainErr(CodeInvalidInput, "description must be valid UTF-8")
	case strings.ContainsRune(d, 0):
		return domainErr(CodeInvalidInput, "description must not contain NUL characters")
	case utf8.RuneCountInString(d) > MaxDescriptionLength:
		return domainErr(CodeInvalidInput, "description must be at most %d characters", MaxDescriptionLength)
	}
	return nil
}

// lookupKey is a namespace slug or name used only for lookups: anything
// that cannot be a valid identifier simply matches nothing, so it is
// checked for what PostgreSQL would refuse (invalid UTF-8, NUL, length).
func lookupable(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsRune(s, 0) && len(s) <= 4*MaxNameLength
}
