package pgcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// osUser is the account the cluster runs as. PostgreSQL refuses to run as
// root, so when we are root the cluster belongs to the "postgres" account.
type osUser struct {
	uid, gid int
	cred     *syscall.Credential // nil: run as ourselves
}

func clusterUser() (osUser, error) {
	if os.Geteuid() != 0 {
		return osUser{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return osUser{}, fmt.Errorf("running as root, so PostgreSQL must run as OS user postgres, "+
			"which was not found (%v); install Debian's postgresql package "+
			"(apt-get install -y postgresql) to create it", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return osUser{}, fmt.Errorf("parse ids of OS user postgres: %w", err)
	}
	// Groups left empty: the child drops root's supplementary groups.
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return osUser{uid: uid, gid: gid, cred: cred}, nil
}

func (u osUser) isSelf() bool { return u.cred == nil }

// own gives path (recursively, if its top is not already ours) to the
// cluster user. Checking the top first keeps later starts cheap: a data
// directory can hold tens of thousands of files.
func (u osUser) own(path string) error {
	if u.isSelf() {
		return nil
	}
	st, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) == u.uid && int(sys.Gid) == u.gid {
		return nil
	}
	err = filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.uid, u.gid)
	})
	if err != nil {
		return fmt.Errorf("chown %s to postgres: %w", path, err)
	}
	return nil
}

// writeFile writes a file the cluster user can read and rewrite later.
func (u osUser) writeFile(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if u.isSelf() {
		return nil
	}
	if err := os.Chown(path, u.uid, u.gid); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	return nil
}

// canTraverse reports whether the cluster user may search directory st.
// Only the primary group counts: the child process runs without
// supplementary groups (see clusterUser).
func (u osUser) canTraverse(st fs.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return true // cannot tell; let PostgreSQL report it
	}
	perm := st.Mode().Perm()
	switch {
	case int(sys.Uid) == u.uid:
		return perm&0o100 != 0
	case int(sys.Gid) == u.gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// makeTraversable lets the cluster user reach dir: the postgres account
// must search every parent (temp dirs are 0700 root). We add only the
// "others may search" bit, never read, so directory listings stay private.
func (u osUser) makeTraversable(dir string, log *slog.Logger) error {
	if u.isSelf() {
		return nil
	}
	for p := dir; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if !u.canTraverse(st) {
			mode := st.Mode().Perm() | 0o001
			if err := os.Chmod(p, mode); err != nil {
				return fmt.Errorf("directory %s is not traversable by OS user postgres and chmod o+x failed: %w", p, err)
			}
			log.Warn("made directory traversable for the postgres OS user", "dir", p, "mode", mode)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
