package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestThroughGoTest runs go test through the wrapper on a module of its
// own: an unchanged package is answered from the cache, and a change to
// its code is linked again (the test checks which code its binary runs).
func TestThroughGoTest(t *testing.T) {
	tmp := t.TempDir()
	wrapper := filepath.Join(tmp, "linkcache")
	if out, err := exec.Command("go", "build", "-o", wrapper, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the wrapper: %v\n%s", err, out)
	}
	mod, cache := filepath.Join(tmp, "mod"), filepath.Join(tmp, "cache")
	writeFile(t, filepath.Join(mod, "go.mod"), "module example.com/m\n\ngo 1.22\n")
	writeFile(t, filepath.Join(mod, "p", "p_test.go"), `package p

import (
	"os"
	"testing"
)

func TestV(t *testing.T) {
	if got := V(); got != os.Getenv("WANT") {
		t.Fatalf("V() = %q", got)
	}
}
`)
	goTest := func(want string) {
		t.Helper()
		cmd := exec.Command("go", "test", "-count=1", "-toolexec="+wrapper, "./p")
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "LINKCACHE_DIR="+cache, "WANT="+want, "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go test wanting %s: %v\n%s", want, err, out)
		}
	}
	// kept lists the kept executables' inode numbers: a link answered from
	// the cache leaves its file alone, one linked again replaces it.
	kept := func() []uint64 {
		t.Helper()
		entries, err := os.ReadDir(cache)
		if err != nil {
			t.Fatal(err)
		}
		var inodes []uint64
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".exe") {
				info, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				inodes = append(inodes, info.Sys().(*syscall.Stat_t).Ino)
			}
		}
		return inodes
	}

	writeFile(t, filepath.Join(mod, "p", "p.go"), "package p\n\nfunc V() string { return \"one\" }\n")
	goTest("one")
	first := kept()
	if len(first) != 1 {
		t.Fatalf("%d executables kept after the first run, want 1", len(first))
	}
	goTest("one")
	if again := kept(); !slices.Equal(again, first) {
		t.Fatalf("an unchanged run linked again: kept %v, then %v", first, again)
	}
	writeFile(t, filepath.Join(mod, "p", "p.go"), "package p\n\nfunc V() string { return \"two\" }\n")
	goTest("two")
	if n := len(kept()); n != 2 {
		t.Fatalf("%d executables kept after a change, want 2", n)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
