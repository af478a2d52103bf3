package testdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// cache keeps, per PostgreSQL major version and migrations fingerprint,
// the data directory of a stopped cluster holding the migrated template.
// Copying it takes a second or two, where initdb plus the migrations of a
// schema with thousands of partitions take tens of seconds, and every test
// binary of a `go test ./...` run needs its own cluster.
//
// Layout: <base>/artifact-registry-testdb-cache-<uid>/<key> (the data
// directory), <key>.lock (flock: shared while copying from the entry,
// exclusive while building or deleting it; its mtime is the last use).
type cache struct {
	dir, key string
}

// pruneAfter is how long an entry for other migrations is kept after its
// last use: long enough for concurrent runs on two branches.
const pruneAfter = 10 * time.Minute

func openCache(base, key string) (*cache, error) {
	dir := filepath.Join(base, fmt.Sprintf("artifact-registry-testdb-cache-%d", os.Geteuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create cache dir: %w", err)
	}
	// In a shared temp dir, only trust a directory we own.
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("stat cache dir: %w", err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || !st.IsDir() || int(sys.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s is not a directory owned by us", dir)
	}
	return &cache{dir: dir, key: key}, nil
}

func (c *cache) entry() string { return filepath.Join(c.dir, c.key) }

func (c *cache) lock(how int) (func(), error) {
	return flock(c.entry()+".lock", how)
}

func flock(path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil // closing releases the flock
}

// seed copies the entry to dst under a shared lock; false if there is none.
func (c *cache) seed(dst string) (bool, error) {
	unlock, err := c.lock(syscall.LOCK_SH)
	if err != nil {
		return false, err
	}
	defer unlock()
	return c.copyOut(dst)
}

// copyOut copies the entry to dst; the caller holds a lock.
func (c *cache) copyOut(dst string) (bool, error) {
	if _, err := os.Stat(c.entry()); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	now := time.Now()
	_ = os.Chtimes(c.entry()+".lock", now, now) // mark used, for pruning
	if err := copyTree(c.entry(), dst); err != nil {
		return false, fmt.Errorf("copy cached cluster: %w", err)
	}
	return true, nil
}

// save stores the data directory src as the entry; the caller holds the
// exclusive lock. The copy is renamed into place, so a crash never leaves
// a partial entry that looks complete.
func (c *cache) save(src string) error {
	tmp := c.entry() + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove leftover %s: %w", tmp, err)
	}
	if err := copyTree(src, tmp); err != nil {
		return errors.Join(err, os.RemoveAll(tmp))
	}
	if err := os.Rename(tmp, c.entry()); err != nil {
		return fmt.Errorf("move cache entry into place: %w", err)
	}
	c.prune()
	return nil
}

// prune removes entries for other migrations that nobody has used lately
// and nobody is copying (the schema changed; they would only fill memory).
func (c *cache) prune() {
	locks, _ := filepath.Glob(filepath.Join(c.dir, "*.lock"))
	for _, lock := range locks {
		entry := strings.TrimSuffix(lock, ".lock")
		st, err := os.Stat(lock)
		if entry == c.entry() || err != nil || time.Since(st.ModTime()) < pruneAfter {
			continue
		}
		unlock, err := flock(lock, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			continue // in use
		}
		if os.RemoveAll(entry+".tmp") == nil && os.RemoveAll(entry) == nil {
			_ = os.Remove(lock)
		}
		unlock()
	}
}

// copyTree copies a PostgreSQL data directory with the permissions of its
// directories and files (postgres insists on 0700/0600); the postmaster.pid
// of a running source is removed from the copy. cp does the copying: a data
// directory holds some 26,000 files, and the same walk in Go cost every test
// binary 1.3 s of CPU under the race detector, cp 0.4 s.
func copyTree(src, dst string) error {
	if _, err := os.Lstat(dst); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("copy to %s: already exists (%v)", dst, err)
	}
	if out, err := exec.Command("cp", "-R", "-p", "--", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -R %s %s: %w: %s", src, dst, err, bytes.TrimSpace(out))
	}
	if err := os.Remove(filepath.Join(dst, "postmaster.pid")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove copied postmaster.pid: %w", err)
	}
	return nil
}
