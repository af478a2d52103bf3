// Package npmname holds npm's rules for package names. It depends on the
// standard library alone, so that fuzzing the publish parser that checks
// names compiles nothing of the registry's store.
package npmname

import (
	"fmt"
	"strings"
)

// maxNameLength is npm's limit for new package names (validate-npm-package-name).
const maxNameLength = 214

// nodeBuiltins are the core module names npm refuses as new package names
// (validate-npm-package-name's builtin-modules.json, node 20).
var nodeBuiltins = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`assert assert/strict async_hooks buffer child_process cluster console
		constants crypto dgram diagnostics_channel dns dns/promises domain events fs fs/promises http http2
		https inspector inspector/promises module net os path path/posix path/win32 perf_hooks process
		punycode querystring readline readline/promises repl stream stream/consumers stream/promises
		stream/web string_decoder sys timers timers/promises tls trace_events tty url util util/types v8
		vm wasi worker_threads zlib`) {
		nodeBuiltins[n] = true
	}
}

// URLSafe reports whether encodeURIComponent(s) === s: only
// A-Z a-z 0-9 - _ . ! ~ * ' ( ).
func URLSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_.!~*'()", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Validate applies npm's rules for new package names
// (validate-npm-package-name, validForNewPackages): lowercase, URL-friendly,
// at most 214 characters, no leading dot, hyphen or underscore, no core
// module name, an optional @scope/ prefix.
func Validate(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("name length must be greater than zero")
	case len(name) > maxNameLength:
		return fmt.Errorf("name can no longer contain more than %d characters", maxNameLength)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("name cannot contain leading or trailing spaces")
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("name cannot start with a period")
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("name cannot start with a hyphen")
	case strings.HasPrefix(name, "_"):
		return fmt.Errorf("name cannot start with an underscore")
	case strings.ToLower(name) != name:
		return fmt.Errorf("name can no longer contain capital letters")
	case name == "node_modules" || name == "favicon.ico":
		return fmt.Errorf("%s is not a valid package name", name)
	case nodeBuiltins[name]:
		return fmt.Errorf("%s is a core module name", name)
	}
	scope, pkg, scoped := Split(name)
	if strings.ContainsAny(pkg, "~'!()*") {
		return fmt.Errorf("name can no longer contain special characters (\"~'!()*\")")
	}
	if scoped {
		if scope == "" || pkg == "" || strings.Contains(pkg, "/") {
			return fmt.Errorf("name can only contain URL-friendly characters")
		}
		if strings.HasPrefix(pkg, ".") {
			return fmt.Errorf("name cannot start with a period")
		}
		if !URLSafe(scope) || !URLSafe(pkg) {
			return fmt.Errorf("name can only contain URL-friendly characters")
		}
		return nil
	}
	if !URLSafe(name) {
		return fmt.Errorf("name can only contain URL-friendly characters")
	}
	return nil
}

// Plausible is the cheap check of read paths: a name that could have
// been published (lookups of anything else answer 404 without a query).
func Plausible(name string) bool {
	if name == "" || len(name) > maxNameLength {
		return false
	}
	scope, pkg, scoped := Split(name)
	if scoped {
		return scope != "" && pkg != "" && URLSafe(scope) && URLSafe(pkg)
	}
	return URLSafe(name)
}

// Split splits "@scope/pkg" into ("scope", "pkg", true); other names
// come back as ("", name, false).
func Split(name string) (scope, pkg string, scoped bool) {
	if !strings.HasPrefix(name, "@") {
		return "", name, false
	}
	scope, pkg, ok := strings.Cut(name[1:], "/")
	if !ok {
		return "", name, false
	}
	return scope, pkg, true
}

// Base is the name without its scope ("@a/lib" -> "lib").
func Base(name string) string {
	_, pkg, _ := Split(name)
	return pkg
}
