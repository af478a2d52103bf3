package npm

import (
	"strings"

	"github.com/artifact-registry/artifact-registry/internal/npmsemver"
	"github.com/artifact-registry/artifact-registry/protocol/npm/npmname"
)

// tarballFileName is the registry's file name of a version's tarball
// (npmjs: /@scope/name/-/name-1.0.0.tgz).
func tarballFileName(name, version string) string {
	return npmname.Base(name) + "-" + version + ".tgz"
}

// versionFromFileName extracts the version from a tarball file name of
// the package, or reports false.
func versionFromFileName(name, file string) (string, bool) {
	v, ok := strings.CutPrefix(file, npmname.Base(name)+"-")
	if !ok {
		return "", false
	}
	v, ok = strings.CutSuffix(v, ".tgz")
	if !ok || !npmsemver.ValidVersion(v) {
		return "", false
	}
	return v, true
}

// validateTag applies the dist-tag rules (npmsemver.ValidateDistTag).
func validateTag(tag string) error { return npmsemver.ValidateDistTag(tag) }
