-- +goose Up
-- What the container pull-through cache needs besides the remote tables of
-- 00009-00011 (docs/remote-repositories.md):
--
--   * container_remote_repositories: the last upstream error (shown with
--     the health; never a URL or a credential, the upstream layer strips
--     them), settings_changed_at (bumped by every change of the URL, the
--     credentials or the cache validity: each instance keys its upstream
--     client by it, so a change reaches every instance on its next
--     request), the buffered cache_hits / cache_misses behind the hit
--     ratio (counter_deltas target 13, fields 10 and 11), and a range for
--     cache_validity_hours (0: revalidate every tag request; at most a
--     year).
--   * container_remote_images: created_at (when it was first cached) and
--     the keep-last-downloaded index gc:cache-evict walks, the mirror of
--     container_images_last_downloaded_at_idx.
--   * container_remote_manifest_children: the child digests of each cached
--     index or manifest list. Children are fetched lazily, so the child
--     row usually arrives after its index: this table tells the child's
--     cache fill which cached indexes list it, so that it can record the
--     relationship and add its size to theirs (container_remote_manifests
--     .size converges as children arrive). Keyed like
--     container_manifest_blob_references (no id: a fact about its index).

ALTER TABLE container_remote_repositories
    ADD COLUMN last_health_error text NULL,
    ADD COLUMN settings_changed_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN cache_hits bigint NOT NULL DEFAULT 0,
    ADD COLUMN cache_misses bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT container_remote_repositories_last_health_error_length CHECK (char_length(last_health_error) <= 1024),
    ADD CONSTRAINT container_remote_repositories_cache_validity_hours_range CHECK (cache_validity_hours BETWEEN 0 AND 8760);

ALTER TABLE container_remote_images ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX container_remote_images_last_downloaded_at_idx
    ON container_remote_images (namespace_id, container_remote_repository_id, last_downloaded_at NULLS FIRST)
    WHERE soft_deleted_at IS NULL;

CREATE TABLE container_remote_manifest_children (
    namespace_id                 uuid  NOT NULL,
    container_remote_image_id    uuid  NOT NULL,
    container_remote_manifest_id uuid  NOT NULL,
    digest                       bytea NOT NULL,
    CONSTRAINT container_remote_manifest_children_pkey PRIMARY KEY (namespace_id, container_remote_manifest_id, digest),
    CONSTRAINT container_remote_manifest_children_digest_length CHECK (octet_length(digest) = 32),
    CONSTRAINT container_remote_manifest_children_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_remote_manifest_children_remote_image_fkey FOREIGN KEY (container_remote_image_id, namespace_id)
        REFERENCES container_remote_images (id, namespace_id),
    CONSTRAINT container_remote_manifest_children_remote_manifest_fkey FOREIGN KEY (container_remote_manifest_id, namespace_id)
        REFERENCES container_remote_manifests (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE INDEX container_remote_manifest_children_image_digest_idx
    ON container_remote_manifest_children (namespace_id, container_remote_image_id, digest);
SELECT create_hash_partitions('container_remote_manifest_children');
SELECT split_foreign_key('container_remote_manifest_children', 'container_remote_manifest_children_remote_image_fkey');
SELECT split_foreign_key('container_remote_manifest_children', 'container_remote_manifest_children_remote_manifest_fkey');

-- counter_deltas: target 13 is container_remote_repositories, with the
-- counters cache_hits (field 10) and cache_misses (field 11).
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_range CHECK (target BETWEEN 0 AND 13);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_field_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_field_range CHECK (field BETWEEN 0 AND 11);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_field_valid;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
    CASE target
        WHEN 0  THEN field IN (0, 1, 2, 9) -- repository: artifacts_count, downloads_count, size_bytes, last_updated_at
        WHEN 1  THEN field IN (5, 6)       -- namespace_statistics: deduplicated_size_bytes, components_count
        WHEN 2  THEN field = 7             -- container_image: last_downloaded_at
        WHEN 3  THEN field = 7             -- container_remote_image: last_downloaded_at
        WHEN 4  THEN field = 7             -- maven_package: last_downloaded_at
        WHEN 5  THEN field IN (2, 7)       -- maven_version: size_bytes, last_downloaded_at
        WHEN 6  THEN field = 7             -- maven_remote_package: last_downloaded_at
        WHEN 7  THEN field IN (2, 7)       -- maven_remote_version: size_bytes, last_downloaded_at
        WHEN 8  THEN field IN (3, 4, 7)    -- npm_package: versions_count, tags_count, last_downloaded_at
        WHEN 9  THEN field IN (2, 7)       -- npm_version: size_bytes, last_downloaded_at
        WHEN 10 THEN field = 7             -- npm_remote_package: last_downloaded_at
        WHEN 11 THEN field IN (2, 7)       -- npm_remote_version: size_bytes, last_downloaded_at
        WHEN 12 THEN field = 8             -- access_token: last_used_at
        WHEN 13 THEN field IN (10, 11)     -- container_remote_repository: cache_hits, cache_misses
        ELSE false
    END);

-- +goose Down
DELETE FROM counter_deltas WHERE target = 13 OR field IN (10, 11);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_field_valid;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_field_valid CHECK (
    CASE target
        WHEN 0  THEN field IN (0, 1, 2, 9)
        WHEN 1  THEN field IN (5, 6)
        WHEN 2  THEN field = 7
        WHEN 3  THEN field = 7
        WHEN 4  THEN field = 7
        WHEN 5  THEN field IN (2, 7)
        WHEN 6  THEN field = 7
        WHEN 7  THEN field IN (2, 7)
        WHEN 8  THEN field IN (3, 4, 7)
        WHEN 9  THEN field IN (2, 7)
        WHEN 10 THEN field = 7
        WHEN 11 THEN field IN (2, 7)
        WHEN 12 THEN field = 8
        ELSE false
    END);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_field_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_field_range CHECK (field BETWEEN 0 AND 9);
ALTER TABLE counter_deltas DROP CONSTRAINT counter_deltas_target_range;
ALTER TABLE counter_deltas ADD CONSTRAINT counter_deltas_target_range CHECK (target BETWEEN 0 AND 12);
DROP TABLE IF EXISTS container_remote_manifest_children;
DROP INDEX IF EXISTS container_remote_images_last_downloaded_at_idx;
ALTER TABLE container_remote_images DROP COLUMN IF EXISTS created_at;
ALTER TABLE container_remote_repositories
    DROP CONSTRAINT IF EXISTS container_remote_repositories_cache_validity_hours_range,
    DROP CONSTRAINT IF EXISTS container_remote_repositories_last_health_error_length,
    DROP COLUMN IF EXISTS cache_misses,
    DROP COLUMN IF EXISTS cache_hits,
    DROP COLUMN IF EXISTS settings_changed_at,
    DROP COLUMN IF EXISTS last_health_error;
