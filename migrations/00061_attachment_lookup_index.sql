-- +goose Up
-- The lookup index of blob_storage_attachments ends with the attachment's
-- id, so finding one attachment descends straight to its row whichever of
-- the table's two indexes the planner picks.
--
-- Why: every format row's foreign key to its attachment is checked with
-- "id = $1 AND namespace_id = $2 AND sha256 = $3", planned anew for each
-- checked row (the table is partitioned). The primary key and the old
-- (namespace_id, sha256) index both estimate one row when the statistics
-- have not caught up with a digest's attachments, and the planner takes
-- the smaller index, then filters every attachment of the digest for the
-- id. A popular digest (a base layer used by every image of a namespace)
-- made each check read all of its attachments: 2 ms per check at 20,000
-- attachments of one digest, growing with them. With id in the index the
-- same check reads one index entry.
--
-- In one transaction like the other index migrations: building the index
-- holds writes to the table for its duration.
CREATE INDEX blob_storage_attachments_namespace_id_sha256_id_idx
    ON blob_storage_attachments (namespace_id, sha256, id);
DROP INDEX blob_storage_attachments_namespace_id_sha256_idx;

-- +goose Down
CREATE INDEX blob_storage_attachments_namespace_id_sha256_idx
    ON blob_storage_attachments (namespace_id, sha256);
DROP INDEX blob_storage_attachments_namespace_id_sha256_id_idx;
