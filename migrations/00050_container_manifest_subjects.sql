-- +goose Up
-- The OCI subject of container manifests (docs/schema.md "Format
-- tables", manifest subjects). A manifest pushed with a subject descriptor
-- (a signature, SBOM or attestation attached with `oras attach`, cosign,
-- buildx) refers to the manifest it describes: subject_digest is that
-- digest, artifact_type what the referrers API reports for the manifest
-- (its artifactType, else its config media type). The push sets both and
-- subject_recorded in the transaction that inserts the row.
--
-- The referrers API (GET /v2/<name>/referrers/<digest>) and GraphQL's
-- ContainerManifest.referrers look referrers up in the image with
-- container_manifests_subject_idx instead of reading the payload of every
-- OCI manifest of the image. The index is partial: most manifests have no
-- subject, and only active referrers are listed.
--
-- Existing rows are not filled in here: a manifest's payload is an object
-- in object storage, which SQL cannot read. They start with
-- subject_recorded = false (ADD COLUMN with a constant default changes no
-- row) and the gc:record-manifest-subjects job reads their payloads in
-- batches, one transaction per batch, and records them; Docker manifests,
-- which cannot carry a subject, are recorded without a read. Until a row is
-- recorded, the referrers API reads its payload as before: the second
-- index finds, per image, the rows still to read, and is empty once the
-- backfill is done.
--
-- The two CHECKs scan the table once to validate (every existing value is
-- NULL); nothing is rewritten.
ALTER TABLE container_manifests
    ADD COLUMN subject_digest   bytea   NULL,
    ADD COLUMN artifact_type    text    NULL,
    ADD COLUMN subject_recorded boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT container_manifests_subject_digest_length CHECK (octet_length(subject_digest) = 32),
    ADD CONSTRAINT container_manifests_artifact_type_length CHECK (char_length(artifact_type) <= 255);

-- Referrers of a digest in an image, by digest (the order both APIs list).
CREATE INDEX container_manifests_subject_idx
    ON container_manifests (namespace_id, container_image_id, subject_digest, digest)
    WHERE subject_digest IS NOT NULL AND soft_deleted_at IS NULL;

-- Rows whose subject is not recorded yet: per image for the referrers API,
-- in (image, id) order for the backfill.
CREATE INDEX container_manifests_subject_unrecorded_idx
    ON container_manifests (namespace_id, container_image_id, id) WHERE NOT subject_recorded;

-- +goose Down
DROP INDEX IF EXISTS container_manifests_subject_unrecorded_idx;
DROP INDEX IF EXISTS container_manifests_subject_idx;
ALTER TABLE container_manifests
    DROP CONSTRAINT IF EXISTS container_manifests_artifact_type_length,
    DROP CONSTRAINT IF EXISTS container_manifests_subject_digest_length,
    DROP COLUMN IF EXISTS subject_recorded,
    DROP COLUMN IF EXISTS artifact_type,
    DROP COLUMN IF EXISTS subject_digest;
