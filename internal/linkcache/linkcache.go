// Package linkcache keeps the executables the Go linker writes, keyed by
// everything the link reads, so that a link whose inputs did not change
// is answered with the executable written the last time.
//
// go test links every test binary on every run (the build cache keeps
// compiled packages, not linked test binaries), even when nothing the
// binary is built from changed: a tenth of the CPU of a test run of this
// repository whose packages were all compiled already. cmd/linkcache puts
// this package in front of the linker as go's -toolexec.
//
// The key covers the linker's own file (path, size, modification time),
// its arguments with the go command's temporary work directory taken out,
// the import configuration it reads, and the content of every archive it
// links (for those of the build cache, their name, which is the hash of
// their content). The -buildid argument alone would do: the go command
// derives it from the same inputs for its own caching of executables; the
// rest guards against a go command that someday does not.
package linkcache

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Link is one invocation of the linker: its path and arguments.
type Link struct {
	Tool string
	Args []string
}

// Output is the executable the link writes (-o), "" when it writes none.
func (l Link) Output() string { return flagValue(l.Args, "-o") }

// Cacheable reports whether the invocation is a link this package keys:
// the linker writing an executable from an import configuration. Anything
// else, such as the go command asking for the linker's version, runs as it
// is.
func Cacheable(tool string, args []string) bool {
	name := strings.TrimSuffix(filepath.Base(tool), ".exe")
	return name == "link" && flagValue(args, "-o") != "" && flagValue(args, "-importcfg") != ""
}

// flagValue is the value of the linker flag name given as "name value" or
// "name=value", "" when absent.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// Key hashes everything the link reads (see the package comment).
func (l Link) Key() (string, error) {
	// The go command's work directory: the output is $WORK/b001/<name>.
	norm := normalizer(filepath.Dir(filepath.Dir(l.Output())))
	h := sha256.New()
	st, err := os.Stat(l.Tool)
	if err != nil {
		return "", fmt.Errorf("linkcache: stat the linker: %w", err)
	}
	fmt.Fprintf(h, "tool %s %d %d\n", l.Tool, st.Size(), st.ModTime().UnixNano())
	last := len(l.Args) - 1
	for _, a := range l.Args[:last] {
		fmt.Fprintf(h, "arg %q\n", norm(a))
	}
	// The last argument is the main package's archive.
	main, err := contentID(l.Args[last])
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "main %s\n", main)
	if err := hashImportcfg(h, flagValue(l.Args, "-importcfg"), norm); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// normalizer returns the function that takes the work directory out of a
// path: $WORK/b012/importcfg.link becomes $WORK/b/importcfg.link, as the
// number of an action's directory depends on which packages the go
// command was asked for.
func normalizer(work string) func(string) string {
	re := regexp.MustCompile(regexp.QuoteMeta(work+string(filepath.Separator)) + `b[0-9]+`)
	return func(s string) string { return re.ReplaceAllString(s, "$$WORK/b") }
}

// hashImportcfg adds the import configuration to h, each archive it names
// by its content.
func hashImportcfg(h io.Writer, path string, norm func(string) string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("linkcache: read the import configuration: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		verb, rest, _ := strings.Cut(line, " ")
		pkg, file, ok := strings.Cut(rest, "=")
		if verb != "packagefile" || !ok {
			fmt.Fprintf(h, "cfg %s\n", norm(line))
			continue
		}
		id, err := contentID(file)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "packagefile %s=%s\n", pkg, id)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("linkcache: read the import configuration: %w", err)
	}
	return nil
}

// cacheName is the name of a file of the go command's build cache: the
// SHA-256 of its content, then "-d".
var cacheName = regexp.MustCompile(`^([0-9a-f]{64})-d$`)

// contentID is the SHA-256 of the file at path. A file of the build cache
// is named by it; any other (an archive compiled during this run, in the
// work directory) is read. Both name the same archive the same way, so a
// link whose packages were compiled by the run before it has the key of
// the link that run made.
func contentID(path string) (string, error) {
	if m := cacheName.FindStringSubmatch(filepath.Base(path)); m != nil {
		return m[1], nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("linkcache: read input: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("linkcache: read input %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Cache is a directory of kept executables, one file per key.
type Cache struct {
	Dir string
	// MaxBytes bounds the files kept: the least recently used go first.
	MaxBytes int64
}

const suffix = ".exe"

func (c Cache) path(key string) string { return filepath.Join(c.Dir, key+suffix) }

// Get copies the executable kept under key to out and reports whether
// there was one.
func (c Cache) Get(key, out string) (bool, error) {
	src, err := os.Open(c.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("linkcache: open kept executable: %w", err)
	}
	defer src.Close()
	if err := copyTo(out, src); err != nil {
		return false, err
	}
	// Its modification time is its last use, for Trim.
	now := time.Now()
	_ = os.Chtimes(c.path(key), now, now)
	return true, nil
}

// Put keeps a copy of the executable at out under key. The copy reaches
// the disk before it takes the key's name, so a crash cannot leave a
// truncated executable under it.
func (c Cache) Put(key, out string) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("linkcache: %w", err)
	}
	src, err := os.Open(out)
	if err != nil {
		return fmt.Errorf("linkcache: open linked executable: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(c.Dir, key+".tmp-*")
	if err != nil {
		return fmt.Errorf("linkcache: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path(key))
	}
	if err != nil {
		return fmt.Errorf("linkcache: keep executable: %w", err)
	}
	return nil
}

// copyTo writes src's bytes to a new executable file at out.
func copyTo(out string, src io.Reader) error {
	dst, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o777)
	if err != nil {
		return fmt.Errorf("linkcache: create %s: %w", out, err)
	}
	_, err = io.Copy(dst, src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(out)
		return fmt.Errorf("linkcache: write %s: %w", out, err)
	}
	return nil
}

// Trim removes the least recently used executables until the rest fit in
// MaxBytes, and temporary files older than an hour (a writer that died).
func (c Cache) Trim() error {
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		return fmt.Errorf("linkcache: %w", err)
	}
	type kept struct {
		name string
		size int64
		used time.Time
	}
	var files []kept
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		name := e.Name()
		if strings.Contains(name, ".tmp-") {
			if time.Since(info.ModTime()) > time.Hour {
				_ = os.Remove(filepath.Join(c.Dir, name))
			}
			continue
		}
		if strings.HasSuffix(name, suffix) {
			files = append(files, kept{name, info.Size(), info.ModTime()})
			total += info.Size()
		}
	}
	slices.SortFunc(files, func(a, b kept) int { return a.used.Compare(b.used) })
	for _, f := range files {
		if total <= c.MaxBytes {
			break
		}
		if err := os.Remove(filepath.Join(c.Dir, f.name)); err == nil || errors.Is(err, fs.ErrNotExist) {
			total -= f.size
		}
	}
	return nil
}
