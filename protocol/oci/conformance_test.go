package oci

import (
	"os"
	"testing"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestConformance runs the OCI distribution-spec conformance suite (the
// real program, pinned in ocitools) against a real server over real
// PostgreSQL, for spec versions 1.1 and dev, with every API and data
// category enabled except sha512 content (ocitools.RunConformance). It
// fails unless the suite reports 0 failures and 0 errors, and prints the
// suite's result block (go test -v, or on failure; set
// OCI_CONFORMANCE_OUT=<dir> to keep the reports and the block in
// <dir>/<version>/).
func TestConformance(t *testing.T) {
	bin := ocitools.Conformance(t)
	for _, version := range []string{"1.1", "dev"} {
		t.Run(version, func(t *testing.T) {
			s := newTestServer(t)
			s.repo(t, "conformance", "oci", enum.FormatOCI, enum.VisibilityPrivate)
			ocitools.RunConformance(t, bin, ocitools.ConformanceRun{
				Registry: s.Host,
				Repo1:    "conformance/oci/repo1",
				Repo2:    "conformance/oci/repo2",
				Username: "conformance",
				// A namespace ADMIN access token (the suite deletes), through
				// the Bearer token flow.
				Password: s.token(t, "conformance", "conformance", enum.TokenScopeAdmin),
				Version:  version,
				Out:      os.Getenv("OCI_CONFORMANCE_OUT"),
			})
		})
	}
}
