// Command artifact-registry is the one binary: serve, migrate, import,
// admin and version.
// It only wires packages together; behaviour lives in those packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

const usage = `usage: artifact-registry <command> [flags]

commands:
  serve            run the registry (applies pending migrations unless --no-migrate)
  migrate up       apply pending migrations (ours and River's)
  migrate status   list applied and pending migrations
  import ...       migrate from a registry:2 tree: inventory, pre, final, status
  admin signing-key rotate
                   new random key for the OCI bearer tokens of every instance
  admin root-key status|rotate
                   keys wrapped under each root key; rewrap them with the
                   current one
  admin namespace-key status|rotate --namespace SLUG
                   a namespace's credential keys; make a new one active
  admin-token [--rotate]
                   print (or replace) the admin token generated for the
                   embedded default
  version          print the version

Run "artifact-registry <command> -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "serve":
		err = runServe(ctx, os.Args[2:])
	case "migrate":
		err = runMigrate(ctx, os.Args[2:])
	case "import":
		err = runImport(ctx, os.Args[2:])
	case "admin":
		err = runAdmin(ctx, os.Args[2:])
	case "admin-token":
		err = runAdminToken(ctx, os.Args[2:])
	case "version":
		fmt.Println(versionString())
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "artifact-registry:", err)
		}
		os.Exit(1)
	}
}

func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return info.Main.Version
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
