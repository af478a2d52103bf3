package admintoken

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadOrCreateReusesAndRotates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	first, created, err := LoadOrCreate(dir)
	if err != nil || !created {
		t.Fatalf("first LoadOrCreate: created %v, %v", created, err)
	}
	if !strings.HasPrefix(first, prefix) || len(first) < 40 {
		t.Fatalf("token %q: want %s and 32 random bytes", first, prefix)
	}
	st, err := os.Stat(Path(dir))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	again, created, err := LoadOrCreate(dir)
	if err != nil || created || again != first {
		t.Fatalf("second LoadOrCreate = %q created %v %v; want the stored token", again, created, err)
	}
	rotated, err := Rotate(dir)
	if err != nil || rotated == first {
		t.Fatalf("Rotate = %q, %v", rotated, err)
	}
	if got, err := Read(Path(dir)); err != nil || got != rotated {
		t.Fatalf("after rotation the file holds %q, %v", got, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".*")); len(leftovers) != 0 {
		t.Fatalf("temporary files left behind: %v", leftovers)
	}
}

func TestReadRefusesFilesOthersCanRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, _, err := LoadOrCreate(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(Path(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(Path(dir)); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("Read of a 0644 token file: %v; want a refusal naming the fix", err)
	}
	if _, _, err := LoadOrCreate(dir); err == nil {
		t.Fatal("LoadOrCreate replaced or accepted a token file others can read")
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(empty); err == nil {
		t.Fatal("an empty token file was accepted")
	}
}

func TestFollowSeesRotationAndKeepsLastGoodToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, _, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Follow(Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	f.every = 0 // recheck at every call instead of once a second
	if got := f.Current(); got != first {
		t.Fatalf("Current = %q, want %q", got, first)
	}
	rotated, err := Rotate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Current(); got != rotated {
		t.Fatalf("Current after rotation = %q, want %q", got, rotated)
	}
	if err := os.Chmod(Path(dir), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := f.Current(); got != rotated {
		t.Fatalf("Current with an unreadable file = %q; want the last good token", got)
	}
	if _, err := Follow(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("Follow of a missing file succeeded")
	}
}
