package config

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	c.Register(fs)
	if err := fs.Parse(append([]string{"--data-dir", t.TempDir()}, args...)); err != nil {
		return nil, err
	}
	return &c, c.Finish()
}

// The database pool always exceeds what the job workers can hold, so GC
// cleanups cannot starve requests; an explicit size that would is refused
// at startup with a message saying what is needed.
func TestPoolSizeExceedsJobWorkers(t *testing.T) {
	c, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if c.GCCleanupWorkers != 10 {
		t.Fatalf("default cleanup workers %d", c.GCCleanupWorkers)
	}
	if got, min := c.PoolMaxConns(), int32(c.JobConns()+ForegroundConns); got != min || got <= int32(c.GCCleanupWorkers) {
		t.Fatalf("derived pool size %d, want %d (> %d cleanup workers)", got, min, c.GCCleanupWorkers)
	}
	c, err = parse(t, "--gc-cleanup-workers", "40")
	if err != nil {
		t.Fatal(err)
	}
	if c.PoolMaxConns() < 40+ForegroundConns {
		t.Fatalf("pool %d for 40 cleanup workers", c.PoolMaxConns())
	}
	c, err = parse(t, "--db-max-conns", "64")
	if err != nil || c.PoolMaxConns() != 64 {
		t.Fatalf("explicit size: %v %v", c, err)
	}
	t.Setenv("ARTIFACT_REGISTRY_DB_MAX_CONNS", "50")
	if c, err = parse(t); err != nil || c.PoolMaxConns() != 50 {
		t.Fatalf("size from the environment: %v %v", c, err)
	}
	for _, bad := range [][]string{
		{"--db-max-conns", "10"},
		{"--db-max-conns", "24"},
		{"--db-max-conns", "-1"},
		{"--gc-cleanup-workers", "0"},
		{"--gc-cleanup-workers", "30", "--db-max-conns", "40"},
	} {
		_, err := parse(t, bad...)
		if err == nil {
			t.Fatalf("%v accepted", bad)
		}
		if strings.Contains(bad[len(bad)-2], "db-max-conns") && bad[len(bad)-1] != "-1" && !strings.Contains(err.Error(), "use at least") {
			t.Fatalf("%v: unclear error %q", bad, err)
		}
	}
}

func TestBodyIdleTimeout(t *testing.T) {
	c, err := parse(t)
	if err != nil || c.BodyIdleTimeout != 30*time.Second {
		t.Fatalf("default body idle timeout: %v %v", c, err)
	}
	t.Setenv("ARTIFACT_REGISTRY_BODY_IDLE_TIMEOUT", "2m")
	if c, err = parse(t); err != nil || c.BodyIdleTimeout != 2*time.Minute {
		t.Fatalf("from the environment: %v %v", c, err)
	}
	if c, err = parse(t, "--body-idle-timeout", "5s"); err != nil || c.BodyIdleTimeout != 5*time.Second {
		t.Fatalf("from the flag: %v %v", c, err)
	}
	if _, err := parse(t, "--body-idle-timeout", "0s"); err == nil || !strings.Contains(err.Error(), "--body-idle-timeout") {
		t.Fatalf("zero accepted: %v", err)
	}
}
