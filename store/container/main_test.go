package container

import (
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

// TestMain serves the package's internal and external tests, which share
// one test binary.
func TestMain(m *testing.M) { testdb.Main(m) }
