// Package servebuild builds the artifact-registry binary for tests that
// run it as a process (several instances, a failover, the first start),
// the way the Dockerfile builds the release image: CGO_ENABLED=0 and
// -trimpath. So those tests run the binary users deploy, and all of them
// and the Dockerfile's own check (deploy) share one compilation of the
// tree in the Go build cache instead of one per set of flags.
package servebuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// Package is the import path of the binary.
const Package = "github.com/artifact-registry/artifact-registry/cmd/artifact-registry"

// Build writes the binary to out. It must run inside the module (go test
// does): the binary is built from the working tree under test.
func Build(out string) error {
	// Without DWARF (-w): a third less link time, and tests read no
	// debug information from the binary.
	cmd := exec.Command(goBinary(), "build", "-trimpath", "-ldflags=-w", "-o", out, Package)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", Package, err, b)
	}
	return nil
}

var shared struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Shared returns a binary built on first use and reused by every later
// caller in the process: a test binary links it once, not once per test.
// Call Remove after the tests (from TestMain) to delete it.
func Shared() (string, error) {
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "artifact-registry-serve-")
		if shared.err != nil {
			return
		}
		bin := filepath.Join(shared.dir, "artifact-registry")
		if shared.err = Build(bin); shared.err == nil {
			shared.bin = bin
		}
	})
	return shared.bin, shared.err
}

// Remove deletes the binary Shared built, if it built one.
func Remove() {
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

// goBinary is $GOROOT/bin/go when go test set GOROOT, else go on PATH.
func goBinary() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
