package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cli runs a client binary with a private HOME and DOCKER_CONFIG.
type cli struct {
	t    *testing.T
	bin  string
	home string
	dir  string // working directory (default: home)
}

func newCLI(t *testing.T, bin string) *cli {
	return &cli{t: t, bin: bin, home: t.TempDir()}
}

// run runs the client and fails the test unless it exits 0.
func (c *cli) run(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+c.home, "DOCKER_CONFIG="+filepath.Join(c.home, ".docker"),
		"XDG_CONFIG_HOME="+filepath.Join(c.home, ".config"), "NO_COLOR=1")
	cmd.Dir = c.home
	if c.dir != "" {
		cmd.Dir = c.dir
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("%s %s: %v\n%s\n%s", filepath.Base(c.bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// layerTar writes a tar layer with one file.
func layerTar(t *testing.T, dir, name, content string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)}))
	_, err := tw.Write([]byte(content))
	must(t, err)
	must(t, tw.Close())
	return writeFile(t, dir, name+".tar", buf.String())
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}
