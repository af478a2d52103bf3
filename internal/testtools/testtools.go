// Package testtools decides what a test does when an external tool it
// drives (mvn, Chromium, a registry binary) is missing: on a developer
// machine it skips, under CI it fails, because a skipped client test in CI
// would pass silently.
package testtools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Unavailable fails t when CI is set and skips it otherwise; msg says what
// is missing and how to install it.
func Unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + " (skipped because CI is not set)")
}

// MavenRepo is where Debian's Maven plugin packages put their artifacts;
// the real-mvn tests resolve plugins from it offline.
const MavenRepo = "/usr/share/maven-repo"

// mavenPackages give mvn the plugins of mavenPlugins.
var mavenPackages = []string{
	"libmaven-deploy-plugin-java", "libmaven-install-plugin-java", "libmaven-resources-plugin-java",
	"libmaven-compiler-plugin-java", "libmaven-jar-plugin-java", "libmaven-dependency-plugin-java",
	"libsurefire-java", "libmaven-clean-plugin-java",
}

// mavenPlugins are the plugin versions the test projects' POMs pin.
var mavenPlugins = []string{
	"maven-clean-plugin/3.2.0", "maven-resources-plugin/3.3.0", "maven-compiler-plugin/3.10.1",
	"maven-surefire-plugin/2.22.3", "maven-jar-plugin/3.3.0", "maven-install-plugin/3.1.0",
	"maven-deploy-plugin/3.0.0", "maven-dependency-plugin/3.5.0",
}

// RequireMaven makes sure mvn, a JDK and Debian's offline plugins are
// installed (see Unavailable for what happens when they are not).
func RequireMaven(t testing.TB) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"mvn", "java"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	for _, p := range mavenPlugins {
		if _, err := os.Stat(filepath.Join(MavenRepo, "org/apache/maven/plugins", p)); err != nil {
			missing = append(missing, "plugin "+p)
		}
	}
	if len(missing) > 0 {
		Unavailable(t, fmt.Sprintf("real-mvn test needs %s (apt-get install maven default-jdk-headless %s)",
			strings.Join(missing, ", "), strings.Join(mavenPackages, " ")))
	}
}
