package migrations_test

import (
	"context"
	"testing"

	"github.com/artifact-registry/artifact-registry/migrations"
)

const lifecycleVersion = 45

// TestLifecyclePoliciesUpgrade: a database of the release before 00045,
// holding a namespace policy with a rule, a container override and a
// soft-deleted repository, upgrades with migrations.Up: the policies get
// the default minimum age, the trashed row an unknown (NULL) deleter, and
// afterwards a soft delete records the transaction's actor, a restore
// clears it, and the new rule type is accepted.
func TestLifecyclePoliciesUpgrade(t *testing.T) {
	ctx := context.Background()
	pool := databaseBefore(t, lifecycleVersion)
	f := newFixture(t, pool)
	ns := f.namespace()
	policy := v7(t)
	f.must("lifecycle_policy_settings", row{"id", policy, "namespace_id", ns, "enabled", true})
	f.must("lifecycle_rules", row{"id", v7(t), "namespace_id", ns, "lifecycle_policy_settings_id", policy,
		"rule_type", int16(1), "rule_configuration", `{"count": 3}`})
	repo := f.repository(ns, 0, 0)
	override := v7(t)
	f.must("container_repository_lifecycle_policy_settings", row{"id", override, "namespace_id", ns,
		"repository_id", repo, "enabled", false})
	trashed := f.repository(ns, 0, 0)
	if _, err := pool.Exec(ctx, `UPDATE repositories SET soft_deleted_at = now() WHERE id = $1`, trashed); err != nil {
		t.Fatal(err)
	}

	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	for _, table := range []string{"lifecycle_policy_settings", "container_repository_lifecycle_policy_settings"} {
		if n := f.count(table, "namespace_id = $1 AND min_age_days = 1", ns); n != 1 {
			t.Errorf("%s: %d rows with the default minimum age, want 1", table, n)
		}
	}
	if n := f.count("repositories", "id = $1 AND soft_deleted_at IS NOT NULL AND soft_deleted_by IS NULL", trashed); n != 1 {
		t.Errorf("trashed repository: deleter should be unknown (NULL)")
	}
	f.must("lifecycle_rules", row{"id", v7(t), "namespace_id", ns, "lifecycle_policy_settings_id", policy,
		"rule_type", int16(3), "rule_configuration", `{"count": 2}`})
	if err := insert(ctx, pool, "lifecycle_rules", row{"id", v7(t), "namespace_id", ns, "lifecycle_policy_settings_id", policy,
		"rule_type", int16(4), "rule_configuration", `{}`}); sqlState(err) != codeCheck {
		t.Errorf("rule type 4: %v, want a check violation", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE lifecycle_policy_settings SET min_age_days = -1 WHERE id = $1`, policy); sqlState(err) != codeCheck {
		t.Errorf("negative minimum age: %v, want a check violation", err)
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT set_config('artifact_registry.actor', 'policy:test', true)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE repositories SET soft_deleted_at = now() WHERE id = $1`, repo); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.count("repositories", "id = $1 AND soft_deleted_by = 'policy:test'", repo); n != 1 {
		t.Errorf("soft delete did not record the actor")
	}
	if _, err := pool.Exec(ctx, `UPDATE repositories SET soft_deleted_at = NULL WHERE id = $1`, repo); err != nil {
		t.Fatal(err)
	}
	if n := f.count("repositories", "id = $1 AND soft_deleted_by IS NULL", repo); n != 1 {
		t.Errorf("restore did not clear the deleter")
	}
}
