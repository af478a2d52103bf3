package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
)

// SeedCluster lets a harness that runs its own PostgreSQL (several serve
// processes, a primary and its standby) skip the migrations from an empty
// database, tens of seconds of a core for a schema with thousands of
// partitions. It fills dir, the pgcluster.Options.Dir of a cluster that
// does not exist yet, with a copy of the cached cluster holding the
// migrated template, building the cache entry first when there is none
// (as the first test binary after a schema change does). Start the
// cluster on dir, then AdoptTemplate. It returns the template's name; on
// an error dir holds no cluster, and Start initializes an empty one.
func SeedCluster(dir string) (template string, err error) {
	defer func() {
		if err != nil {
			err = errors.Join(err, os.RemoveAll(filepath.Join(dir, "data")))
		}
	}()
	return seedCluster(dir)
}

func seedCluster(dir string) (string, error) {
	template, err := templateName()
	if err != nil {
		return "", err
	}
	c, err := cacheOf(baseDir(), template)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("testdb: create cluster dir: %w", err)
	}
	data := filepath.Join(dir, "data")
	if seeded, err := c.seed(data); err != nil || seeded {
		return template, err
	}
	if err := buildCache(template); err != nil {
		return "", err
	}
	seeded, err := c.seed(data)
	if err == nil && !seeded {
		err = errors.New("no cache entry after building it")
	}
	return template, err
}

// buildCache does what a test binary's first database does: start a
// private cluster (seeded from the cache if another binary filled it
// meanwhile), migrate the template and save the cluster to the cache.
func buildCache(template string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := &server{template: template}
	err := s.startCluster(ctx)
	if err == nil {
		err = s.prepare(ctx)
	}
	if err = errors.Join(err, s.close()); err != nil {
		return fmt.Errorf("testdb: build the cluster cache: %w", err)
	}
	return nil
}

// AdoptTemplate makes the template of a cluster started on a SeedCluster
// directory its pgcluster.Database, in place of the empty one Start made:
// a rename, nothing is copied.
func AdoptTemplate(ctx context.Context, pg *pgcluster.Cluster, template string) error {
	conn, err := pg.ConnectMaintenance(ctx)
	if err != nil {
		return fmt.Errorf("testdb: adopt the template: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	db, tpl := ident(pgcluster.Database), ident(template)
	for _, sql := range []string{
		"DROP DATABASE " + db + " WITH (FORCE)",
		"ALTER DATABASE " + tpl + " WITH IS_TEMPLATE false ALLOW_CONNECTIONS true",
		"ALTER DATABASE " + tpl + " RENAME TO " + db,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("testdb: adopt the template: %s: %w", sql, err)
		}
	}
	return nil
}
