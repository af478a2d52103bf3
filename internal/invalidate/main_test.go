package invalidate_test

import (
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

func TestMain(m *testing.M) { testdb.Main(m) }
