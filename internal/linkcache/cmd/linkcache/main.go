// Command linkcache runs a Go tool for the go command (-toolexec) and
// answers a link whose inputs it has seen before with the executable that
// link wrote (package linkcache). make test runs go test through it.
//
// The executables are kept in LINKCACHE_DIR, by default artifact-registry/link
// under the user's cache directory (~/.cache); LINKCACHE_DIR=off turns the
// cache off. LINKCACHE_MAX_MB bounds the directory (default 6144): a test
// binary of this repository is 15 to 100 MB.
//
//	go test -toolexec=/path/to/linkcache ./...
package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/artifact-registry/artifact-registry/internal/linkcache"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: linkcache <tool> [args...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

func run(tool string, args []string) int {
	dir := cacheDir()
	if dir == "" || !linkcache.Cacheable(tool, args) {
		passThrough(tool, args)
	}
	cache := linkcache.Cache{Dir: dir, MaxBytes: maxBytes()}
	l := linkcache.Link{Tool: tool, Args: args}
	key, err := l.Key()
	if err != nil {
		// The link itself says what is wrong with its inputs, if anything.
		return runTool(tool, args)
	}
	if hit, err := cache.Get(key, l.Output()); hit {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "linkcache:", err)
	}
	if code := runTool(tool, args); code != 0 {
		return code
	}
	if err := cache.Put(key, l.Output()); err != nil {
		fmt.Fprintln(os.Stderr, "linkcache:", err)
	}
	// A trim lists the directory: once in a while is enough.
	if rand.IntN(16) == 0 {
		if err := cache.Trim(); err != nil {
			fmt.Fprintln(os.Stderr, "linkcache:", err)
		}
	}
	return 0
}

// cacheDir is where executables are kept, "" for nowhere.
func cacheDir() string {
	switch d := os.Getenv("LINKCACHE_DIR"); d {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "artifact-registry", "link")
	default:
		return d
	}
}

func maxBytes() int64 {
	mb, err := strconv.ParseInt(os.Getenv("LINKCACHE_MAX_MB"), 10, 64)
	if err != nil || mb <= 0 {
		mb = 6144
	}
	return mb << 20
}

// passThrough replaces this process with the tool. The go command names
// some (the C compiler) without a directory.
func passThrough(tool string, args []string) {
	path, err := exec.LookPath(tool)
	if err == nil {
		err = syscall.Exec(path, append([]string{tool}, args...), os.Environ())
	}
	fmt.Fprintln(os.Stderr, "linkcache:", err)
	os.Exit(1)
}

// runTool runs the tool with this process's standard streams and returns
// its exit code.
func runTool(tool string, args []string) int {
	cmd := exec.Command(tool, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(os.Stderr, "linkcache:", err)
		return 1
	}
}
