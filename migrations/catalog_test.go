package migrations_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/artifact-registry/artifact-registry/internal/testdb"
	"github.com/artifact-registry/artifact-registry/store/enum"
)

// TestCatalog checks schema-wide properties in the system catalogs of a
// freshly migrated database, so that a future table cannot silently break
// them: the partitioning invariant, the UUIDv7 CHECKs, the referential
// actions, and the agreement of every enum CHECK with store/enum.
func TestCatalog(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	t.Run("partitioning invariant", func(t *testing.T) { checkPartitioningInvariant(t, pool) })
	t.Run("uuidv7 checks", func(t *testing.T) { checkUUIDv7Checks(t, pool) })
	t.Run("referential actions", func(t *testing.T) { checkReferentialActions(t, pool) })
	t.Run("partition-wise foreign keys", func(t *testing.T) { checkPartitionWiseForeignKeys(t, pool) })
	t.Run("enum checks match store/enum", func(t *testing.T) { checkEnumChecksMatchGo(t, pool) })
	t.Run("counter delta pairs match store/enum", func(t *testing.T) { checkCounterDeltaPairsMatchGo(t, pool) })
	t.Run("expected tables", func(t *testing.T) { checkTables(t, pool) })
	t.Run("partial, expression and covering indexes", func(t *testing.T) { checkIndexes(t, pool) })
}

// shaPartitioned are the tables (blob layer and GC queue) partitioned by
// HASH(sha256) instead of HASH(namespace_id) (docs/schema.md "Blob tables
// and attachments").
var shaPartitioned = map[string]bool{
	"blob_storage_blobs":       true,
	"blob_storage_attachments": true,
	"gc_blob_review_queue":     true,
}

// unpartitioned are the two exceptions of the partitioning invariant that
// carry namespace_id (namespaces defines it and has no namespace_id column).
// legacy_repositories is the migration inventory: read across namespaces by
// priority, keyed by a registry-wide legacy path (migration 00031).
var unpartitioned = map[string]bool{"namespaces": true, "namespace_statistics": true, "legacy_repositories": true}

