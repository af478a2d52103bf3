package testdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// relStats is the template's relpages, reltuples and relallvisible of the
// schema's relations, which VACUUM and ANALYZE change and a reset puts
// back. Nearly all of the ~18,000 relations are empty partitions and
// their indexes, which share one value per relation kind. Comparing
// pg_class with that value and with the few exceptions is a filter on one
// scan (8 ms); joining it with a list of every relation took 60 ms for
// each recycled database, and a join with a list of kinds 30 ms.
type relStats struct {
	// ctes are the WITH items that put the values back (restoreCTEs),
	// written once: the kinds' values are part of their text.
	ctes string
	// Relations whose value differs from their kind's.
	oids          []uint32
	pages, allVis []int32
	tuples        []float32
}

type relStat struct {
	pages, allVis int32
	tuples        float32
}

func captureRelStats(ctx context.Context, conn *pgx.Conn) (relStats, error) {
	var rs relStats
	rows, err := conn.Query(ctx, `SELECT c.oid, c.relkind::text, c.relpages, c.reltuples, c.relallvisible FROM pg_class c WHERE `+ourTables)
	if err != nil {
		return rs, fmt.Errorf("planner statistics: %w", err)
	}
	type rel struct {
		oid  uint32
		kind string
		relStat
	}
	var rels []rel
	counts := map[string]map[relStat]int{}
	var r rel
	if _, err := pgx.ForEachRow(rows, []any{&r.oid, &r.kind, &r.pages, &r.tuples, &r.allVis}, func() error {
		rels = append(rels, r)
		if counts[r.kind] == nil {
			counts[r.kind] = map[relStat]int{}
		}
		counts[r.kind][r.relStat]++
		return nil
	}); err != nil {
		return rs, fmt.Errorf("planner statistics: %w", err)
	}
	common := map[string]relStat{}
	var cases [3]strings.Builder
	for kind, byStat := range counts {
		best := -1
		for st, n := range byStat {
			if n > best {
				common[kind], best = st, n
			}
		}
		st, when := common[kind], "WHEN '"+strings.ReplaceAll(kind, "'", "''")+"' THEN "
		fmt.Fprintf(&cases[0], " %s%d", when, st.pages)
		fmt.Fprintf(&cases[1], " %s'%s'::real", when, strconv.FormatFloat(float64(st.tuples), 'g', -1, 32))
		fmt.Fprintf(&cases[2], " %s%d", when, st.allVis)
	}
	rs.ctes = restoreCTEs("CASE c.relkind"+cases[0].String()+" END",
		"CASE c.relkind"+cases[1].String()+" END", "CASE c.relkind"+cases[2].String()+" END")
	// Empty, not nil: nil is sent as NULL, and "<> ALL(NULL)" holds for no row.
	rs.oids, rs.pages, rs.tuples, rs.allVis = []uint32{}, []int32{}, []float32{}, []int32{}
	for _, r := range rels {
		if r.relStat != common[r.kind] {
			rs.oids, rs.pages = append(rs.oids, r.oid), append(rs.pages, r.pages)
			rs.tuples, rs.allVis = append(rs.tuples, r.tuples), append(rs.allVis, r.allVis)
		}
	}
	return rs, nil
}

// restoreCTEs are WITH items named by_kind and by_oid that set every
// relation of the schema back to its kind's value (the expressions on
// c.relkind given) unless it is one of the exceptions ($1-$4), which get
// their own. The two updates touch disjoint rows.
func restoreCTEs(pages, tuples, allVis string) string {
	return `
by_kind AS (
	UPDATE pg_class c SET relpages = ` + pages + `, reltuples = ` + tuples + `, relallvisible = ` + allVis + `
	WHERE ` + ourTables + ` AND c.oid <> ALL($1::oid[])
	  AND (c.relpages, c.reltuples, c.relallvisible) IS DISTINCT FROM (` + pages + `, ` + tuples + `, ` + allVis + `)
), by_oid AS (
	UPDATE pg_class c SET relpages = o.pages, reltuples = o.tuples, relallvisible = o.allvis
	FROM unnest($1::oid[], $2::int[], $3::real[], $4::int[]) AS o(oid, pages, tuples, allvis)
	WHERE c.oid = o.oid AND (c.relpages, c.reltuples, c.relallvisible) IS DISTINCT FROM (o.pages, o.tuples, o.allvis)
)`
}

func (rs relStats) restoreArgs() []any {
	return []any{rs.oids, rs.pages, rs.tuples, rs.allVis}
}
