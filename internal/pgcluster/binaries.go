package pgcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// defaultLibGlob is where Debian's postgresql packages install their
// binaries; they are not on PATH there, so we look for them explicitly.
const defaultLibGlob = "/usr/lib/postgresql/*/bin"

// errNoBinaries is one line on purpose: it is what a developer sees when
// running `make run` or `go test` on a machine without PostgreSQL.
var errNoBinaries = errors.New("postgresql binaries (initdb, pg_ctl) not found on PATH or in " +
	defaultLibGlob + "; install them with: apt-get install -y postgresql")

type binaries struct {
	initdb string
	pgctl  string
}

// findBinaries looks on pathList (a $PATH-style list) first, then in the
// highest-versioned directory matching libGlob. initdb and pg_ctl must come
// from the same directory so their versions match.
func findBinaries(pathList, libGlob string) (binaries, error) {
	if b, ok := lookIn(filepath.SplitList(pathList)); ok {
		return b, nil
	}
	dirs, err := filepath.Glob(libGlob)
	if err != nil {
		return binaries{}, fmt.Errorf("search %s: %w", libGlob, err)
	}
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	if b, ok := lookIn(dirs); ok {
		return b, nil
	}
	return binaries{}, errNoBinaries
}

func lookIn(dirs []string) (binaries, bool) {
	for _, d := range dirs {
		if d == "" {
			continue // an empty PATH element means "." which we never want
		}
		b := binaries{initdb: filepath.Join(d, "initdb"), pgctl: filepath.Join(d, "pg_ctl")}
		if isExecutable(b.initdb) && isExecutable(b.pgctl) {
			return b, true
		}
	}
	return binaries{}, false
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// versionOf extracts the major version from ".../<version>/bin" so that 15
// sorts above 9.6; unparsable names sort last.
func versionOf(binDir string) int {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return int(v * 100)
}

// sibling finds another program of the same installation as pg_ctl. The
// pg_ctl found on PATH may be a symlink into the installation's bin
// directory, where the others live.
func (b binaries) sibling(name string) (string, error) {
	for _, p := range []string{b.pgctl, resolve(b.pgctl)} {
		if bin := filepath.Join(filepath.Dir(p), name); isExecutable(bin) {
			return bin, nil
		}
	}
	return "", fmt.Errorf("%s not found next to %s or in the directory it links to", name, b.pgctl)
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// majorVersion reports the major version of the binaries, compared with the
// data directory's PG_VERSION so an old cluster gets a clear error instead of
// a cryptic startup failure.
func (b binaries) majorVersion() (string, error) {
	out, err := exec.Command(b.pgctl, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("run %s --version: %w", b.pgctl, err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("parse %s --version output %q", b.pgctl, strings.TrimSpace(string(out)))
	}
	return m[1], nil
}

// MajorVersion reports the major version ("15") of the binaries Start
// would use; callers key caches of data directories on it.
func MajorVersion() (string, error) {
	b, err := findBinaries(os.Getenv("PATH"), defaultLibGlob)
	if err != nil {
		return "", err
	}
	return b.majorVersion()
}
