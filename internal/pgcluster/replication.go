package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Replication makes a cluster one side of a streaming replication pair.
// Without it a cluster keeps the single-node settings (wal_level minimal,
// no WAL senders), which is what the embedded default runs on.
type Replication struct {
	// Name is cluster_name; the walreceiver of a standby uses it as its
	// application_name, which is what the primary's
	// synchronous_standby_names lists.
	Name string
	// SynchronousStandbyNames is the primary's synchronous_standby_names:
	// a commit returns only once a standby listed there has flushed its WAL,
	// so an acknowledged write survives the primary's loss. Leave it empty
	// on a standby: once promoted it has no standby of its own, and a
	// non-empty list would make every commit wait forever.
	SynchronousStandbyNames string
}

// settings are the replication parameters of pgcluster.conf. A standby
// needs max_wal_senders and max_locks_per_transaction no lower than its
// primary's, which holds because both sides get the same values.
func (r *Replication) settings(setting func(k, v string)) {
	setting("wal_level", "replica")
	setting("max_wal_senders", "4")
	setting("hot_standby", "on")
	// No WAL archive: a standby that falls behind catches up from what the
	// primary keeps.
	setting("wal_keep_size", "256MB")
	setting("cluster_name", r.Name)
	setting("synchronous_standby_names", r.SynchronousStandbyNames)
	// Fast must not turn synchronous replication off.
	setting("synchronous_commit", "on")
}

// StartStandby creates a streaming standby of primary in opts.Dir from a
// base backup (pg_basebackup -R over primary's unix socket, so the standby
// follows it with the same superuser that initdb's pg_hba.conf trusts for
// replication on the socket) and starts it; a Dir that already holds a
// cluster is started as it is. opts.Replication must be set, and primary
// must have been started with Replication.
func StartStandby(ctx context.Context, primary *Cluster, opts Options) (*Cluster, error) {
	if opts.Replication == nil || primary.replication == nil {
		return nil, errors.New("pgcluster: a standby and its primary both need Options.Replication")
	}
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	c.standbyOf = primary
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := mkdirPrivate(c.dir, true); err != nil {
		return nil, err
	}
	unlock, err := c.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// baseBackup fills dataDir with a copy of the primary, configured to
// follow it (standby.signal and primary_conninfo from -R). The copy
// includes the primary's pgcluster.conf and the include line for it;
// writeConfig rewrites the file for this cluster before it starts.
func (c *Cluster) baseBackup(ctx context.Context, dataDir string) error {
	bin, err := c.bins.sibling("pg_basebackup")
	if err != nil {
		return err
	}
	args := []string{"-D", dataDir, "-h", c.standbyOf.socketDir, "-p", port, "-U", Superuser,
		"-R", "--wal-method=stream", "--checkpoint=fast"}
	if c.fast {
		args = append(args, "--no-sync")
	}
	start := time.Now()
	if err := c.run(ctx, bin, args...); err != nil {
		return fmt.Errorf("base backup of %s: %w", c.standbyOf.dir, err)
	}
	c.log.Info("created standby from base backup", "dir", c.dataDir, "primary", c.standbyOf.dir, "took", time.Since(start))
	return nil
}

// Promote ends recovery on a standby (pg_ctl promote) and waits until it
// accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	if err := c.pgctl(ctx, "promote", "-w", "-t", secondsLeft(ctx, time.Minute)); err != nil {
		return fmt.Errorf("promote %s: %w%s", c.dir, err, c.logTail())
	}
	c.log.Info("postgres promoted", "dir", c.dir)
	return nil
}
