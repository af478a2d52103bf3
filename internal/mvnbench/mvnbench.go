// Package mvnbench is the Maven resolution workload shared by the maven
// package's BenchmarkMavenResolve50 and make bench-compare: 50 small
// artifacts, a project depending on them, and the real mvn resolving them
// into an empty local repository, its plugins offline from Debian's
// repository (testtools.MavenRepo) through the settings file the
// protocol's mvn tests use.
package mvnbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Goal resolves a project's dependencies with the plugin version Debian
// packages.
const Goal = "org.apache.maven.plugins:maven-dependency-plugin:3.5.0:resolve"

// Artifact is the i-th artifact: its path in the repository layout
// without the extension, its POM and its jar.
func Artifact(i int) (base string, pom, jar []byte) {
	a := fmt.Sprintf("dep-%02d", i)
	base = fmt.Sprintf("com/example/bench/%s/1.0.0/%s-1.0.0", a, a)
	pom = fmt.Appendf(nil, `<project><modelVersion>4.0.0</modelVersion><groupId>com.example.bench</groupId>`+
		`<artifactId>%s</artifactId><version>1.0.0</version></project>`, a)
	return base, pom, bytes.Repeat([]byte(a), 4096)
}

// Dependencies are the <dependency> elements of artifacts 0..n-1.
func Dependencies(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "<dependency><groupId>com.example.bench</groupId><artifactId>dep-%02d</artifactId><version>1.0.0</version></dependency>\n", i)
	}
	return b.String()
}

// Resolved counts the artifacts mvn's output says it resolved.
func Resolved(out string) int { return strings.Count(out, ":jar:1.0.0:compile") }

// Env runs mvn under Dir with the settings file Settings.
type Env struct {
	Dir      string
	Settings string
}

// NewEnv writes settings (the template with @TOKEN@, see
// protocol/maven/testdata/settings.xml) filled with token under dir.
func NewEnv(dir string, settings []byte, token string) (*Env, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("mvn work directory: %w", err)
	}
	p := filepath.Join(dir, "settings.xml")
	if err := os.WriteFile(p, bytes.ReplaceAll(settings, []byte("@TOKEN@"), []byte(token)), 0o644); err != nil {
		return nil, fmt.Errorf("mvn settings: %w", err)
	}
	return &Env{Dir: dir, Settings: p}, nil
}

// Project writes a POM-packaged project depending on deps, with url as its
// repository (id "anchor", which the settings leave out of the offline
// mirror), and returns its directory.
func (e *Env) Project(url, deps string) (string, error) {
	d, err := os.MkdirTemp(e.Dir, "proj-")
	if err != nil {
		return "", fmt.Errorf("mvn project: %w", err)
	}
	pom := `<project><modelVersion>4.0.0</modelVersion><groupId>com.example</groupId><artifactId>bench</artifactId>` +
		`<version>1</version><packaging>pom</packaging><repositories><repository><id>anchor</id><url>` + url +
		`</url></repository></repositories><dependencies>` + deps + `</dependencies></project>`
	if err := os.WriteFile(filepath.Join(d, "pom.xml"), []byte(pom), 0o644); err != nil {
		return "", fmt.Errorf("mvn project: %w", err)
	}
	return d, nil
}

// Run runs mvn args in project dir with a new, empty local repository
// (removed afterwards) and returns its wall time and output; a run that
// does not end in BUILD SUCCESS is an error carrying the output's end.
func (e *Env) Run(ctx context.Context, dir string, args ...string) (time.Duration, string, error) {
	repo, err := os.MkdirTemp(e.Dir, "m2-")
	if err != nil {
		return 0, "", fmt.Errorf("mvn local repository: %w", err)
	}
	defer os.RemoveAll(repo)
	all := append([]string{"-s", e.Settings, "-B", "--no-transfer-progress", "-Dmaven.repo.local=" + repo}, args...)
	cmd := exec.CommandContext(ctx, "mvn", all...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil || !bytes.Contains(out, []byte("BUILD SUCCESS")) {
		return d, string(out), fmt.Errorf("mvn %v: %v\n%s", args, err, Tail(string(out), 40))
	}
	return d, string(out), nil
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
