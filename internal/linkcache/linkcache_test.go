package linkcache

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeLink lays out a link as the go command does: a work directory with
// the action's directory, its import configuration naming one archive in
// the build cache and one compiled in this run, and the main archive.
func fakeLink(t *testing.T, work, action string) Link {
	t.Helper()
	tool := filepath.Join(t.TempDir(), "link")
	write(t, tool, "linker")
	cached := filepath.Join(t.TempDir(), "ab", "abcdef-d")
	write(t, cached, "cached archive")
	dir := filepath.Join(work, action)
	write(t, filepath.Join(work, "b007", "_pkg_.a"), "fresh archive")
	write(t, filepath.Join(dir, "importcfg.link"),
		"packagefile fmt="+cached+"\npackagefile example.com/p="+filepath.Join(work, "b007", "_pkg_.a")+"\n")
	write(t, filepath.Join(dir, "_pkg_.a"), "main archive")
	return Link{Tool: tool, Args: []string{
		"-o", filepath.Join(dir, "p.test"), "-importcfg", filepath.Join(dir, "importcfg.link"),
		"-buildid=a/b/c/d", "-s", "-w", filepath.Join(dir, "_pkg_.a"),
	}}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func key(t *testing.T, l Link) string {
	t.Helper()
	k, err := l.Key()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCacheable(t *testing.T) {
	l := fakeLink(t, t.TempDir(), "b001")
	if !Cacheable(l.Tool, l.Args) {
		t.Error("a link writing an executable is not cacheable")
	}
	if Cacheable(l.Tool, []string{"-V=full"}) {
		t.Error("the version query is cacheable")
	}
	if Cacheable("/usr/lib/go/pkg/tool/linux_amd64/compile", l.Args) {
		t.Error("the compiler is cacheable")
	}
	if got := l.Output(); !strings.HasSuffix(got, "p.test") {
		t.Errorf("Output() = %q", got)
	}
}

// The key ignores where the work directory is and the number of the
// action's directory, and changes with every input.
func TestKey(t *testing.T) {
	work := t.TempDir()
	l := fakeLink(t, work, "b001")
	base := key(t, l)

	other := fakeLink(t, t.TempDir(), "b042")
	other.Tool = l.Tool
	// The cached archive's path is in the import configuration: use the
	// same one.
	cfg, err := os.ReadFile(flagValue(l.Args, "-importcfg"))
	if err != nil {
		t.Fatal(err)
	}
	otherWork := filepath.Dir(filepath.Dir(other.Output()))
	write(t, flagValue(other.Args, "-importcfg"),
		strings.NewReplacer(filepath.Join(work, "b001"), filepath.Join(otherWork, "b042"), work, otherWork).Replace(string(cfg)))
	if got := key(t, other); got != base {
		t.Errorf("the same link in another work directory has another key")
	}

	changes := map[string]func(l Link, work string){
		"an archive compiled in this run": func(_ Link, work string) { write(t, filepath.Join(work, "b007", "_pkg_.a"), "changed") },
		"the main archive":                func(_ Link, work string) { write(t, filepath.Join(work, "b001", "_pkg_.a"), "changed") },
		"the import configuration": func(l Link, _ string) {
			cfg := flagValue(l.Args, "-importcfg")
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			write(t, cfg, strings.Replace(string(b), "packagefile fmt=", "packagefile fmt2=", 1))
		},
		"the linker": func(l Link, _ string) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(l.Tool, later, later); err != nil {
				t.Fatal(err)
			}
		},
	}
	for what, change := range changes {
		t.Run(what, func(t *testing.T) {
			work := t.TempDir()
			l := fakeLink(t, work, "b001")
			before := key(t, l)
			change(l, work)
			if key(t, l) == before {
				t.Errorf("changing %s keeps the key", what)
			}
		})
	}
	t.Run("an archive moved to the build cache", func(t *testing.T) {
		work := t.TempDir()
		l := fakeLink(t, work, "b001")
		before := key(t, l)
		fresh := filepath.Join(work, "b007", "_pkg_.a")
		sum := sha256.Sum256([]byte("fresh archive"))
		cached := filepath.Join(t.TempDir(), hex.EncodeToString(sum[:])+"-d")
		write(t, cached, "whatever: the name is the content's hash")
		cfg := flagValue(l.Args, "-importcfg")
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		write(t, cfg, strings.Replace(string(b), fresh, cached, 1))
		if got := key(t, l); got != before {
			t.Error("an archive of the build cache has another key than the same archive compiled in the run")
		}
	})
	t.Run("a flag", func(t *testing.T) {
		l := fakeLink(t, t.TempDir(), "b001")
		before := key(t, l)
		l.Args = append([]string{"-race"}, l.Args...)
		if key(t, l) == before {
			t.Error("adding -race keeps the key")
		}
	})
}

func TestGetPutTrim(t *testing.T) {
	c := Cache{Dir: filepath.Join(t.TempDir(), "cache"), MaxBytes: 10}
	out := filepath.Join(t.TempDir(), "p.test")
	if hit, err := c.Get("k1", out); hit || err != nil {
		t.Fatalf("Get on an empty cache: %v %v", hit, err)
	}
	write(t, out, "123456")
	if err := c.Put("k1", out); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(t.TempDir(), "got.test")
	if hit, err := c.Get("k1", got); !hit || err != nil {
		t.Fatalf("Get after Put: %v %v", hit, err)
	}
	b, err := os.ReadFile(got)
	if err != nil || string(b) != "123456" {
		t.Fatalf("Get wrote %q, %v", b, err)
	}
	if st, err := os.Stat(got); err != nil || st.Mode().Perm()&0o100 == 0 {
		t.Fatalf("Get's output is not executable: %v %v", st.Mode(), err)
	}

	// Two entries of 6 bytes do not fit in 10: the one used least
	// recently goes, and an abandoned temporary file too.
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(c.path("k1"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := c.Put("k2", out); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(c.Dir, "k3.tmp-123"), "partial")
	if err := os.Chtimes(filepath.Join(c.Dir, "k3.tmp-123"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := c.Trim(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "k2"+suffix {
		t.Errorf("after Trim the cache holds %v, want only k2", names)
	}
}
