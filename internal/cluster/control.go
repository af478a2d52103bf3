package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
)

// Instance returns instance i (0-based).
func (c *Cluster) Instance(i int) *Instance { return c.instances[i] }

// Instances is the number of instances, running or not.
func (c *Cluster) Instances() int { return len(c.instances) }

// Kill sends SIGKILL to instance i and waits until it has exited. The
// proxy notices at its next health check.
func (c *Cluster) Kill(i int) error { return c.instances[i].kill() }

// Stop stops instance i gracefully (SIGTERM: it drains its requests).
func (c *Cluster) Stop(i int) error { return c.instances[i].stop() }

// Start starts instance i again (after Kill or Stop) on the same address
// and waits until it is ready; the proxy uses it again from its next
// health check.
func (c *Cluster) Start(i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	return c.instances[i].start(ctx)
}

// Up reports whether the proxy currently sends requests to instance i.
func (c *Cluster) Up(i int) bool { return c.lb.backends[i].up.Load() }

// Requests is how many requests the proxy has sent to instance i.
func (c *Cluster) Requests(i int) int64 { return c.lb.backends[i].requests.Load() }

// WaitBalanced waits until the proxy sends requests to every running
// instance (and to no stopped one).
func (c *Cluster) WaitBalanced(ctx context.Context) error {
	for {
		settled := true
		for i, in := range c.instances {
			if in.Running() != c.Up(i) {
				settled = false
			}
		}
		if settled || c.lb.dumb {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the proxy's view of the instances did not settle: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// LogFile is the path of instance i's log (every start appended).
func (c *Cluster) LogFile(i int) string {
	return filepath.Join(c.logDir, fmt.Sprintf("instance-%d.log", i))
}

// LogTail returns the last n lines of instance i's log.
func (c *Cluster) LogTail(i, n int) string { return tailFile(c.LogFile(i), n) }

// StopPostgres shuts PostgreSQL down (fast shutdown: sessions are ended,
// a checkpoint is written). The instances keep running without a
// database until StartPostgres.
func (c *Cluster) StopPostgres() error {
	c.pgMu.Lock()
	defer c.pgMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return c.pg.Stop(ctx)
}

// KillPostgres crashes PostgreSQL (immediate shutdown, no checkpoint);
// StartPostgres then runs crash recovery. Without
// Options.DurablePostgres, fsync is off, so what the crash loses is
// unspecified.
func (c *Cluster) KillPostgres() error {
	c.pgMu.Lock()
	defer c.pgMu.Unlock()
	if err := pgcluster.Kill(c.pgOpts.Dir); err != nil {
		return fmt.Errorf("kill postgresql: %w", err)
	}
	return nil
}

// StartPostgres starts PostgreSQL again at the same socket.
func (c *Cluster) StartPostgres() error {
	c.pgMu.Lock()
	defer c.pgMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := pgcluster.Start(ctx, c.pgOpts)
	if err != nil {
		return fmt.Errorf("start postgresql: %w", err)
	}
	c.pg = pg
	return nil
}

// PostgresLog is the path of PostgreSQL's log.
func (c *Cluster) PostgresLog() string {
	c.pgMu.Lock()
	defer c.pgMu.Unlock()
	return c.pg.LogFile()
}

// BreakStorage makes object storage unreachable: connections in flight
// and new ones are reset until HealStorage.
func (c *Cluster) BreakStorage() { c.storage.setMode(storageReset) }

// HangStorage makes object storage unresponsive: connections in flight
// are reset, new ones are accepted and never answered until HealStorage.
func (c *Cluster) HangStorage() { c.storage.setMode(storageHang) }

// HealStorage ends BreakStorage or HangStorage.
func (c *Cluster) HealStorage() { c.storage.setMode(storageOK) }
