-- +goose Up
-- Migration from an existing registry:2 (docs/registry2-migration.md): the inventory
-- of legacy repositories, what pass 1 imported for each, and the operator
-- controls of the migration service.
--
-- These tables are the migration's own bookkeeping, not tenant data: the
-- migration service reads legacy_repositories across every namespace ("next
-- by priority"), and a legacy path is unique across the whole legacy
-- registry. So legacy_repositories carries namespace_id (the mapping target)
-- but is a plain table: the third exception of the partitioning invariant
-- (migrations catalog test). repository_id has no foreign key: a migrated
-- repository may later be purged, and its inventory row stays as history.

-- legacy_repositories ---------------------------------------------------------
--   legacy_path       repository name in the legacy registry (nested names
--                     allowed: a/b/c).
--   namespace_id,     where the mapping rules put it; repository_id is set
--   repository_name,  once pass 1 created or found the hosted container
--   image_name        repository.
--   status            enum.LegacyStatus: 0=pending, 1=pre_importing,
--                     2=pre_imported, 3=importing (the read-only window),
--                     4=migrated, 5=failed, 6=skipped.
--   lease_expires_at  a claimed pass (1 or 3) whose worker died is claimable
--                     again after this.
--   time_limit_exceeded_at  the last final pass that ran over the limit.
CREATE TABLE legacy_repositories (
    id                     uuid        NOT NULL,
    legacy_path            text        NOT NULL,
    namespace_id           uuid        NOT NULL,
    repository_id          uuid        NULL,
    repository_name        text        NOT NULL,
    image_name             text        NOT NULL,
    tag_count              integer     NOT NULL DEFAULT 0,
    priority               integer     NOT NULL DEFAULT 0,
    status                 smallint    NOT NULL DEFAULT 0,
    pre_import_started_at  timestamptz NULL,
    pre_import_finished_at timestamptz NULL,
    import_started_at      timestamptz NULL,
    import_finished_at     timestamptz NULL,
    lease_expires_at       timestamptz NULL,
    time_limit_exceeded_at timestamptz NULL,
    attempts               integer     NOT NULL DEFAULT 0,
    last_error             text        NULL,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT legacy_repositories_pkey PRIMARY KEY (id),
    CONSTRAINT legacy_repositories_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT legacy_repositories_legacy_path_length CHECK (char_length(legacy_path) BETWEEN 1 AND 1024),
    CONSTRAINT legacy_repositories_repository_name_length CHECK (char_length(repository_name) BETWEEN 1 AND 255),
    CONSTRAINT legacy_repositories_image_name_length CHECK (char_length(image_name) BETWEEN 1 AND 255),
    CONSTRAINT legacy_repositories_last_error_length CHECK (char_length(last_error) <= 4096),
    CONSTRAINT legacy_repositories_status_range CHECK (status IN (0, 1, 2, 3, 4, 5, 6)),
    CONSTRAINT legacy_repositories_tag_count_nonnegative CHECK (tag_count >= 0),
    CONSTRAINT legacy_repositories_attempts_nonnegative CHECK (attempts >= 0),
    CONSTRAINT legacy_repositories_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id)
);
CREATE UNIQUE INDEX legacy_repositories_legacy_path_key ON legacy_repositories (legacy_path);
-- Next by priority: the claim of each pass reads one status, highest
-- priority first, oldest id first (keyset-stable).
CREATE INDEX legacy_repositories_next_idx ON legacy_repositories (status, priority DESC, id);
-- A target (namespace, repository, image) is fed by one legacy path only.
CREATE UNIQUE INDEX legacy_repositories_target_key
    ON legacy_repositories (namespace_id, repository_name, image_name);
-- Pass-duration and progress reads over the finished passes.
CREATE INDEX legacy_repositories_import_finished_at_idx
    ON legacy_repositories (import_finished_at) WHERE import_finished_at IS NOT NULL;

-- legacy_imported_manifests ---------------------------------------------------
-- Every manifest pass 1 (or the copy phase of pass 2) stored for a legacy
-- repository, so pass 2 can detach those whose tags disappeared in the
-- legacy registry meanwhile. digest is the raw sha256.
CREATE TABLE legacy_imported_manifests (
    legacy_repository_id uuid        NOT NULL,
    digest               bytea       NOT NULL,
    media_type           text        NOT NULL,
    imported_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT legacy_imported_manifests_pkey PRIMARY KEY (legacy_repository_id, digest),
    CONSTRAINT legacy_imported_manifests_digest_length CHECK (octet_length(digest) = 32),
    CONSTRAINT legacy_imported_manifests_media_type_length CHECK (char_length(media_type) <= 255),
    CONSTRAINT legacy_imported_manifests_legacy_repository_fkey FOREIGN KEY (legacy_repository_id)
        REFERENCES legacy_repositories (id)
);

-- legacy_migration_controls ---------------------------------------------------
-- The operator settings of the migration service, one row.
--   paused                  the service claims nothing while true.
--   concurrency             repositories migrated at once.
--   cadence                 pause between two claims of one worker.
--   pre_import_skip_recent  a repository pre-imported more recently than
--                           this is not pre-imported again.
--   final_time_limit        hard limit of one final pass (the read-only
--                           window); over it the pass aborts and changes
--                           nothing.
CREATE TABLE legacy_migration_controls (
    singleton              boolean     NOT NULL DEFAULT true,
    paused                 boolean     NOT NULL DEFAULT false,
    concurrency            integer     NOT NULL DEFAULT 1,
    cadence                interval    NOT NULL DEFAULT '1 second',
    pre_import_skip_recent interval    NOT NULL DEFAULT '1 hour',
    final_time_limit       interval    NOT NULL DEFAULT '5 minutes',
    changed_by             text        NULL,
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT legacy_migration_controls_pkey PRIMARY KEY (singleton),
    CONSTRAINT legacy_migration_controls_one_row CHECK (singleton),
    CONSTRAINT legacy_migration_controls_concurrency_range CHECK (concurrency BETWEEN 1 AND 64),
    CONSTRAINT legacy_migration_controls_cadence_nonnegative CHECK (cadence >= interval '0'),
    CONSTRAINT legacy_migration_controls_skip_recent_nonnegative CHECK (pre_import_skip_recent >= interval '0'),
    CONSTRAINT legacy_migration_controls_final_time_limit_positive CHECK (final_time_limit > interval '0'),
    CONSTRAINT legacy_migration_controls_changed_by_length CHECK (char_length(changed_by) <= 255)
);
INSERT INTO legacy_migration_controls (singleton) VALUES (true);

-- +goose Down
DROP TABLE IF EXISTS legacy_migration_controls;
DROP TABLE IF EXISTS legacy_imported_manifests;
DROP TABLE IF EXISTS legacy_repositories;
