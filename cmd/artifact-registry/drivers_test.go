package main

import (
	"testing"

	"gocloud.dev/blob"

	"github.com/artifact-registry/artifact-registry/store/objstore/driver"
)

// The binary opens every storage scheme the README lists.
func TestStorageSchemesLinked(t *testing.T) {
	for _, scheme := range []string{"file", "mem", "s3", "gs", "azblob"} {
		if !blob.DefaultURLMux().ValidBucketScheme(scheme) {
			t.Errorf("%s:// is not linked", scheme)
		}
	}
	if driver.Lookup("gs") == nil {
		t.Error("gs:// has no compose and signing driver")
	}
}
