// Package pgpool is the configuration every connection pool of the
// registry shares, the server's and the tests' alike, so that benchmarks
// measure the connections production runs on.
package pgpool

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/pgxuuid"
)

// Settings are the session settings of every connection, unless the
// database URL sets them itself.
//
// constraint_exclusion=off: with the default ("partition") the planner
// reads and tests every CHECK constraint of each partition that survived
// partition pruning, on every custom plan, foreign-key checks included.
// The schema's tables carry a CHECK on every id (the UUIDv7 version) and
// several more, and hash-partitioned tables are always planned with the
// actual parameters (see store's npmExecMode), so that work is a large
// share of planning: a foreign-key check against repositories plans in
// 51 µs instead of 91 µs. Nothing here relies on it: partitions are
// pruned by enable_partition_pruning, which this does not touch, and the
// schema has no inheritance children or CHECK-based exclusion.
//
// jit=off: a statement over every partition of a few tables (the
// background jobs' scans) has thousands of plan nodes, so its estimated
// cost passes jit_above_cost however few rows it reads, and PostgreSQL
// compiles its expressions with LLVM first: the remote-cache eviction's
// namespace scan compiled 1,737 functions in 363 ms of CPU to run for
// 27 ms. The registry's statements read a few index entries each; none
// runs long enough to win back a compilation.
var Settings = map[string]string{
	"constraint_exclusion": "off",
	"jit":                  "off",
}

// Configure sets up cfg: the binary uuid.UUID codec on every connection,
// Settings, and lost connections reported as ConnError.
func Configure(cfg *pgxpool.Config) {
	cfg.AfterConnect = pgxuuid.AfterConnect
	markConnErrors(&cfg.ConnConfig.Config)
	params := cfg.ConnConfig.RuntimeParams
	for k, v := range Settings {
		if _, set := params[k]; !set {
			params[k] = v
		}
	}
}
