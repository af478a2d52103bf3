package npmsemver

import "fmt"

// ValidateDistTag applies the dist-tag rules, shared by the npm protocol
// and the management API: 1..255 characters, no whitespace, control
// characters or "/" / "%" / "\" (they must survive a URL path segment), and
// not a valid SemVer range (npm refuses such tags on the client, and a tag
// like "v1" would shadow versions when resolving "pkg@v1").
func ValidateDistTag(tag string) error {
	if tag == "" || len(tag) > 255 {
		return fmt.Errorf("a dist-tag must have 1 to 255 characters")
	}
	for _, r := range tag {
		if r <= ' ' || r == 0x7f || r == '/' || r == '%' || r == '\\' {
			return fmt.Errorf("dist-tag %q contains a character that is not allowed (whitespace, control, / %% \\)", tag)
		}
	}
	if ValidRange(tag) {
		return fmt.Errorf("tag name must not be a valid SemVer range: %s", tag)
	}
	return nil
}
