package cluster

import (
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/servebuild"
)

// Main runs the package's tests and then removes the serve binary built
// for them; call it from TestMain (os.Exit(cluster.Main(m))), otherwise the
// binary stays in the temporary directory.
func Main(m *testing.M) int {
	code := m.Run()
	servebuild.Remove()
	return code
}