// checkPartitioningInvariant checks, for every table in public, the
// partitioning invariant (docs/schema.md "Partitioning"): a table with namespace_id is hash-partitioned on namespace_id
// (sha256 for the blob layer and GC queue) into exactly 64 children, all in
// schema partitions, named <parent>_p00.._p63, covering every remainder;
// namespaces and namespace_statistics and every table without namespace_id
// are plain tables; public holds no partition child.
func checkPartitioningInvariant(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()

	type table struct {
		name, kind      string
		hasNamespaceID  bool
		isPartition     bool
		strategy        string
		keyColumns      string
		children        int
		childrenInPart  int
		childrenNamedOK int
		remainders      int
		leafChildren    int
	}
	rows, err := pool.Query(ctx, `
SELECT c.relname, c.relkind::text,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'namespace_id' AND NOT a.attisdropped),
       c.relispartition,
       COALESCE(p.partstrat::text, ''),
       COALESCE((SELECT string_agg(a.attname, ',' ORDER BY k.ord)
                 FROM unnest(p.partattrs) WITH ORDINALITY AS k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum), ''),
       (SELECT count(*) FROM pg_inherits i WHERE i.inhparent = c.oid),
       (SELECT count(*) FROM pg_inherits i JOIN pg_class ch ON ch.oid = i.inhrelid
          JOIN pg_namespace chn ON chn.oid = ch.relnamespace
         WHERE i.inhparent = c.oid AND chn.nspname = 'partitions'),
       (SELECT count(*) FROM pg_inherits i JOIN pg_class ch ON ch.oid = i.inhrelid
         WHERE i.inhparent = c.oid AND ch.relname ~ ('^' || c.relname || '_p[0-9]{2}$')
           AND substring(ch.relname from '_p([0-9]{2})$')::int < 64),
       (SELECT count(DISTINCT substring(pg_get_expr(ch.relpartbound, ch.oid) from 'remainder ([0-9]+)'))
          FROM pg_inherits i JOIN pg_class ch ON ch.oid = i.inhrelid
         WHERE i.inhparent = c.oid AND pg_get_expr(ch.relpartbound, ch.oid) LIKE '%modulus 64,%'),
       (SELECT count(*) FROM pg_inherits i JOIN pg_class ch ON ch.oid = i.inhrelid
         WHERE i.inhparent = c.oid AND ch.relkind = 'r')
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_partitioned_table p ON p.partrelid = c.oid
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []table
	for rows.Next() {
		var tb table
		if err := rows.Scan(&tb.name, &tb.kind, &tb.hasNamespaceID, &tb.isPartition, &tb.strategy, &tb.keyColumns,
			&tb.children, &tb.childrenInPart, &tb.childrenNamedOK, &tb.remainders, &tb.leafChildren); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tb)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	var partitioned, withNamespace int
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			if tb.isPartition {
				t.Fatalf("%s is a partition child in schema public; children belong in schema partitions", tb.name)
			}
			if !tb.hasNamespaceID || unpartitioned[tb.name] {
				if tb.kind != "r" {
					t.Errorf("%s must not be partitioned (relkind %q)", tb.name, tb.kind)
				}
				return
			}
			wantKey := "namespace_id"
			if shaPartitioned[tb.name] {
				wantKey = "sha256"
			}
			if tb.kind != "p" || tb.strategy != "h" || tb.keyColumns != wantKey {
				t.Fatalf("%s: relkind %q strategy %q key %q; want partitioned, hash, key %s",
					tb.name, tb.kind, tb.strategy, tb.keyColumns, wantKey)
			}
			if tb.children != 64 || tb.childrenInPart != 64 || tb.childrenNamedOK != 64 ||
				tb.remainders != 64 || tb.leafChildren != 64 {
				t.Errorf("%s: %d children, %d in schema partitions, %d named %s_pNN, %d distinct remainders of modulus 64, %d leaves; want 64 each",
					tb.name, tb.children, tb.childrenInPart, tb.childrenNamedOK, tb.name, tb.remainders, tb.leafChildren)
			}
		})
		if tb.kind == "p" {
			partitioned++
		}
		if tb.hasNamespaceID {
			withNamespace++
		}
	}
	// Guard against a vacuous pass (e.g. the query found nothing).
	if partitioned < 60 || withNamespace < 60 {
		t.Errorf("found %d partitioned tables and %d with namespace_id; the schema has more", partitioned, withNamespace)
	}
	for name := range unpartitioned {
		if !slices.ContainsFunc(tables, func(tb table) bool { return tb.name == name }) {
			t.Errorf("table %s missing", name)
		}
	}
	// Every child in schema partitions belongs to a parent in public.
	var orphans int
	if err := pool.QueryRow(ctx, `
SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'partitions' AND c.relkind IN ('r', 'p')
  AND NOT EXISTS (SELECT 1 FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent
                  JOIN pg_namespace pn ON pn.oid = p.relnamespace
                  WHERE i.inhrelid = c.oid AND pn.nspname = 'public')`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		t.Errorf("%d tables in schema partitions are not children of a public parent", orphans)
	}
}

// checkUUIDv7Checks asserts that every uuid id column without a server default
// in public carries the version-7 CHECK.
func checkUUIDv7Checks(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	missing := queryStrings(ctx, t, pool, `
SELECT c.relname
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'id' AND NOT a.attisdropped
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND a.atttypid = 'uuid'::regtype AND NOT a.atthasdef
  AND NOT EXISTS (
      SELECT 1 FROM pg_constraint k
      WHERE k.conrelid = c.oid AND k.contype = 'c'
        AND regexp_replace(pg_get_constraintdef(k.oid), '\s', '', 'g')
            = 'CHECK(((get_byte(uuid_send(id),6)>>4)=7))')`)
	if len(missing) > 0 {
		t.Errorf("uuid id columns without the UUIDv7 CHECK: %v", missing)
	}
	var n int
	if err := pool.QueryRow(ctx, `
SELECT count(*) FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'id'
WHERE ns.nspname = 'public' AND c.relkind IN ('r', 'p') AND a.atttypid = 'uuid'::regtype`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 55 {
		t.Errorf("only %d tables with a uuid id; the check above ran on too little", n)
	}
}

// enumColumn is one smallint enum column and the values its Go type defines.
type enumColumn struct {
	table, column string
	values        []int16
	array         bool // smallint[] whose elements are the enum
}

func int16s[T ~int16](vs []T) []int16 {
	out := make([]int16, len(vs))
	for i, v := range vs {
		out[i] = int16(v)
	}
	return out
}

func enumColumns() []enumColumn {
	format := int16s(enum.FormatValues())
	lifecycle := int16s(enum.LifecycleRuleTypeValues())
	health := int16s(enum.HealthStatusValues())
	ruleType := int16s(enum.UpstreamRuleTypeValues())
	return []enumColumn{
		{"namespaces", "delivery_mode_override", int16s(enum.DeliveryModeValues()), false},
		{"repositories", "format", format, false},
		{"repositories", "kind", int16s(enum.KindValues()), false},
		{"repositories", "visibility", int16s(enum.VisibilityValues()), false},
		{"lifecycle_rules", "rule_type", lifecycle, false},
		{"container_repository_lifecycle_rules", "rule_type", lifecycle, false},
		{"maven_repository_lifecycle_rules", "rule_type", lifecycle, false},
		{"npm_repository_lifecycle_rules", "rule_type", lifecycle, false},
		{"container_remote_repositories", "last_health_status", health, false},
		{"maven_remote_repositories", "last_health_status", health, false},
		{"npm_remote_repositories", "last_health_status", health, false},
		{"container_virtual_upstream_rules", "rule_type", ruleType, false},
		{"maven_virtual_upstream_rules", "rule_type", ruleType, false},
		{"npm_virtual_upstream_rules", "rule_type", ruleType, false},
		{"container_virtual_upstream_rules", "target_field", int16s(enum.ContainerTargetFieldValues()), false},
		{"maven_virtual_upstream_rules", "target_field", int16s(enum.MavenTargetFieldValues()), false},
		{"npm_virtual_upstream_rules", "target_field", int16s(enum.NpmTargetFieldValues()), false},
		{"npm_metadata_files", "kind", int16s(enum.NpmMetadataKindValues()), false},
		{"npm_remote_metadata_files", "kind", int16s(enum.NpmRemoteMetadataKindValues()), false},
		{"counter_deltas", "target", int16s(enum.CounterTargetValues()), false},
		{"counter_deltas", "field", int16s(enum.CounterFieldValues()), false},
		{"access_tokens", "scopes", int16s(enum.TokenScopeValues()), true},
		{"legacy_repositories", "status", int16s(enum.LegacyStatusValues()), false},
	}
}

// checkEnumChecksMatchGo evaluates, for every smallint enum column, the
// column's own CHECK constraints on every value in [-3, 20] and asserts they
// accept exactly the values store/enum defines. It also asserts that every
// smallint column in public is either covered here or known not to be an enum.
func checkEnumChecksMatchGo(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	covered := map[string]bool{}
	for _, c := range enumColumns() {
		covered[c.table+"."+c.column] = true
		t.Run(c.table+"."+c.column, func(t *testing.T) {
			exprs := queryStrings(ctx, t, pool, `
SELECT pg_get_expr(k.conbin, k.conrelid)
FROM pg_constraint k
JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
WHERE k.conrelid = $1::regclass AND k.contype = 'c' AND cardinality(k.conkey) = 1 AND a.attname = $2`,
				c.table, c.column)
			if len(exprs) == 0 {
				t.Fatalf("no CHECK constraint on %s.%s", c.table, c.column)
			}
			colType := "smallint"
			if c.array {
				colType = "smallint[]"
			}
			var accepted []int16
			for v := int16(-3); v <= 20; v++ {
				ok := true
				for _, e := range exprs {
					var pass *bool
					arg := any(v)
					if c.array {
						arg = []int16{v}
					}
					q := fmt.Sprintf("SELECT (%s) FROM (SELECT $1::%s AS %s) AS t", e, colType, c.column)
					if err := pool.QueryRow(ctx, q, arg).Scan(&pass); err != nil {
						t.Fatalf("evaluate %s: %v", e, err)
					}
					// A CHECK passes on NULL, like the constraint itself.
					if pass != nil && !*pass {
						ok = false
					}
				}
				if ok {
					accepted = append(accepted, v)
				}
			}
			if !slices.Equal(accepted, c.values) {
				t.Errorf("CHECK on %s.%s accepts %v; store/enum defines %v", c.table, c.column, accepted, c.values)
			}
		})
	}
	// Every smallint (or smallint[]) column must be an enum listed above,
	// or one of these known non-enum columns.
	notEnums := map[string]bool{
		"container_remote_repositories.cache_validity_hours":      true,
		"maven_remote_repositories.cache_validity_hours":          true,
		"maven_remote_repositories.metadata_cache_validity_hours": true,
		"maven_remote_repositories.negative_cache_minutes":        true,
		"npm_remote_repositories.cache_validity_hours":            true,
		"npm_remote_repositories.metadata_cache_validity_hours":   true,
	}
	cols := queryStrings(ctx, t, pool, `
SELECT c.relname || '.' || a.attname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND a.atttypid IN ('smallint'::regtype, 'smallint[]'::regtype)
  AND c.relname NOT LIKE 'river%' AND c.relname <> 'goose_db_version'`)
	for _, col := range cols {
		if !covered[col] && !notEnums[col] {
			t.Errorf("smallint column %s is neither an enum checked against store/enum nor a known non-enum", col)
		}
	}
}

// checkCounterDeltaPairsMatchGo asserts that counter_deltas accepts a
// (target, field) pair exactly when CounterTarget.Fields lists it.
func checkCounterDeltaPairsMatchGo(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	var expr string
	if err := pool.QueryRow(ctx, `SELECT pg_get_expr(conbin, conrelid) FROM pg_constraint
		WHERE conrelid = 'counter_deltas'::regclass AND conname = 'counter_deltas_target_field_valid'`).Scan(&expr); err != nil {
		t.Fatal(err)
	}
	q := fmt.Sprintf("SELECT (%s) FROM (SELECT $1::smallint AS target, $2::smallint AS field) AS t", expr)
	for _, target := range enum.CounterTargetValues() {
		for _, field := range enum.CounterFieldValues() {
			var ok bool
			if err := pool.QueryRow(ctx, q, int16(target), int16(field)).Scan(&ok); err != nil {
				t.Fatal(err)
			}
			if want := slices.Contains(target.Fields(), field); ok != want {
				t.Errorf("counter_deltas accepts (%v, %v) = %v; CounterTarget.Fields says %v", target, field, ok, want)
			}
		}
	}
	// The value-kind CHECK must agree with IsTimestamp.
	if err := pool.QueryRow(ctx, `SELECT pg_get_expr(conbin, conrelid) FROM pg_constraint
		WHERE conrelid = 'counter_deltas'::regclass AND conname = 'counter_deltas_value_kind'`).Scan(&expr); err != nil {
		t.Fatal(err)
	}
	q = fmt.Sprintf(`SELECT (%s) FROM (SELECT $1::smallint AS field, $2::bigint AS delta, $3::timestamptz AS observed_at) AS t`, expr)
	for _, field := range enum.CounterFieldValues() {
		var asCounter, asTimestamp bool
		if err := pool.QueryRow(ctx, q, int16(field), 1, nil).Scan(&asCounter); err != nil {
			t.Fatal(err)
		}
		if err := pool.QueryRow(ctx, q, int16(field), nil, "2026-01-01T00:00:00Z").Scan(&asTimestamp); err != nil {
			t.Fatal(err)
		}
		if asTimestamp != field.IsTimestamp() || asCounter == field.IsTimestamp() {
			t.Errorf("%v: delta accepted %v, observed_at accepted %v; IsTimestamp %v",
				field, asCounter, asTimestamp, field.IsTimestamp())
		}
	}
}

// declaredForeignKeysSQL lists the foreign keys of the public tables, a key
// split partition by partition (migration 00037) once, under its name
// without the _pNN suffix: name, relname (the public table), confdeltype.
const declaredForeignKeysSQL = `
SELECT DISTINCT CASE WHEN n.nspname = 'partitions' THEN left(k.conname, -4) ELSE k.conname END AS name,
       coalesce(parent.relname, c.relname) AS relname, k.confdeltype
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND n.nspname = 'partitions'
LEFT JOIN pg_class parent ON parent.oid = i.inhparent
WHERE k.contype = 'f' AND k.conparentid = 0
  AND (n.nspname = 'public' OR (n.nspname = 'partitions' AND k.conname ~ '_p\d\d$'))`

// checkPartitionWiseForeignKeys checks migration 00037's rule: a foreign
// key between two tables hash-partitioned alike (the key maps one table's
// partition column to the other's) is declared partition by partition,
// each of its 64 constraints on a child partition referencing the
// partition of the same bound, all with one definition; keys between
// tables partitioned on different columns stay on the parents.
func checkPartitionWiseForeignKeys(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	unsplit := queryStrings(ctx, t, pool, `
SELECT k.conname FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND k.contype = 'f' AND k.conparentid = 0
  AND EXISTS (SELECT 1 FROM foreign_key_partition_pairs(k.oid))`)
	if len(unsplit) > 0 {
		t.Errorf("foreign keys declared on the parents although their tables are partitioned alike (call split_foreign_key): %v", unsplit)
	}
	bad := queryStrings(ctx, t, pool, `
SELECT format('%s: %s constraints, %s definitions, %s referenced parents, %s misaligned', name, parts, defs, parents, parts - aligned)
FROM (
	SELECT left(k.conname, -4) AS name, count(*) AS parts,
	       count(DISTINCT regexp_replace(pg_get_constraintdef(k.oid), 'REFERENCES partitions\.\w+_p\d\d\(', 'REFERENCES (')) AS defs,
	       count(DISTINCT ri.inhparent) AS parents,
	       count(*) FILTER (WHERE pg_get_expr(c.relpartbound, c.oid) = pg_get_expr(r.relpartbound, r.oid)
	                          AND right(k.conname, 2) = right(c.relname, 2)) AS aligned
	FROM pg_constraint k
	JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
	JOIN pg_class r ON r.oid = k.confrelid JOIN pg_inherits ri ON ri.inhrelid = r.oid
	WHERE n.nspname = 'partitions' AND k.contype = 'f' AND k.conparentid = 0 AND k.conname ~ '_p\d\d$'
	GROUP BY 1
) s
WHERE parts <> 64 OR defs <> 1 OR parents <> 1 OR aligned <> 64`)
	if len(bad) > 0 {
		t.Errorf("partition-wise foreign keys not split cleanly: %v", bad)
	}
	// The publish path's keys are among them (the reason for the split).
	split := queryStrings(ctx, t, pool, `SELECT DISTINCT left(conname, -4) FROM pg_constraint
WHERE contype = 'f' AND conname ~ '_p\d\d$' AND connamespace = 'partitions'::regnamespace`)
	for _, k := range []string{"upload_sessions_repository_fkey", "npm_files_npm_version_fkey", "npm_versions_npm_package_fkey",
		"npm_tags_npm_version_fkey", "blob_storage_attachments_blob_fkey", "maven_files_maven_version_fkey", "container_tags_container_manifest_fkey"} {
		if !slices.Contains(split, k) {
			t.Errorf("%s is not split partition by partition", k)
		}
	}
}

// checkReferentialActions lists every foreign key of the public parents whose
// delete action is not NO ACTION and compares it with the actions the
// schema specifies (docs/schema.md "Referential actions"): CASCADE for derived rows and structural children, RESTRICT for
// the credential key references; every other key is NO ACTION.
func checkReferentialActions(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	want := []string{
		"blob_storage_blobs_by_namespace_namespace_id_fkey c",
		"counter_deltas_namespace_id_fkey c",
		"namespace_statistics_namespace_id_fkey c",
		"repository_collection_repositories_repository_fkey c",
	}
	for _, f := range []string{"container", "maven", "npm"} {
		want = append(want,
			f+"_repositories_repository_fkey c",
			f+"_remote_repositories_repository_fkey c",
			f+"_virtual_repositories_repository_fkey c",
			f+"_virtual_repository_upstreams_virtual_fkey c",
			f+"_virtual_upstream_rules_upstream_fkey c",
			f+"_remote_repositories_ns_key_fkey r",
		)
	}
	slices.Sort(want)
	got := queryStrings(ctx, t, pool, `
SELECT name || ' ' || confdeltype::text FROM (`+declaredForeignKeysSQL+`) k
WHERE confdeltype <> 'a' AND relname NOT LIKE 'river%'`)
	if !slices.Equal(got, want) {
		t.Errorf("foreign keys with a delete action other than NO ACTION:\n got %v\nwant %v", got, want)
	}
	// The upstream sibling references must stay NO ACTION (refuse deletes).
	noAction := queryStrings(ctx, t, pool, `
SELECT name FROM (`+declaredForeignKeysSQL+`) k
WHERE confdeltype = 'a'
  AND name IN ('container_virtual_repository_upstreams_upstream_fkey',
                    'maven_virtual_repository_upstreams_upstream_fkey',
                    'npm_virtual_repository_upstreams_upstream_fkey',
                    'upload_sessions_repository_fkey',
                    'container_images_container_repository_fkey',
                    'maven_packages_maven_repository_fkey',
                    'npm_packages_npm_repository_fkey')`)
	if len(noAction) != 7 {
		t.Errorf("NO ACTION keys found: %v; want the three upstream references, upload_sessions and the three artifact keys", noAction)
	}
	// Deferrable position constraints.
	deferrable := queryStrings(ctx, t, pool, `
SELECT conname FROM pg_constraint
WHERE contype = 'u' AND condeferrable AND condeferred AND conparentid = 0`)
	wantDeferrable := []string{"unique_cvru_ns_id_repository_id_position", "unique_mvru_ns_id_repository_id_position",
		"unique_nvru_ns_id_repository_id_position"}
	if !slices.Equal(deferrable, wantDeferrable) {
		t.Errorf("deferrable unique constraints %v, want %v", deferrable, wantDeferrable)
	}
}

// checkTables asserts that every table of the schema (docs/schema.md) and
// the GC/ops additions exists in public.
func checkTables(t *testing.T, pool *pgxpool.Pool) {
	want := []string{
		"namespaces", "namespace_statistics", "repository_collections", "repositories",
		"repository_collection_repositories", "lifecycle_policy_settings", "lifecycle_rules",
		"namespace_encryption_keys", "blob_storage_blobs", "blob_storage_attachments",
		"blob_storage_blobs_by_namespace", "upload_sessions", "gc_blob_review_queue", "gc_sweep_state", "gc_controls",
		"counter_deltas", "access_tokens", "token_signing_keys", "ui_sessions",
		"legacy_repositories", "legacy_imported_manifests", "legacy_migration_controls",
		"container_repositories", "container_images", "container_blobs", "container_manifests",
		"container_manifest_relationships", "container_tags", "container_manifest_blob_references",
		"container_remote_repositories", "container_remote_images", "container_remote_blobs",
		"container_remote_manifests", "container_remote_manifest_relationships", "container_remote_tags",
		"container_remote_manifest_children",
		"maven_repositories", "maven_packages", "maven_versions", "maven_files",
		"maven_remote_repositories", "maven_remote_packages", "maven_remote_versions", "maven_remote_files",
		"npm_repositories", "npm_packages", "npm_versions", "npm_tags", "npm_files", "npm_metadata_files",
		"npm_remote_repositories", "npm_remote_packages", "npm_remote_versions", "npm_remote_tags",
		"npm_remote_metadata_files", "npm_remote_files",
	}
	for _, f := range []string{"container", "maven", "npm"} {
		want = append(want, f+"_virtual_repositories", f+"_virtual_repository_upstreams", f+"_virtual_upstream_rules",
			f+"_repository_lifecycle_policy_settings", f+"_repository_lifecycle_rules")
	}
	got := queryStrings(context.Background(), t, pool, `
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
  AND c.relname NOT LIKE 'river%' AND c.relname <> 'goose_db_version'`)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("tables in public:\n got %v\nwant %v", got, want)
	}
}

// checkIndexes spot-checks the index shapes docs/schema.md calls out (partial,
// expression, NULLS FIRST, DESC keyset, INCLUDE) on the parents; children
// inherit them (the partitioning check covers their presence per child).
func checkIndexes(t *testing.T, pool *pgxpool.Pool) {
	want := map[string]string{
		"namespaces_slug_key":                                   "UNIQUE INDEX namespaces_slug_key ON public.namespaces USING btree (slug)",
		"namespaces_anchor_unpurged_key":                        "UNIQUE INDEX namespaces_anchor_unpurged_key ON public.namespaces USING btree (platform, entity_type, entity_id) WHERE (purged_at IS NULL)",
		"namespaces_slug_c_idx":                                 "INDEX namespaces_slug_c_idx ON public.namespaces USING btree (slug COLLATE \"C\")",
		"namespaces_created_at_idx":                             "INDEX namespaces_created_at_idx ON public.namespaces USING btree (created_at, id)",
		"namespace_statistics_last_reconciled_at_idx":           "INDEX namespace_statistics_last_reconciled_at_idx ON public.namespace_statistics USING btree (last_reconciled_at, namespace_id)",
		"repository_collections_one_default_key":                "UNIQUE INDEX repository_collections_one_default_key ON ONLY public.repository_collections USING btree (namespace_id) WHERE (is_default IS TRUE)",
		"repositories_namespace_id_name_key":                    "UNIQUE INDEX repositories_namespace_id_name_key ON ONLY public.repositories USING btree (namespace_id, name)",
		"repositories_active_size_bytes_idx":                    "INDEX repositories_active_size_bytes_idx ON ONLY public.repositories USING btree (namespace_id, size_bytes DESC, id DESC) WHERE (soft_deleted_at IS NULL)",
		"repositories_active_recently_updated_idx":              "INDEX repositories_active_recently_updated_idx ON ONLY public.repositories USING btree (namespace_id, COALESCE(last_updated_at, created_at) DESC, id DESC) WHERE (soft_deleted_at IS NULL)",
		"repositories_active_format_name_idx":                   "INDEX repositories_active_format_name_idx ON ONLY public.repositories USING btree (namespace_id, format, name) WHERE (soft_deleted_at IS NULL)",
		"repositories_trash_idx":                                "INDEX repositories_trash_idx ON ONLY public.repositories USING btree (namespace_id, soft_deleted_at DESC) WHERE (soft_deleted_at IS NOT NULL)",
		"namespace_encryption_keys_one_active_key":              "UNIQUE INDEX namespace_encryption_keys_one_active_key ON ONLY public.namespace_encryption_keys USING btree (namespace_id) WHERE (active = true)",
		"namespace_encryption_keys_shredded_idx":                "INDEX namespace_encryption_keys_shredded_idx ON ONLY public.namespace_encryption_keys USING btree (namespace_id) WHERE (shredded_at IS NOT NULL)",
		"namespace_encryption_keys_root_key_uri_live_idx":       "INDEX namespace_encryption_keys_root_key_uri_live_idx ON ONLY public.namespace_encryption_keys USING btree (root_key_uri) WHERE (shredded_at IS NULL)",
		"blob_storage_blobs_namespace_id_size_idx":              "INDEX blob_storage_blobs_namespace_id_size_idx ON ONLY public.blob_storage_blobs USING btree (namespace_id) INCLUDE (size)",
		"blob_storage_blobs_by_namespace_pkey":                  "UNIQUE INDEX blob_storage_blobs_by_namespace_pkey ON ONLY public.blob_storage_blobs_by_namespace USING btree (namespace_id, sha256) INCLUDE (size)",
		"blob_storage_blobs_by_namespace_namespace_id_size_idx": "INDEX blob_storage_blobs_by_namespace_namespace_id_size_idx ON ONLY public.blob_storage_blobs_by_namespace USING btree (namespace_id) INCLUDE (size)",
		"blob_storage_attachments_namespace_id_sha256_id_idx":   "INDEX blob_storage_attachments_namespace_id_sha256_id_idx ON ONLY public.blob_storage_attachments USING btree (namespace_id, sha256, id)",
		"upload_sessions_expires_at_idx":                        "INDEX upload_sessions_expires_at_idx ON ONLY public.upload_sessions USING btree (expires_at)",
		"gc_blob_review_queue_due_idx":                          "INDEX gc_blob_review_queue_due_idx ON ONLY public.gc_blob_review_queue USING btree (review_after) WHERE (excluded_at IS NULL)",
		"container_images_last_downloaded_at_idx":               "INDEX container_images_last_downloaded_at_idx ON ONLY public.container_images USING btree (namespace_id, container_repository_id, last_downloaded_at NULLS FIRST) WHERE (soft_deleted_at IS NULL)",
		"container_remote_images_last_downloaded_at_idx":        "INDEX container_remote_images_last_downloaded_at_idx ON ONLY public.container_remote_images USING btree (namespace_id, container_remote_repository_id, last_downloaded_at NULLS FIRST) WHERE (soft_deleted_at IS NULL)",
		"container_manifests_created_at_idx":                    "INDEX container_manifests_created_at_idx ON ONLY public.container_manifests USING btree (namespace_id, created_at DESC)",
		"container_manifests_unrecorded_idx":                    "INDEX container_manifests_unrecorded_idx ON ONLY public.container_manifests USING btree (namespace_id, id) WHERE (NOT blob_references_recorded)",
		"container_manifests_subject_idx":                       "INDEX container_manifests_subject_idx ON ONLY public.container_manifests USING btree (namespace_id, container_image_id, subject_digest, digest) WHERE ((subject_digest IS NOT NULL) AND (soft_deleted_at IS NULL))",
		"container_manifests_subject_unrecorded_idx":            "INDEX container_manifests_subject_unrecorded_idx ON ONLY public.container_manifests USING btree (namespace_id, container_image_id, id) WHERE (NOT subject_recorded)",
		"container_images_unreferenced_links_pending_idx":       "INDEX container_images_unreferenced_links_pending_idx ON ONLY public.container_images USING btree (namespace_id, id) WHERE unreferenced_links_pending",
		"maven_files_active_version_file_key":                   "UNIQUE INDEX maven_files_active_version_file_key ON ONLY public.maven_files USING btree (namespace_id, maven_version_id, file_name) WHERE ((soft_deleted_at IS NULL) AND (maven_version_id IS NOT NULL))",
		"maven_files_active_package_file_key":                   "UNIQUE INDEX maven_files_active_package_file_key ON ONLY public.maven_files USING btree (namespace_id, maven_package_id, file_name) WHERE ((soft_deleted_at IS NULL) AND (maven_version_id IS NULL))",
		"npm_packages_tombstone_name_idx":                       "INDEX npm_packages_tombstone_name_idx ON ONLY public.npm_packages USING btree (namespace_id, npm_repository_id, name) WHERE (soft_deleted_at IS NOT NULL)",
		"npm_metadata_files_package_kind_key":                   "UNIQUE INDEX npm_metadata_files_package_kind_key ON ONLY public.npm_metadata_files USING btree (namespace_id, npm_package_id, kind)",
	}
	ctx := context.Background()
	for name, def := range want {
		var got string
		err := pool.QueryRow(ctx, `SELECT pg_get_indexdef(c.oid) FROM pg_class c
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relname = $1`, name).Scan(&got)
		if err != nil {
			t.Errorf("index %s: %v", name, err)
			continue
		}
		if got != "CREATE "+def {
			t.Errorf("index %s:\n got %s\nwant CREATE %s", name, got, def)
		}
	}
}
