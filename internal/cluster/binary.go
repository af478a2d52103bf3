package cluster

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/servebuild"
)

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

// binary returns the serve binary, built once per test binary and shared
// by every cluster it starts.
func binary() (string, error) {
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "artifact-registry-cluster-")
		if build.err != nil {
			return
		}
		bin := filepath.Join(build.dir, "artifact-registry")
		if build.err = servebuild.Build(bin); build.err == nil {
			build.bin = bin
		}
	})
	return build.bin, build.err
}
