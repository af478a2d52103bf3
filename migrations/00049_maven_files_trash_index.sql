-- +goose Up
-- The expiry sweep and emptyTrash find a namespace's Maven files
-- soft-deleted on their own (old SNAPSHOT builds a lifecycle policy
-- removed) oldest first.
CREATE INDEX maven_files_trash_idx
    ON maven_files (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS maven_files_trash_idx;
