-- +goose Up
-- npm virtual repositories, their ordered upstreams and upstream rules:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- npm_virtual_repositories ----------------------------------------------------
CREATE TABLE npm_virtual_repositories (
    id            uuid NOT NULL,
    namespace_id  uuid NOT NULL,
    repository_id uuid NOT NULL,
    CONSTRAINT npm_virtual_repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_virtual_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_virtual_repositories_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id) ON DELETE NO ACTION,
    CONSTRAINT npm_virtual_repositories_repository_fkey FOREIGN KEY (repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX npm_virtual_repositories_namespace_id_repository_id_key
    ON npm_virtual_repositories (namespace_id, repository_id);
SELECT create_hash_partitions('npm_virtual_repositories');

-- npm_virtual_repository_upstreams --------------------------------------------
-- position is 0-based here (CHECK position >= 0, 0 = highest priority) and may
-- have gaps after deletes; the container table is 1-based. docs/schema.md records the
-- divergence without ratifying it; both are implemented as written.
CREATE TABLE npm_virtual_repository_upstreams (
    id                        uuid    NOT NULL,
    namespace_id              uuid    NOT NULL,
    npm_virtual_repository_id uuid    NOT NULL,
    upstream_repository_id    uuid    NOT NULL,
    position                  integer NOT NULL,
    CONSTRAINT npm_virtual_repository_upstreams_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_virtual_repository_upstreams_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_virtual_repository_upstreams_position_min CHECK (position >= 0),
    CONSTRAINT npm_virtual_repository_upstreams_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id) ON DELETE NO ACTION,
    CONSTRAINT npm_virtual_repository_upstreams_virtual_fkey
        FOREIGN KEY (npm_virtual_repository_id, namespace_id)
        REFERENCES npm_virtual_repositories (id, namespace_id) ON DELETE CASCADE,
    CONSTRAINT npm_virtual_repository_upstreams_upstream_fkey
        FOREIGN KEY (upstream_repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE NO ACTION
) PARTITION BY HASH (namespace_id);
ALTER TABLE npm_virtual_repository_upstreams
    ADD CONSTRAINT unique_nvru_ns_id_repository_id_position
    UNIQUE (namespace_id, npm_virtual_repository_id, position) DEFERRABLE INITIALLY DEFERRED;
CREATE UNIQUE INDEX npm_virtual_repository_upstreams_upstream_key
    ON npm_virtual_repository_upstreams (namespace_id, npm_virtual_repository_id, upstream_repository_id);
CREATE INDEX npm_virtual_repository_upstreams_upstream_idx
    ON npm_virtual_repository_upstreams (namespace_id, upstream_repository_id);
SELECT create_hash_partitions('npm_virtual_repository_upstreams');

-- npm_virtual_upstream_rules --------------------------------------------------
-- pattern bound counts characters, not bytes (255 multi-byte characters pass).
CREATE TABLE npm_virtual_upstream_rules (
    id                                 uuid     NOT NULL,
    namespace_id                       uuid     NOT NULL,
    npm_virtual_repository_upstream_id uuid     NOT NULL,
    rule_type                          smallint NOT NULL, -- enum.UpstreamRuleType: 0=allow, 1=deny
    pattern                            text     NOT NULL,
    target_field                       smallint NOT NULL, -- enum.NpmTargetField: 0=full_package_name, 1=scope, 2=version
    CONSTRAINT npm_virtual_upstream_rules_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT npm_virtual_upstream_rules_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT npm_virtual_upstream_rules_rule_type_range CHECK (rule_type IN (0, 1)),
    CONSTRAINT npm_virtual_upstream_rules_pattern_length CHECK (char_length(pattern) <= 255),
    CONSTRAINT npm_virtual_upstream_rules_target_field_range CHECK (target_field IN (0, 1, 2)),
    CONSTRAINT npm_virtual_upstream_rules_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id) ON DELETE NO ACTION,
    CONSTRAINT npm_virtual_upstream_rules_upstream_fkey
        FOREIGN KEY (npm_virtual_repository_upstream_id, namespace_id)
        REFERENCES npm_virtual_repository_upstreams (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE INDEX npm_virtual_upstream_rules_upstream_idx
    ON npm_virtual_upstream_rules (namespace_id, npm_virtual_repository_upstream_id);
SELECT create_hash_partitions('npm_virtual_upstream_rules');

-- +goose Down
DROP TABLE IF EXISTS npm_virtual_upstream_rules;
DROP TABLE IF EXISTS npm_virtual_repository_upstreams;
DROP TABLE IF EXISTS npm_virtual_repositories;
