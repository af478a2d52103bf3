package migrations

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Fingerprint is a hash of everything Up applies: the embedded goose files
// (names and contents) and River's migrations. Databases migrated from
// different sources get different fingerprints, so a cached migrated
// template (see internal/testdb) is never reused after a schema change.
func Fingerprint() (string, error) {
	h := sha256.New()
	names, err := fs.Glob(files, "*.sql") // sorted, so the hash is stable
	if err != nil {
		return "", fmt.Errorf("list migration files: %w", err)
	}
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("read migration %s: %w", name, err)
		}
		fmt.Fprintf(h, "goose %s %d\n%s\n", name, len(b), b)
	}
	// A nil pool is enough to list River's embedded migrations.
	m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return "", fmt.Errorf("open river migrator: %w", err)
	}
	for _, v := range m.AllVersions() {
		fmt.Fprintf(h, "river %d %d\n%s\n", v.Version, len(v.SQLUp), v.SQLUp)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
