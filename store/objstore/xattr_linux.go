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
	for {
		n, err := unix.Listxattr(path, nil)
		if errors.Is(err, unix.ENOTSUP) || n == 0 {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("objstore: list metadata of %s: %w", path, err)
		}
		buf := make([]byte, n)
		n, err = unix.Listxattr(path, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // grew in between
		}
		if err != nil {
			return nil, fmt.Errorf("objstore: list metadata of %s: %w", path, err)
		}
		return strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00"), nil
	}
}

func getXattr(path, name string) (string, error) {
	for {
		n, err := unix.Getxattr(path, name, nil)
		if err != nil {
			return "", fmt.Errorf("objstore: read metadata %s of %s: %w", name, path, err)
		}
		buf := make([]byte, n)
		n, err = unix.Getxattr(path, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("objstore: read metadata %s of %s: %w", name, path, err)
		}
		return string(buf[:n]), nil
	}
}
