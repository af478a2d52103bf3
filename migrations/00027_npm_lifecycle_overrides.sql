-- +goose Up
-- npm repository-level lifecycle policy override pair:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- npm_repository_lifecycle_policy_settings / _rules ---------------------------
-- Repository-level override; FK to repositories is NO ACTION (see container).
CREATE TABLE npm_repository_lifecycle_policy_settings (
    id            uuid    NOT NULL,
    namespace_id  uuid    NOT NULL,
    repository_id uuid    NOT NULL,
    enabled       boolean NOT NULL,
    CONSTRAINT npm_repo_lifecycle_policy_settings_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_repo_lifecycle_policy_settings_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_repo_lifecycle_policy_settings_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_repo_lifecycle_policy_settings_repository_fkey
        FOREIGN KEY (repository_id, namespace_id) REFERENCES repositories (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_repo_lifecycle_policy_settings_repository_key
    ON npm_repository_lifecycle_policy_settings (namespace_id, repository_id);
SELECT create_hash_partitions('npm_repository_lifecycle_policy_settings');

CREATE TABLE npm_repository_lifecycle_rules (
    id                                         uuid     NOT NULL,
    namespace_id                               uuid     NOT NULL,
    npm_repository_lifecycle_policy_settings_id uuid     NOT NULL,
    rule_type                                  smallint NOT NULL, -- enum.LifecycleRuleType
    rule_configuration                         jsonb    NOT NULL,
    CONSTRAINT npm_repo_lifecycle_rules_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_repo_lifecycle_rules_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_repo_lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2)),
    CONSTRAINT npm_repo_lifecycle_rules_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT npm_repo_lifecycle_rules_settings_fkey
        FOREIGN KEY (npm_repository_lifecycle_policy_settings_id, namespace_id)
        REFERENCES npm_repository_lifecycle_policy_settings (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE INDEX npm_repo_lifecycle_rules_settings_idx
    ON npm_repository_lifecycle_rules (namespace_id, npm_repository_lifecycle_policy_settings_id);
SELECT create_hash_partitions('npm_repository_lifecycle_rules');

-- +goose Down
DROP TABLE IF EXISTS npm_repository_lifecycle_rules;
DROP TABLE IF EXISTS npm_repository_lifecycle_policy_settings;
