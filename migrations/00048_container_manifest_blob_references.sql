-- +goose Up
-- What each container manifest references (docs/schema.md "Format
-- tables", manifest blob references): one row per manifest and distinct
-- config or layer digest, written by the push in the transaction that
-- inserts the manifest. A manifest's payload lives in object storage, so
-- without this table a purge could not tell which of the image's blob
-- links (container_blobs) only the purged manifests needed.
--
-- Keyed by (namespace_id, container_manifest_id, digest), no id: a row is
-- a fact about its manifest, never addressed on its own. The second index
-- answers "which manifests of image I reference digest D" (the purge).
CREATE TABLE container_manifest_blob_references (
    namespace_id          uuid  NOT NULL,
    container_image_id    uuid  NOT NULL,
    container_manifest_id uuid  NOT NULL,
    digest                bytea NOT NULL,
    CONSTRAINT container_manifest_blob_references_pkey PRIMARY KEY (namespace_id, container_manifest_id, digest),
    CONSTRAINT container_manifest_blob_references_digest_length CHECK (octet_length(digest) = 32),
    CONSTRAINT container_manifest_blob_references_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_manifest_blob_references_container_image_fkey FOREIGN KEY (container_image_id, namespace_id)
        REFERENCES container_images (id, namespace_id),
    CONSTRAINT container_manifest_blob_references_manifest_fkey FOREIGN KEY (container_manifest_id, namespace_id)
        REFERENCES container_manifests (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE INDEX container_manifest_blob_references_image_digest_idx
    ON container_manifest_blob_references (namespace_id, container_image_id, digest);
SELECT create_hash_partitions('container_manifest_blob_references');
-- Both tables are partitioned alike: the keys are checked partition by
-- partition (00037_partition_wise_foreign_keys.sql).
SELECT split_foreign_key('container_manifest_blob_references', 'container_manifest_blob_references_container_image_fkey');
SELECT split_foreign_key('container_manifest_blob_references', 'container_manifest_blob_references_manifest_fkey');

-- Manifests pushed before this table existed have no reference rows until
-- the backfill (container:record-blob-references) reads their payloads;
-- a purge frees no link of an image holding one. New manifests are
-- written recorded. The partial index finds what is left to backfill.
ALTER TABLE container_manifests ADD COLUMN blob_references_recorded boolean NOT NULL DEFAULT false;
CREATE INDEX container_manifests_unrecorded_idx
    ON container_manifests (namespace_id, id) WHERE NOT blob_references_recorded;

-- A blob link's age: a link younger than the grace window may belong to
-- a push whose manifest has not arrived yet, so a purge keeps it even
-- when no manifest references it. Existing links take the migration time
-- (the safe side: they become eligible one grace window later).
ALTER TABLE container_blobs ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

-- An image whose purge had to keep links it could not decide on (a
-- manifest not yet backfilled, a link inside the grace window): the
-- backfill job reviews it again later.
ALTER TABLE container_images ADD COLUMN unreferenced_links_pending boolean NOT NULL DEFAULT false;
CREATE INDEX container_images_unreferenced_links_pending_idx
    ON container_images (namespace_id, id) WHERE unreferenced_links_pending;

-- +goose Down
DROP INDEX IF EXISTS container_images_unreferenced_links_pending_idx;
ALTER TABLE container_images DROP COLUMN IF EXISTS unreferenced_links_pending;
ALTER TABLE container_blobs DROP COLUMN IF EXISTS created_at;
DROP INDEX IF EXISTS container_manifests_unrecorded_idx;
ALTER TABLE container_manifests DROP COLUMN IF EXISTS blob_references_recorded;
DROP TABLE IF EXISTS container_manifest_blob_references;
