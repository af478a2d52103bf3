-- +goose Up
-- Maven virtual repositories, their ordered upstreams and upstream rules:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- maven_virtual_repositories --------------------------------------------------
-- FK to repositories: ON DELETE CASCADE by the format-child rule of docs/schema.md (Referential actions)
-- ("format child tables ... and their virtual and remote variants").
CREATE TABLE maven_virtual_repositories (
    id            uuid NOT NULL,
    namespace_id  uuid NOT NULL,
    repository_id uuid NOT NULL,
    CONSTRAINT maven_virtual_repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_virtual_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_virtual_repositories_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_virtual_repositories_repository_fkey FOREIGN KEY (repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX maven_virtual_repositories_namespace_id_repository_id_key
    ON maven_virtual_repositories (namespace_id, repository_id);
SELECT create_hash_partitions('maven_virtual_repositories');

-- maven_virtual_repository_upstreams ------------------------------------------
-- The Maven ERD gives position no lower bound and the link to the virtual
-- repository no action. ON DELETE CASCADE follows the two tests of docs/schema.md (Referential actions)
-- (parent-to-child and purely structural), as for the container and npm
-- siblings; the upstream reference is NO ACTION as the ERD states.
CREATE TABLE maven_virtual_repository_upstreams (
    id                          uuid    NOT NULL,
    namespace_id                uuid    NOT NULL,
    maven_virtual_repository_id uuid    NOT NULL,
    upstream_repository_id      uuid    NOT NULL,
    position                    integer NOT NULL,
    CONSTRAINT maven_virtual_repository_upstreams_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_virtual_repository_upstreams_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_virtual_repository_upstreams_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_virtual_repository_upstreams_virtual_fkey
        FOREIGN KEY (maven_virtual_repository_id, namespace_id)
        REFERENCES maven_virtual_repositories (id, namespace_id) ON DELETE CASCADE,
    CONSTRAINT maven_virtual_repository_upstreams_upstream_fkey
        FOREIGN KEY (upstream_repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE NO ACTION
) PARTITION BY HASH (namespace_id);
ALTER TABLE maven_virtual_repository_upstreams
    ADD CONSTRAINT unique_mvru_ns_id_repository_id_position
    UNIQUE (namespace_id, maven_virtual_repository_id, position) DEFERRABLE INITIALLY DEFERRED;
CREATE UNIQUE INDEX maven_virtual_repository_upstreams_upstream_key
    ON maven_virtual_repository_upstreams (namespace_id, maven_virtual_repository_id, upstream_repository_id);
CREATE INDEX maven_virtual_repository_upstreams_upstream_idx
    ON maven_virtual_repository_upstreams (namespace_id, upstream_repository_id);
SELECT create_hash_partitions('maven_virtual_repository_upstreams');

-- maven_virtual_upstream_rules ------------------------------------------------
CREATE TABLE maven_virtual_upstream_rules (
    id                                   uuid     NOT NULL,
    namespace_id                         uuid     NOT NULL,
    maven_virtual_repository_upstream_id uuid     NOT NULL,
    rule_type                            smallint NOT NULL, -- enum.UpstreamRuleType: 0=allow, 1=deny
    pattern                              text     NOT NULL,
    target_field                         smallint NOT NULL, -- enum.MavenTargetField: 0=group_id, 1=artifact_id, 2=version
    CONSTRAINT maven_virtual_upstream_rules_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT maven_virtual_upstream_rules_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT maven_virtual_upstream_rules_rule_type_range CHECK (rule_type IN (0, 1)),
    CONSTRAINT maven_virtual_upstream_rules_pattern_length CHECK (char_length(pattern) <= 255),
    CONSTRAINT maven_virtual_upstream_rules_target_field_range CHECK (target_field IN (0, 1, 2)),
    CONSTRAINT maven_virtual_upstream_rules_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT maven_virtual_upstream_rules_upstream_fkey
        FOREIGN KEY (maven_virtual_repository_upstream_id, namespace_id)
        REFERENCES maven_virtual_repository_upstreams (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE INDEX maven_virtual_upstream_rules_upstream_idx
    ON maven_virtual_upstream_rules (namespace_id, maven_virtual_repository_upstream_id);
SELECT create_hash_partitions('maven_virtual_upstream_rules');

-- +goose Down
DROP TABLE IF EXISTS maven_virtual_upstream_rules;
DROP TABLE IF EXISTS maven_virtual_repository_upstreams;
DROP TABLE IF EXISTS maven_virtual_repositories;
