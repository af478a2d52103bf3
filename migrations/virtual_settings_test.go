package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const virtualSettingsVersion = 57

// TestVirtualSettingsUpgrade: a database of the release before 00057,
// holding a virtual repository of each format with an upstream and a
// rule, upgrades with migrations.Up: the virtuals keep their upstreams,
// get no deploy target and no reserved patterns; afterwards a deploy
// target must be a repository of the namespace, reserved patterns are
// bounded, and deleting the deploy target is refused by its key.
func TestVirtualSettingsUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, virtualSettingsVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	other := f.namespace()
	type family struct {
		prefix, fk, ruleFK string
		format             int16
		pos                int
	}
	families := []family{
		{"container", "container_virtual_repository_id", "container_virtual_repository_upstream_id", 3, 1},
		{"maven", "maven_virtual_repository_id", "maven_virtual_repository_upstream_id", 1, 1},
		{"npm", "npm_virtual_repository_id", "npm_virtual_repository_upstream_id", 2, 0},
	}
	virtuals := map[string]struct{ virtual, hosted, foreign any }{}
	for _, fam := range families {
		hosted := f.repository(ns, fam.format, 0)
		vrepo := f.repository(ns, fam.format, 1)
		v := f.child(fam.prefix+"_virtual_repositories", ns, vrepo)
		up := v7(t)
		f.must(fam.prefix+"_virtual_repository_upstreams", row{"id", up, "namespace_id", ns, fam.fk, v,
			"upstream_repository_id", hosted, "position", fam.pos})
		f.must(fam.prefix+"_virtual_upstream_rules", row{"id", v7(t), "namespace_id", ns, fam.ruleFK, up,
			"rule_type", int16(1), "pattern", "acme/*", "target_field", int16(0)})
		virtuals[fam.prefix] = struct{ virtual, hosted, foreign any }{v, hosted, f.repository(other, fam.format, 0)}
	}

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	for _, fam := range families {
		v := virtuals[fam.prefix]
		table := fam.prefix + "_virtual_repositories"
		var (
			deploy   *string
			patterns []string
		)
		if err := pool.QueryRow(ctx, `SELECT deploy_to_repository_id::text, reserved_patterns FROM `+table+`
			WHERE namespace_id = $1 AND id = $2`, ns, v.virtual).Scan(&deploy, &patterns); err != nil {
			t.Fatal(err)
		}
		if deploy != nil || len(patterns) != 0 || patterns == nil {
			t.Fatalf("%s after the upgrade: %v %v", table, deploy, patterns)
		}
		if n := f.count(fam.prefix+"_virtual_upstream_rules", "namespace_id = $1", ns); n != 1 {
			t.Fatalf("%s rules after the upgrade: %d", fam.prefix, n)
		}
		// A deploy target of another namespace has no row under the key.
		if _, err := pool.Exec(ctx, `UPDATE `+table+` SET deploy_to_repository_id = $3 WHERE namespace_id = $1 AND id = $2`,
			ns, v.virtual, v.foreign); err == nil || !strings.Contains(err.Error(), "deploy_to_fkey") {
			t.Fatalf("%s: a foreign deploy target: %v", table, err)
		}
		if _, err := pool.Exec(ctx, `UPDATE `+table+` SET deploy_to_repository_id = $3, reserved_patterns = '{"acme/*"}'
			WHERE namespace_id = $1 AND id = $2`, ns, v.virtual, v.hosted); err != nil {
			t.Fatalf("%s: set the deploy target: %v", table, err)
		}
		if _, err := pool.Exec(ctx, `UPDATE `+table+` SET reserved_patterns = array_fill('x'::text, ARRAY[51])
			WHERE namespace_id = $1 AND id = $2`, ns, v.virtual); err == nil || !strings.Contains(err.Error(), "reserved_patterns_max") {
			t.Fatalf("%s: 51 reserved patterns: %v", table, err)
		}
		// The upstream link goes (CASCADE from the virtual side is not
		// asked here); the deploy target's own key still refuses.
		if _, err := pool.Exec(ctx, `DELETE FROM `+fam.prefix+`_virtual_repository_upstreams WHERE namespace_id = $1`, ns); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `DELETE FROM repositories WHERE namespace_id = $1 AND id = $2`, ns, v.hosted); err == nil ||
			!strings.Contains(err.Error(), "deploy_to_fkey") {
			t.Fatalf("%s: deleting the deploy target: %v", table, err)
		}
	}
}
