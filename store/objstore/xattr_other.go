//go:build !linux

package objstore

import "os"

// Elsewhere the file backend keeps metadata in fileblob's sidecar files.
func setFileMetadata(*os.File, map[string]string) error { return errNoXattrs }

func fileMetadata(string) (map[string]string, error) { return nil, nil }
