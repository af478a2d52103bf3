-- +goose NO TRANSACTION
-- +goose Up
-- A format row that points at bytes no longer carries a foreign key of its
-- own to blob_storage_blobs; its key to the attachment carries it.
--
-- The guarantee is unchanged: a format row references its attachment by
-- (blob_storage_attachment_id, namespace_id, blob_sha256), all NOT NULL, and
-- every attachment references its blob by (namespace_id, sha256) (split
-- partition by partition in 00037). A row whose blob is missing therefore
-- already fails on its attachment, and a blob that a format row uses always
-- has that row's attachment, which refuses the blob's delete.
--
-- Why: the blob table is partitioned by sha256 and the format tables by
-- namespace_id, so these ten keys stay declared on the partitioned parents,
-- and PostgreSQL 15 plans their checks again for every checked row (a plan
-- over all 64 partitions never beats planning with the value). Every blob
-- row GC deleted ran all ten, about 0.3 ms of planning each: most of the
-- database's CPU in a GC drain. Every format row written ran one as well.
--
-- NO TRANSACTION: each drop locks its table's 64 partitions and the blob
-- table's; one transaction for all ten would hold them all at once.
ALTER TABLE container_blobs DROP CONSTRAINT IF EXISTS container_blobs_blob_fkey;
ALTER TABLE container_manifests DROP CONSTRAINT IF EXISTS container_manifests_blob_fkey;
ALTER TABLE container_remote_blobs DROP CONSTRAINT IF EXISTS container_remote_blobs_blob_fkey;
ALTER TABLE container_remote_manifests DROP CONSTRAINT IF EXISTS container_remote_manifests_blob_fkey;
ALTER TABLE maven_files DROP CONSTRAINT IF EXISTS maven_files_blob_fkey;
ALTER TABLE maven_remote_files DROP CONSTRAINT IF EXISTS maven_remote_files_blob_fkey;
ALTER TABLE npm_files DROP CONSTRAINT IF EXISTS npm_files_blob_fkey;
ALTER TABLE npm_metadata_files DROP CONSTRAINT IF EXISTS npm_metadata_files_blob_fkey;
ALTER TABLE npm_remote_files DROP CONSTRAINT IF EXISTS npm_remote_files_blob_fkey;
ALTER TABLE npm_remote_metadata_files DROP CONSTRAINT IF EXISTS npm_remote_metadata_files_blob_fkey;

-- +goose Down
-- Each statement drops and adds, so a Down cut short is rerun whole.
ALTER TABLE container_blobs DROP CONSTRAINT IF EXISTS container_blobs_blob_fkey,
    ADD CONSTRAINT container_blobs_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE container_manifests DROP CONSTRAINT IF EXISTS container_manifests_blob_fkey,
    ADD CONSTRAINT container_manifests_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE container_remote_blobs DROP CONSTRAINT IF EXISTS container_remote_blobs_blob_fkey,
    ADD CONSTRAINT container_remote_blobs_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE container_remote_manifests DROP CONSTRAINT IF EXISTS container_remote_manifests_blob_fkey,
    ADD CONSTRAINT container_remote_manifests_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE maven_files DROP CONSTRAINT IF EXISTS maven_files_blob_fkey,
    ADD CONSTRAINT maven_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE maven_remote_files DROP CONSTRAINT IF EXISTS maven_remote_files_blob_fkey,
    ADD CONSTRAINT maven_remote_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE npm_files DROP CONSTRAINT IF EXISTS npm_files_blob_fkey,
    ADD CONSTRAINT npm_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE npm_metadata_files DROP CONSTRAINT IF EXISTS npm_metadata_files_blob_fkey,
    ADD CONSTRAINT npm_metadata_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE npm_remote_files DROP CONSTRAINT IF EXISTS npm_remote_files_blob_fkey,
    ADD CONSTRAINT npm_remote_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
ALTER TABLE npm_remote_metadata_files DROP CONSTRAINT IF EXISTS npm_remote_metadata_files_blob_fkey,
    ADD CONSTRAINT npm_remote_metadata_files_blob_fkey FOREIGN KEY (namespace_id, blob_sha256) REFERENCES blob_storage_blobs (namespace_id, sha256);
