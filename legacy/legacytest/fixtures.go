package legacytest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// Fixtures caches trees built once per test binary: Build runs build the
// first time a name is asked for and returns the tree's directory; later
// calls (and other tests) get the same directory, which they must copy
// (CopyTree) before mutating. Trees live under
// <tmp>/artifact-registry-legacy-fixtures/<pid>/; directories of test
// binaries that are gone are removed on first use.
type Fixtures struct {
	mu    sync.Mutex
	trees map[string]*fixture
}

type fixture struct {
	once sync.Once
	dir  string
	err  string
	meta any
}

// Get returns the directory of the named tree and the metadata its build
// returned, building it on first use. A failed build fails every caller.
func (f *Fixtures) Get(t testing.TB, name string, build func(t testing.TB, dir string) any) (string, any) {
	t.Helper()
	f.mu.Lock()
	if f.trees == nil {
		f.trees = map[string]*fixture{}
	}
	fx := f.trees[name]
	if fx == nil {
		fx = &fixture{}
		f.trees[name] = fx
	}
	f.mu.Unlock()
	fx.once.Do(func() {
		base := fixtureBase()
		fx.dir = filepath.Join(base, name)
		_ = os.RemoveAll(fx.dir)
		ok := false
		defer func() {
			if !ok && fx.err == "" {
				fx.err = fmt.Sprintf("building fixture %s failed (see the first test that built it)", name)
			}
		}()
		fx.meta = build(t, fx.dir)
		ok = true
	})
	if fx.err != "" {
		t.Fatal(fx.err)
	}
	return fx.dir, fx.meta
}

var sweepOnce sync.Once

// fixtureBase is this process's fixture directory; leftovers of dead test
// binaries are swept the first time.
func fixtureBase() string {
	root := filepath.Join(os.TempDir(), "artifact-registry-legacy-fixtures")
	sweepOnce.Do(func() {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				_ = os.RemoveAll(filepath.Join(root, e.Name()))
			}
		}
	})
	return filepath.Join(root, strconv.Itoa(os.Getpid()))
}
