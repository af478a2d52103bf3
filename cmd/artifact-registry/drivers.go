package main

// The object-storage schemes beyond file://, mem:// and s3:// (built into
// store/objstore). They are linked here rather than by objstore, so that
// the test binaries of the packages that use the store do without the
// Google Cloud and Azure SDKs.
import (
	_ "gocloud.dev/blob/azureblob" // azblob://

	_ "github.com/artifact-registry/artifact-registry/store/objstore/gcs" // gs://
)
