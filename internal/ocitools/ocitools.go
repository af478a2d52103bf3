// Package ocitools fetches and builds the real OCI tools the tests drive:
// the distribution-spec conformance suite, crane, oras and distribution's
// registry (the legacy registry of the migration tests); and, beside them,
// an S3 server (versitygw) and Verdaccio (the npm benchmark's other cache).
//
// The Go ones are built from the Go module proxy with the ordinary go
// command, Verdaccio is installed from the npm registry by npm ci from a
// committed lockfile; none is linked into our binary, and each is cached
// (per version) under
// $ARTIFACT_REGISTRY_TOOLS_DIR, default <user cache dir>/artifact-registry/tools,
// so only the first run pays for the build.
//
// If a tool cannot be fetched or built, the test fails when CI=true and is
// skipped otherwise.
package ocitools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
)

// Pinned versions.
const (
	ConformanceModule  = "github.com/opencontainers/distribution-spec/conformance"
	ConformanceVersion = "v0.0.0-20260831232431-97274622c111"
	CranePackage       = "github.com/google/go-containerregistry/cmd/crane"
	CraneVersion       = "v0.22.1"
	OrasPackage        = "oras.land/oras/cmd/oras"
	OrasVersion        = "v1.3.6"
	// RegistryModule is distribution (registry:2's v3 line), whose
	// registry is the legacy registry of the migration tests.
	RegistryModule  = "github.com/distribution/distribution/v3"
	RegistryVersion = "v3.1.2"
	// Registry28Binary is Debian's docker-registry package (distribution
	// 2.8), installed by scripts/ensure-test-tools.
	Registry28Binary = "docker-registry"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Conformance returns the path of the conformance suite binary.
func Conformance(t testing.TB) string {
	return tool(t, "conformance", ConformanceVersion, func(ctx context.Context, out string) error {
		var info struct{ Dir, Error string }
		o, err := goCmd(ctx, "", "mod", "download", "-json", ConformanceModule+"@"+ConformanceVersion)
		if jerr := json.Unmarshal(o, &info); jerr != nil || info.Dir == "" {
			return fmt.Errorf("go mod download %s@%s: %v %s %s", ConformanceModule, ConformanceVersion, err, info.Error, o)
		}
		if _, err := goCmd(ctx, info.Dir, "build", toolLDFlags, "-o", out, "."); err != nil {
			return err
		}
		return nil
	})
}

// Crane returns the path of the crane binary.
func Crane(t testing.TB) string {
	return tool(t, "crane", CraneVersion, installer(CranePackage, CraneVersion))
}

// Oras returns the path of the oras binary.
func Oras(t testing.TB) string {
	return tool(t, "oras", OrasVersion, installer(OrasPackage, OrasVersion))
}

// Registry returns the path of distribution's registry binary (v3).
func Registry(t testing.TB) string {
	return tool(t, "registry-fs", RegistryVersion, buildRegistry)
}

// registryMain is distribution's cmd/registry main without the cloud
// storage drivers (S3, GCS, Azure, CloudFront): the tests store on the
// filesystem, and those drivers' SDKs were half of the registry's build.
// Built in a module that requires only distribution, so every dependency
// is at the version distribution's go.mod pins, as go install would pick.
const registryMain = `package main

import (
	_ "net/http/pprof"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/auth/silly"
	_ "github.com/distribution/distribution/v3/registry/auth/token"
	_ "github.com/distribution/distribution/v3/registry/proxy"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/middleware/redirect"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/middleware/rewrite"
)

func main() {
	_ = registry.RootCmd.Execute() // it reports its own errors and exit code
}
`

func buildRegistry(ctx context.Context, out string) error {
	src, err := os.MkdirTemp(filepath.Dir(out), ".registry-src-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	goMod := "module registry\n\ngo 1.24\n\nrequire " + RegistryModule + " " + RegistryVersion + "\n"
	for name, body := range map[string]string{"go.mod": goMod, "main.go": registryMain} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	_, err = goCmd(ctx, src, "build", toolLDFlags, "-o", out, ".")
	return err
}

// Registry28 returns the path of Debian's docker-registry (distribution
// 2.8). It is not built here: scripts/ensure-test-tools installs it. The
// test fails when CI=true and it is missing, and is skipped otherwise.
func Registry28(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath(Registry28Binary)
	if err != nil {
		testtools.Unavailable(t, fmt.Sprintf("%s not found (run scripts/ensure-test-tools): %v", Registry28Binary, err))
	}
	return p
}

func installer(pkg, version string) func(ctx context.Context, out string) error {
	return func(ctx context.Context, out string) error {
		gobin, err := os.MkdirTemp(filepath.Dir(out), ".gobin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(gobin)
		if _, err := goCmdEnv(ctx, "", []string{"GOBIN=" + gobin}, "install", toolLDFlags, pkg+"@"+version); err != nil {
			return err
		}
		return os.Rename(filepath.Join(gobin, filepath.Base(pkg)), out)
	}
}

// toolLDFlags links the tools without symbol table and DWARF: nothing
// debugs them, and the link of the larger ones is a good part of their
// build on a fresh machine.
const toolLDFlags = "-ldflags=-s -w"

// Dir is where built tools are cached.
func Dir() (string, error) {
	if d := os.Getenv("ARTIFACT_REGISTRY_TOOLS_DIR"); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(c, "artifact-registry", "tools"), nil
}

func tool(t testing.TB, name, version string, build func(ctx context.Context, out string) error) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := name + "@" + version
	if p, ok := built[key]; ok {
		return p
	}
	p, err := ensure(name, version, buildTimeout, build)
	if err != nil {
		testtools.Unavailable(t, fmt.Sprintf("cannot fetch/build %s %s from the Go module proxy: %v", name, version, err))
	}
	built[key] = p
	return p
}

// buildTimeout bounds one tool build.
const buildTimeout = 15 * time.Minute

func ensure(name, version string, timeout time.Duration, build func(ctx context.Context, out string) error) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name+"-"+version)
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	if fi, err := os.Stat(out); err == nil && (fi.Mode().IsRegular() || fi.IsDir()) {
		return out, nil
	}
	// Serialize builds across test processes sharing the cache.
	lf, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it
	if fi, err := os.Stat(out); err == nil && (fi.Mode().IsRegular() || fi.IsDir()) {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// A tool is one binary or, for an npm package, one directory.
	tmp := out + ".tmp"
	_ = os.RemoveAll(tmp)
	start := time.Now()
	if err := build(ctx, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "ocitools: built %s %s in %s -> %s\n", name, version, time.Since(start).Round(time.Second), out)
	return out, nil
}

// goBinary finds the go command: $GOROOT/bin/go when GOROOT is set (go
// test sets it for the test binary), else the one on PATH.
func goBinary() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return goCmdEnv(ctx, dir, nil, args...)
}

func goCmdEnv(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goBinary(), args...)
	cmd.Dir = dir
	if dir == "" {
		cmd.Dir = os.TempDir()
	}
	// The release build's flags (CGO_ENABLED=0, -trimpath), as make lint's
	// go vet uses: the tools then share its build of the standard library.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -trimpath", "CGO_ENABLED=0")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.Bytes(), fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return stdout.Bytes(), fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}
