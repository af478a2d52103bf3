//go:build linux

package objstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing the n bytes of f at off
// to the disk, without waiting for them (sync_file_range(2) with
// SYNC_FILE_RANGE_WRITE). It promises nothing: the commit's fsync does.
// An error is ignored for that reason.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
