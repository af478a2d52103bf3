package store

import "testing"

func TestValidateNamespaceSlug(t *testing.T) {
	t.Parallel()
	for _, slug := range []string{"ab", "acme", "a1", "team-42", "a-b-c", "x01234567890123456789012345678901234567890123456789012345678901"} {
		if err := ValidateNamespaceSlug(slug); err != nil {
			t.Errorf("%q refused: %v", slug, err)
		}
	}
	for _, slug := range []string{"", "a", "1abc", "-abc", "abc-", "a--b", "Acme", "a_b", "a.b", "v2", "graphql",
		"a0123456789012345678901234567890123456789012345678901234567890123"} {
		err := ValidateNamespaceSlug(slug)
		if err == nil || CodeOf(err) != CodeInvalidInput {
			t.Errorf("%q: %v; want %s", slug, err, CodeInvalidInput.Name)
		}
	}
}
