package deploy

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
)

// The Dockerfile's build command sits between these marker comments, so
// the test runs exactly what the image build runs.
const (
	buildBegin = "# build-command-begin"
	buildEnd   = "# build-command-end"
)

// TestDockerBuild builds the binary with the Dockerfile's own command
// (docker is not needed: the build stage is plain go build) and checks
// what the final stage relies on: an empty base image has no dynamic
// loader or libc, so the binary must be statically linked, and it must
// run there (--help, version with the injected version string).
func TestDockerBuild(t *testing.T) {
	if runtime.GOOS != "linux" {
		testtools.Unavailable(t, "the image is linux; the ELF checks need a linux build")
	}
	env, args := dockerBuildCommand(t, readFile(t, "../Dockerfile"))
	out := filepath.Join(t.TempDir(), "artifact-registry")
	vars := map[string]string{"VERSION": "deploy-test", "TARGETOS": runtime.GOOS, "TARGETARCH": runtime.GOARCH}
	for i, a := range args {
		a = os.Expand(a, func(k string) string { return vars[k] })
		if a == "/out/artifact-registry" {
			a = out
		}
		args[i] = a
	}
	if args[0] != "go" || args[1] != "build" {
		t.Fatalf("the Dockerfile's build command is not go build: %q", args)
	}
	for _, want := range []string{"-trimpath", "-ldflags"} {
		if !slices.Contains(args, want) {
			t.Errorf("the Dockerfile's build command lacks %s: %q", want, args)
		}
	}
	if env["CGO_ENABLED"] != "0" {
		t.Errorf("the Dockerfile builds with CGO_ENABLED=%q, want 0", env["CGO_ENABLED"])
	}
	// The build recompiles every package with -trimpath, the standard
	// library included, the first time on a build cache: stop it before
	// the test binary's own deadline so the failure says what was slow.
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "go", args[1:]...)
	cmd.Dir = ".."
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+os.Expand(v, func(k string) string { return vars[k] }))
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build as the Dockerfile does (%v): %v\n%s", ctx.Err(), err, b)
	}
	assertStatic(t, out)
	assertRuns(t, out)
}

// dockerBuildCommand returns the leading VAR=value assignments and the
// words of the RUN line between the markers.
func dockerBuildCommand(t *testing.T, dockerfile string) (map[string]string, []string) {
	t.Helper()
	_, rest, ok := strings.Cut(dockerfile, buildBegin+"\n")
	block, _, ok2 := strings.Cut(rest, buildEnd)
	if !ok || !ok2 {
		t.Fatalf("Dockerfile lacks the %q ... %q markers", buildBegin, buildEnd)
	}
	line, ok := strings.CutPrefix(strings.TrimSpace(block), "RUN ")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("between the markers the Dockerfile must have one RUN line, has %q", block)
	}
	words := shellWords(t, line)
	env := map[string]string{}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		k, v, _ := strings.Cut(words[0], "=")
		env[k] = v
		words = words[1:]
	}
	return env, words
}

// shellWords splits a command line on blanks, honouring double quotes;
// the build line uses nothing else of the shell.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		case strings.ContainsRune("'\\|&;<>`", r):
			t.Fatalf("the build line uses shell syntax the test does not interpret (%q): %s", r, s)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %s", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// assertStatic fails unless the binary is statically linked.
func assertStatic(t *testing.T, path string) {
	t.Helper()
	for _, problem := range dynamicLinking(path) {
		t.Error(problem)
	}
}

// dynamicLinking lists why an ELF file is not static: a program
// interpreter (the dynamic loader), a dynamic section, needed libraries.
func dynamicLinking(path string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return []string{fmt.Sprintf("open %s as ELF: %v", path, err)}
	}
	defer f.Close()
	var problems []string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			problems = append(problems, fmt.Sprintf("%s has a %s program header: it is dynamically linked", path, p.Type))
		}
	}
	if s := f.Section(".dynamic"); s != nil {
		problems = append(problems, fmt.Sprintf("%s has a .dynamic section: it is dynamically linked", path))
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		problems = append(problems, fmt.Sprintf("%s needs shared libraries %v", path, libs))
	}
	return problems
}

// TestDynamicLinkingDetected checks the static check on a binary that is
// dynamically linked, so that it cannot pass by finding nothing.
func TestDynamicLinkingDetected(t *testing.T) {
	if runtime.GOOS != "linux" {
		testtools.Unavailable(t, "the ELF check needs linux binaries")
	}
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/bin/ls"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if len(dynamicLinking(p)) == 0 {
			t.Errorf("%s passed the static check; the check finds nothing", p)
		}
		return
	}
	testtools.Unavailable(t, "no dynamically linked system binary (/bin/sh, /usr/bin/env, /bin/ls) to check the static check against")
}

// assertRuns runs the binary without a shell or anything else around it,
// as the image does, in an empty environment.
func assertRuns(t *testing.T, path string) {
	t.Helper()
	for _, c := range []struct {
		arg, want string
	}{{"--help", "serve"}, {"version", "deploy-test"}} {
		cmd := exec.Command(path, c.arg)
		cmd.Env = []string{}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("artifact-registry %s: %v\n%s", c.arg, err, out.String())
			continue
		}
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("artifact-registry %s printed %q, want it to contain %q", c.arg, out.String(), c.want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

// TestDockerfile checks the Dockerfile's promises that need no build:
// the Go version of go.mod, a final stage with no shell that runs serve
// as a numeric non-root user, and the exposed port being the one the
// image listens on.
func TestDockerfile(t *testing.T) {
	dockerfile := readFile(t, "../Dockerfile")
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(readFile(t, "../go.mod"))
	if goVersion == nil {
		t.Fatal("go.mod has no go line")
	}
	stages := regexp.MustCompile(`(?m)^FROM `).Split(dockerfile, -1)
	final := stages[len(stages)-1]
	for _, c := range []struct{ what, pattern string }{
		{"the Go version of go.mod", `(?m)^ARG GO_VERSION=` + regexp.QuoteMeta(goVersion[1]) + `$`},
		{"an empty final stage (no shell)", `(?m)^FROM scratch$`},
		{"a numeric non-root user in the final stage", `(?m)^USER [1-9][0-9]*:[1-9][0-9]*$`},
		{"CA certificates in the final stage", `(?m)^COPY --from=build /etc/ssl/certs/ca-certificates.crt `},
		{"serve as the default command", `(?m)^ENTRYPOINT \["/artifact-registry"\]\nCMD \["serve"\]$`},
		{"port 8080 exposed and listened on", `(?s)ARTIFACT_REGISTRY_LISTEN=0\.0\.0\.0:8080\b.*\nEXPOSE 8080\n`},
	} {
		text := dockerfile
		if strings.Contains(c.what, "final stage") {
			text = "FROM " + final
		}
		if !regexp.MustCompile(c.pattern).MatchString(text) {
			t.Errorf("the Dockerfile lacks %s (%s)", c.what, c.pattern)
		}
	}
}
