// Command ensure-weed builds SeaweedFS's weed binary (the S3 server of the
// object-storage tests) into the test tool cache, unless it is there, and
// prints its path. scripts/ensure-test-tools runs it, so the tests never
// build it inside their own timeout.
package main

import (
	"fmt"
	"os"

	"github.com/artifact-registry/artifact-registry/internal/ocitools"
)

func main() {
	p, err := ocitools.EnsureWeed()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ensure-weed:", err)
		os.Exit(1)
	}
	fmt.Println(p)
}
