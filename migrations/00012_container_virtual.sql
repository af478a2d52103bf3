-- +goose Up
-- Container virtual repositories, their ordered upstreams and upstream rules:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- container_virtual_repositories ----------------------------------------------
CREATE TABLE container_virtual_repositories (
    id            uuid NOT NULL,
    namespace_id  uuid NOT NULL,
    repository_id uuid NOT NULL,
    CONSTRAINT container_virtual_repositories_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_virtual_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_virtual_repositories_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id) ON DELETE NO ACTION,
    CONSTRAINT container_virtual_repositories_repository_fkey FOREIGN KEY (repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_virtual_repositories_namespace_id_repository_id_key
    ON container_virtual_repositories (namespace_id, repository_id);
SELECT create_hash_partitions('container_virtual_repositories');

-- container_virtual_repository_upstreams --------------------------------------
-- Ordered upstream list, 1-based and gapless (CHECK position >= 1). The
-- composite FK keeps the upstream in the same namespace.
CREATE TABLE container_virtual_repository_upstreams (
    id                              uuid    NOT NULL,
    namespace_id                    uuid    NOT NULL,
    container_virtual_repository_id uuid    NOT NULL,
    upstream_repository_id          uuid    NOT NULL,
    position                        integer NOT NULL,
    CONSTRAINT container_virtual_repository_upstreams_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_virtual_repository_upstreams_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_virtual_repository_upstreams_position_min CHECK (position >= 1),
    CONSTRAINT container_virtual_repository_upstreams_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id) ON DELETE NO ACTION,
    CONSTRAINT container_virtual_repository_upstreams_virtual_fkey
        FOREIGN KEY (container_virtual_repository_id, namespace_id)
        REFERENCES container_virtual_repositories (id, namespace_id) ON DELETE CASCADE,
    CONSTRAINT container_virtual_repository_upstreams_upstream_fkey
        FOREIGN KEY (upstream_repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE NO ACTION
) PARTITION BY HASH (namespace_id);
-- Deferrable so positions can be renumbered inside one transaction. A
-- constraint, not an index: DEFERRABLE is a constraint attribute. Not usable as
-- an ON CONFLICT arbiter, so position writes are UPDATE then INSERT.
ALTER TABLE container_virtual_repository_upstreams
    ADD CONSTRAINT unique_cvru_ns_id_repository_id_position
    UNIQUE (namespace_id, container_virtual_repository_id, position) DEFERRABLE INITIALLY DEFERRED;
-- The same upstream is never added twice to one virtual repository.
CREATE UNIQUE INDEX container_virtual_repository_upstreams_upstream_key
    ON container_virtual_repository_upstreams (namespace_id, container_virtual_repository_id, upstream_repository_id);
-- Reverse lookup: which virtual repositories list this repository (read by
-- the NO ACTION guard and the association surface).
CREATE INDEX container_virtual_repository_upstreams_upstream_idx
    ON container_virtual_repository_upstreams (namespace_id, upstream_repository_id);
SELECT create_hash_partitions('container_virtual_repository_upstreams');

-- container_virtual_upstream_rules --------------------------------------------
-- Allow/deny wildcard rules per upstream reference; enums and pattern length
-- are rejected at write time.
CREATE TABLE container_virtual_upstream_rules (
    id                                       uuid     NOT NULL,
    namespace_id                             uuid     NOT NULL,
    container_virtual_repository_upstream_id uuid     NOT NULL,
    rule_type                                smallint NOT NULL, -- enum.UpstreamRuleType: 0=allow, 1=deny
    pattern                                  text     NOT NULL,
    target_field                             smallint NOT NULL, -- enum.ContainerTargetField: 0=image, 1=tag
    CONSTRAINT container_virtual_upstream_rules_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_virtual_upstream_rules_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_virtual_upstream_rules_rule_type_range CHECK (rule_type IN (0, 1)),
    CONSTRAINT container_virtual_upstream_rules_pattern_length CHECK (char_length(pattern) <= 255),
    CONSTRAINT container_virtual_upstream_rules_target_field_range CHECK (target_field IN (0, 1)),
    CONSTRAINT container_virtual_upstream_rules_namespace_id_fkey
        FOREIGN KEY (namespace_id) REFERENCES namespaces (id) ON DELETE NO ACTION,
    CONSTRAINT container_virtual_upstream_rules_upstream_fkey
        FOREIGN KEY (container_virtual_repository_upstream_id, namespace_id)
        REFERENCES container_virtual_repository_upstreams (id, namespace_id) ON DELETE CASCADE
) PARTITION BY HASH (namespace_id);
CREATE INDEX container_virtual_upstream_rules_upstream_idx
    ON container_virtual_upstream_rules (namespace_id, container_virtual_repository_upstream_id);
SELECT create_hash_partitions('container_virtual_upstream_rules');

-- +goose Down
DROP TABLE IF EXISTS container_virtual_upstream_rules;
DROP TABLE IF EXISTS container_virtual_repository_upstreams;
DROP TABLE IF EXISTS container_virtual_repositories;
