package objstore

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"
)

// heldUploads are the upload files a handle of this process holds locked
// (path → struct{}).
//
// The file lock belongs to the open file description, and a child process
// shares every description from its fork until its exec closes them: for
// that instant an upload this process closed still looks locked. So a
// second writer in this process is told busy from this set at once, and a
// lock held outside it (by another process, or by a child about to exec)
// is waited for a moment before it counts as busy.
var heldUploads sync.Map

// foreignLockWait bounds that wait. A fork's descriptors live for
// microseconds, a loaded machine's scheduling delays for milliseconds; a
// real writer elsewhere holds the lock for its whole chunk.
const foreignLockWait = 250 * time.Millisecond

// lockUpload locks the upload file f at path for this process's handle,
// or returns ErrBusy.
func lockUpload(ctx context.Context, f *os.File, path string) error {
	if _, held := heldUploads.LoadOrStore(path, struct{}{}); held {
		return ErrBusy
	}
	deadline := time.Now().Add(foreignLockWait)
	pause := time.Millisecond
	for {
		err := tryLock(f)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) || sleep(ctx, pause) != nil {
			heldUploads.Delete(path)
			return err
		}
		pause = min(2*pause, 16*time.Millisecond)
	}
}

// unlockUpload closes the locked upload file f at path.
func unlockUpload(f *os.File, path string) error {
	err := f.Close()
	heldUploads.Delete(path)
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
