//go:build linux

package objstore

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// userXattrPrefix namespaces an object's user metadata among a file's
// extended attributes: checksum-sha1 is user.checksum-sha1, which
// getfattr shows next to the bytes it describes.
const userXattrPrefix = "user."

// setFileMetadata stores meta as extended attributes of the open file f.
// errNoXattrs: the file system keeps no user attributes (the caller falls
// back to fileblob's sidecar file).
func setFileMetadata(f *os.File, meta map[string]string) error {
	for k, v := range meta {
		err := unix.Fsetxattr(int(f.Fd()), userXattrPrefix+k, []byte(v), 0)
		if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
			return errNoXattrs
		}
		if err != nil {
			return fmt.Errorf("objstore: set metadata %s: %w", k, err)
		}
	}
	return nil
}

// fileMetadata reads the user metadata setFileMetadata stored on the file
// at path; nil when it has none (or the file system keeps none).
func fileMetadata(path string) (map[string]string, error) {
	names, err := xattrNames(path)
	if err != nil {
		return nil, err
	}
	var meta map[string]string
	for _, name := range names {
		k, ok := strings.CutPrefix(name, userXattrPrefix)
		if !ok {
			continue
		}
		v, err := getXattr(path, name)
		if err != nil {
			return nil, err
		}
		if meta == nil {
			meta = map[string]string{}
		}
		meta[k] = v
	}
	return meta, nil
}

func xattrNames(path string) ([]string, error) {
	buf, err := readSized(func(b []byte) (int, error) { return unix.Listxattr(path, b) })
	if errors.Is(err, unix.ENOTSUP) || (err == nil && len(buf) == 0) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: list metadata of %s: %w", path, err)
	}
	return strings.Split(strings.TrimRight(string(buf), "\x00"), "\x00"), nil
}

func getXattr(path, name string) (string, error) {
	buf, err := readSized(func(b []byte) (int, error) { return unix.Getxattr(path, name, b) })
	if err != nil {
		return "", fmt.Errorf("objstore: read metadata %s of %s: %w", name, path, err)
	}
	return string(buf), nil
}

// readSized calls read with a nil buffer for the size, then with a buffer
// of that size, again when the value grew in between (ERANGE).
func readSized(read func([]byte) (int, error)) ([]byte, error) {
	for {
		n, err := read(nil)
		if err != nil || n == 0 {
			return nil, err
		}
		buf := make([]byte, n)
		n, err = read(buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}
