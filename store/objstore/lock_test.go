//go:build unix

package objstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// A child process holds the descriptors it inherits from fork until its
// exec closes them, a lock's open file description included: an upload
// this process closed can look locked for that instant. Reopening a
// closed upload while the process keeps starting children must never be
// refused as busy.
func TestReopenWhileChildrenStart(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := exec.Command("true").Run(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(done); wg.Wait() }()
	ns := uuid.New()
	for i := range 3000 {
		id := uuid.New()
		createUpload(t, s, ns, id)
		u, err := s.OpenUpload(ctx, ns, id)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if err := u.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A lock held outside this process's handles (another process's writer)
// is waited for a moment: released meanwhile, the opener gets the upload;
// held on, it is busy.
func TestForeignLockIsWaitedFor(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ns, id := uuid.New(), uuid.New()
	createUpload(t, s, ns, id)
	foreign, err := os.OpenFile(filepath.Join(dir, UploadKey(ns, id)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	if err := tryLock(foreign); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenUpload(ctx, ns, id); !errors.Is(err, ErrBusy) {
		t.Fatalf("held on: %v", err)
	}
	release := time.AfterFunc(foreignLockWait/5, func() { foreign.Close() })
	defer release.Stop()
	u, err := s.OpenUpload(ctx, ns, id)
	if err != nil {
		t.Fatalf("released meanwhile: %v", err)
	}
	u.Close()
}
