// Command ensure-s3server builds versitygw (the S3 server of the
// object-storage tests) into the test tool cache, unless it is there, and
// prints its path. scripts/ensure-test-tools runs it, so a test does not
// pay for the build inside its package's timeout.
package main

import (
	"fmt"
	"os"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

func main() {
	p, err := ocitools.EnsureS3Server()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ensure-s3server:", err)
		os.Exit(1)
	}
	fmt.Println(p)
}
