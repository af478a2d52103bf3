// Command withtestdb runs a command, a `go test` of many packages, with
// one PostgreSQL cluster for all its test binaries, started beside it:
// they wait for it, share it and pass reset databases on to each other
// (see testdb.Serve) instead of each starting a cluster of its own and
// cloning and dropping its own databases. The cluster is removed when the
// command ends; the command's exit status is withtestdb's. With
// TEST_DATABASE_URL set, it only runs the command: the binaries use that
// server.
//
//	withtestdb go test ./...
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: withtestdb command [args...]")
		os.Exit(2)
	}
	code := 0
	var err error
	if os.Getenv("TEST_DATABASE_URL") != "" { // the binaries use that server
		code, err = run(os.Args[1:], nil)
	} else {
		err = testdb.Serve(context.Background(), func(env []string) error {
			var err error
			code, err = run(os.Args[1:], env)
			return err
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "withtestdb:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// run runs the command and returns its exit status. Interrupts reach the
// command (from the terminal, or passed on here): the cluster is only
// removed once the command has ended.
func run(args, env []string) (int, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("start %s: %w", args[0], err)
	}
	go func() {
		for sig := range sigs {
			_ = cmd.Process.Signal(sig)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 1, fmt.Errorf("run %s: %w", args[0], err)
	}
	return 0, nil
}
