-- +goose Up
-- The expiry sweep finds a namespace's expired soft-deleted container blob
-- links (deleted through the OCI blob API) oldest first; the other
-- soft-deleted tables have this trash index since their creation.
CREATE INDEX container_blobs_trash_idx
    ON container_blobs (namespace_id, soft_deleted_at DESC) WHERE soft_deleted_at IS NOT NULL;

-- +goose Down
DROP INDEX IF EXISTS container_blobs_trash_idx;
