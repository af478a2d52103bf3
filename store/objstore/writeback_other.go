//go:build !linux

package objstore

import "os"

// startWriteback does nothing here: the commit's fsync writes everything.
func startWriteback(*os.File, int64, int64) {}
