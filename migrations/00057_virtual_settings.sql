-- +goose Up
-- Virtual repository settings beyond the ordered upstream list
-- (docs/virtual-repositories.md), for the three formats alike:
--
--   deploy_to_repository_id  the hosted upstream that receives writes sent
--                            to the virtual URL (npm publish, mvn deploy,
--                            OCI pushes); NULL refuses them. NO ACTION like
--                            the upstream reference: the deploy target is
--                            always one of the upstreams, whose deletion
--                            the store refuses first with a clear error.
--   reserved_patterns        name patterns never forwarded to remote
--                            upstreams, even when no hosted upstream has
--                            the name (internal names must not leak to a
--                            public registry). Bounded here; each pattern
--                            is validated (length, characters) on write.
--   settings_changed_at      bumped by every change of the virtual's
--                            settings, upstreams or rules, so a reader can
--                            tell whether what it resolved is current.

ALTER TABLE container_virtual_repositories
    ADD COLUMN deploy_to_repository_id uuid,
    ADD COLUMN reserved_patterns text[] NOT NULL DEFAULT '{}',
    ADD COLUMN settings_changed_at timestamptz NOT NULL DEFAULT now(),
    ADD CONSTRAINT container_virtual_repositories_reserved_patterns_max CHECK (cardinality(reserved_patterns) <= 50),
    ADD CONSTRAINT container_virtual_repositories_deploy_to_fkey FOREIGN KEY (deploy_to_repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE NO ACTION;

ALTER TABLE maven_virtual_repositories
    ADD COLUMN deploy_to_repository_id uuid,
    ADD COLUMN reserved_patterns text[] NOT NULL DEFAULT '{}',
    ADD COLUMN settings_changed_at timestamptz NOT NULL DEFAULT now(),
    ADD CONSTRAINT maven_virtual_repositories_reserved_patterns_max CHECK (cardinality(reserved_patterns) <= 50),
    ADD CONSTRAINT maven_virtual_repositories_deploy_to_fkey FOREIGN KEY (deploy_to_repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE NO ACTION;

ALTER TABLE npm_virtual_repositories
    ADD COLUMN deploy_to_repository_id uuid,
    ADD COLUMN reserved_patterns text[] NOT NULL DEFAULT '{}',
    ADD COLUMN settings_changed_at timestamptz NOT NULL DEFAULT now(),
    ADD CONSTRAINT npm_virtual_repositories_reserved_patterns_max CHECK (cardinality(reserved_patterns) <= 50),
    ADD CONSTRAINT npm_virtual_repositories_deploy_to_fkey FOREIGN KEY (deploy_to_repository_id, namespace_id)
        REFERENCES repositories (id, namespace_id) ON DELETE NO ACTION;

-- Partition-wise, like every key between tables partitioned alike (00037).
SELECT split_foreign_key('container_virtual_repositories', 'container_virtual_repositories_deploy_to_fkey');
SELECT split_foreign_key('maven_virtual_repositories', 'maven_virtual_repositories_deploy_to_fkey');
SELECT split_foreign_key('npm_virtual_repositories', 'npm_virtual_repositories_deploy_to_fkey');

-- +goose Down
-- Dropping the columns drops their keys (split or not) and checks.
ALTER TABLE npm_virtual_repositories
    DROP COLUMN settings_changed_at, DROP COLUMN reserved_patterns, DROP COLUMN deploy_to_repository_id;
ALTER TABLE maven_virtual_repositories
    DROP COLUMN settings_changed_at, DROP COLUMN reserved_patterns, DROP COLUMN deploy_to_repository_id;
ALTER TABLE container_virtual_repositories
    DROP COLUMN settings_changed_at, DROP COLUMN reserved_patterns, DROP COLUMN deploy_to_repository_id;
