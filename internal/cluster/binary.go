package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// servePackage is built once per test binary and shared by every cluster
// it starts.
const servePackage = "github.com/artifact-registry/artifact-registry/cmd/artifact-registry"

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Main runs the package's tests and then removes the serve binary built
// for them; call it from TestMain (os.Exit(cluster.Main(m))), otherwise the
// binary stays in the temporary directory.
func Main(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	return code
}

// binary returns the serve binary, building it on first use. The test
// must run inside the module (go test does), since the package is built
// from the working tree under test.
func binary() (string, error) {
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "artifact-registry-cluster-")
		if build.err != nil {
			return
		}
		bin := filepath.Join(build.dir, "artifact-registry")
		out, err := exec.Command(goBinary(), "build", "-o", bin, servePackage).CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go build %s: %w\n%s", servePackage, err, out)
			return
		}
		build.bin = bin
	})
	return build.bin, build.err
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
