package cluster

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/artifact-registry/artifact-registry/internal/pgcluster"
)

// connsPerInstance is a serve process's default pool (the job workers plus
// the request connections, config.PoolMaxConns) with room to spare.
const connsPerInstance = 50

// startPostgres starts (or restarts) the cluster's PostgreSQL in dir and
// makes sure max_connections fits the instances: PostgreSQL's default of
// 100 is less than three instances' pools.
func startPostgres(ctx context.Context, opts pgcluster.Options, instances int) (*pgcluster.Cluster, error) {
	pg, err := pgcluster.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start postgresql: %w", err)
	}
	want := connsPerInstance*instances + 20
	have, err := maxConnections(ctx, pg)
	if err != nil || have >= want {
		return pg, err
	}
	if err := alterSystem(ctx, pg, "max_connections", strconv.Itoa(want)); err != nil {
		return pg, err
	}
	if err := pg.Stop(ctx); err != nil {
		return nil, fmt.Errorf("restart postgresql for max_connections: %w", err)
	}
	pg, err = pgcluster.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("restart postgresql for max_connections: %w", err)
	}
	return pg, nil
}

func maxConnections(ctx context.Context, pg *pgcluster.Cluster) (int, error) {
	conn, err := pgx.Connect(ctx, pg.URL(pgcluster.Database))
	if err != nil {
		return 0, fmt.Errorf("connect to postgresql: %w", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT current_setting('max_connections')::int").Scan(&n); err != nil {
		return 0, fmt.Errorf("read max_connections: %w", err)
	}
	return n, nil
}

// alterSystem persists a setting in postgresql.auto.conf, which outlives
// the pgcluster.conf that pgcluster rewrites on every start.
func alterSystem(ctx context.Context, pg *pgcluster.Cluster, name, value string) error {
	conn, err := pgx.Connect(ctx, pg.URL(pgcluster.Database))
	if err != nil {
		return fmt.Errorf("connect to postgresql: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET "+pgx.Identifier{name}.Sanitize()+" = '"+value+"'"); err != nil {
		return fmt.Errorf("alter system set %s: %w", name, err)
	}
	return nil
}
