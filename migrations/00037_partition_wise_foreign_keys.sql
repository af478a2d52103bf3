-- +goose NO TRANSACTION
-- +goose Up
-- Foreign keys between two tables hash-partitioned alike are declared
-- partition by partition: npm_files_p06 references npm_versions_p06, not
-- the partitioned npm_versions.
--
-- Why: PostgreSQL 15 checks a foreign key with a query against the
-- referenced table, planned again for every checked row when that table
-- is partitioned (a plan over all 64 partitions would be costlier than
-- planning with the value, so the custom plan always wins). Measured on
-- the npm publish path: 100-300 us of planning per check, five checks per
-- publish. A check against one partition, a plain table, is planned once
-- per connection and costs 2 us.
--
-- It enforces the same thing: when both tables are partitioned by
-- HASH(namespace_id) with the same 64 bounds (or HASH(sha256) for the blob
-- layer) and the key carries that column on both sides, a row and the row
-- it references always live in partitions with the same bound. Delete and
-- update actions, match type and deferrability are copied unchanged.
--
-- Keys whose two tables are partitioned on different columns (a format
-- row, by namespace, referencing a blob row, by sha256) stay declared on
-- the parents. migrations' TestPartitionWiseForeignKeys fails when a key
-- that could be split is declared on the parents.
--
-- NO TRANSACTION: each split runs in its own transaction, so no migration
-- holds the locks of every partition of every table at once (see 00006);
-- split_foreign_key is idempotent, so a migration cut short is rerun whole.

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION public.foreign_key_partition_pairs(k oid)
RETURNS TABLE (child_part regclass, parent_part regclass, remainder integer)
LANGUAGE sql STABLE
AS $$
    -- The partition pairs of key k when its two tables are hash-partitioned
    -- alike on a column the key maps one to the other; no rows otherwise.
    WITH key AS (
        SELECT c.conrelid, c.confrelid FROM pg_constraint c
        JOIN pg_partitioned_table cp ON cp.partrelid = c.conrelid
        JOIN pg_partitioned_table pp ON pp.partrelid = c.confrelid
        WHERE c.oid = k AND c.contype = 'f'
          AND cp.partstrat = 'h' AND pp.partstrat = 'h' AND cp.partnatts = 1 AND pp.partnatts = 1
          AND cp.partclass[0] = pp.partclass[0]
          AND array_position(c.conkey, cp.partattrs[0]) = array_position(c.confkey, pp.partattrs[0])
    ), parts AS (
        SELECT i.inhparent AS parent, i.inhrelid AS part, pg_get_expr(r.relpartbound, r.oid) AS bound
        FROM pg_inherits i JOIN pg_class r ON r.oid = i.inhrelid
        WHERE i.inhparent IN (SELECT conrelid FROM key UNION SELECT confrelid FROM key)
    ), pairs AS (
        SELECT c.part AS child_part, p.part AS parent_part,
               (regexp_match(c.bound, 'remainder (\d+)'))[1]::integer AS remainder
        FROM key
        JOIN parts c ON c.parent = key.conrelid
        JOIN parts p ON p.parent = key.confrelid AND p.bound = c.bound
    )
    -- Every partition of each side has its twin, or the key is not split.
    SELECT child_part::regclass, parent_part::regclass, remainder FROM pairs
    WHERE (SELECT count(*) FROM pairs) = (SELECT count(*) FROM parts p JOIN key ON p.parent = key.conrelid)
      AND (SELECT count(*) FROM pairs) = (SELECT count(*) FROM parts p JOIN key ON p.parent = key.confrelid)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION public.split_foreign_key(tbl regclass, fk name)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    k oid;
    def text;
    p record;
    n integer := 0;
BEGIN
    SELECT oid INTO k FROM pg_constraint
    WHERE conrelid = tbl AND conname = fk AND contype = 'f' AND conparentid = 0;
    IF k IS NULL THEN
        IF EXISTS (SELECT 1 FROM pg_constraint c JOIN pg_inherits i ON i.inhrelid = c.conrelid
                   WHERE i.inhparent = tbl AND c.contype = 'f' AND c.conparentid = 0 AND c.conname = fk || '_p00') THEN
            RETURN; -- split by an earlier run
        END IF;
        RAISE EXCEPTION 'split_foreign_key: % has no foreign key %', tbl, fk;
    END IF;
    IF length(fk) > 59 THEN
        RAISE EXCEPTION 'split_foreign_key: % is too long for a _pNN suffix', fk;
    END IF;
    def := pg_get_constraintdef(k);
    FOR p IN SELECT * FROM public.foreign_key_partition_pairs(k) ORDER BY remainder LOOP
        IF n = 0 THEN
            EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', tbl, fk);
        END IF;
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', p.child_part,
            fk || '_p' || lpad(p.remainder::text, 2, '0'),
            regexp_replace(def, 'REFERENCES [^(]+\(', 'REFERENCES ' || p.parent_part::text || '('));
        n := n + 1;
    END LOOP;
    IF n = 0 THEN
        RAISE EXCEPTION 'split_foreign_key: the tables of %.% are not partitioned alike', tbl, fk;
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION public.join_foreign_key(tbl regclass, fk name)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    def text;
    parent regclass;
    part record;
BEGIN
    SELECT pg_get_constraintdef(c.oid), i.inhparent::regclass INTO def, parent
    FROM pg_constraint c JOIN pg_inherits i ON i.inhrelid = c.confrelid
    JOIN pg_inherits ci ON ci.inhrelid = c.conrelid
    WHERE ci.inhparent = tbl AND c.contype = 'f' AND c.conname = fk || '_p00';
    IF def IS NULL THEN
        RETURN; -- not split
    END IF;
    FOR part IN SELECT k.conrelid::regclass AS rel, k.conname FROM pg_constraint k
             JOIN pg_inherits i ON i.inhrelid = k.conrelid
             WHERE i.inhparent = tbl AND k.contype = 'f' AND k.conname ~ ('^' || fk || '_p\d\d$') LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', part.rel, part.conname);
    END LOOP;
    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', tbl, fk,
        regexp_replace(def, 'REFERENCES [^(]+\(', 'REFERENCES ' || parent::text || '('));
END;
$$;
-- +goose StatementEnd

SELECT split_foreign_key('blob_storage_attachments', 'blob_storage_attachments_blob_fkey');
SELECT split_foreign_key('container_blobs', 'container_blobs_container_image_fkey');
SELECT split_foreign_key('container_images', 'container_images_container_repository_fkey');
SELECT split_foreign_key('container_manifest_relationships', 'container_manifest_relationships_child_fkey');
SELECT split_foreign_key('container_manifest_relationships', 'container_manifest_relationships_container_image_fkey');
SELECT split_foreign_key('container_manifest_relationships', 'container_manifest_relationships_parent_fkey');
SELECT split_foreign_key('container_manifests', 'container_manifests_container_image_fkey');
SELECT split_foreign_key('container_remote_blobs', 'container_remote_blobs_remote_image_fkey');
SELECT split_foreign_key('container_remote_images', 'container_remote_images_remote_repository_fkey');
SELECT split_foreign_key('container_remote_manifest_relationships', 'container_remote_manifest_relationships_child_fkey');
SELECT split_foreign_key('container_remote_manifest_relationships', 'container_remote_manifest_relationships_parent_fkey');
SELECT split_foreign_key('container_remote_manifest_relationships', 'container_remote_manifest_relationships_remote_image_fkey');
SELECT split_foreign_key('container_remote_manifests', 'container_remote_manifests_remote_image_fkey');
SELECT split_foreign_key('container_remote_repositories', 'container_remote_repositories_ns_key_fkey');
SELECT split_foreign_key('container_remote_repositories', 'container_remote_repositories_repository_fkey');
SELECT split_foreign_key('container_remote_tags', 'container_remote_tags_remote_image_fkey');
SELECT split_foreign_key('container_remote_tags', 'container_remote_tags_remote_manifest_fkey');
SELECT split_foreign_key('container_repositories', 'container_repositories_repository_fkey');
SELECT split_foreign_key('container_repository_lifecycle_policy_settings', 'container_repo_lifecycle_policy_settings_repository_fkey');
SELECT split_foreign_key('container_repository_lifecycle_rules', 'container_repo_lifecycle_rules_settings_fkey');
SELECT split_foreign_key('container_tags', 'container_tags_container_image_fkey');
SELECT split_foreign_key('container_tags', 'container_tags_container_manifest_fkey');
SELECT split_foreign_key('container_virtual_repositories', 'container_virtual_repositories_repository_fkey');
SELECT split_foreign_key('container_virtual_repository_upstreams', 'container_virtual_repository_upstreams_upstream_fkey');
SELECT split_foreign_key('container_virtual_repository_upstreams', 'container_virtual_repository_upstreams_virtual_fkey');
SELECT split_foreign_key('container_virtual_upstream_rules', 'container_virtual_upstream_rules_upstream_fkey');
SELECT split_foreign_key('lifecycle_rules', 'lifecycle_rules_settings_fkey');
SELECT split_foreign_key('maven_files', 'maven_files_maven_package_fkey');
SELECT split_foreign_key('maven_files', 'maven_files_maven_version_fkey');
SELECT split_foreign_key('maven_packages', 'maven_packages_maven_repository_fkey');
SELECT split_foreign_key('maven_remote_files', 'maven_remote_files_remote_package_fkey');
SELECT split_foreign_key('maven_remote_files', 'maven_remote_files_remote_version_fkey');
SELECT split_foreign_key('maven_remote_packages', 'maven_remote_packages_remote_repository_fkey');
SELECT split_foreign_key('maven_remote_repositories', 'maven_remote_repositories_ns_key_fkey');
SELECT split_foreign_key('maven_remote_repositories', 'maven_remote_repositories_repository_fkey');
SELECT split_foreign_key('maven_remote_versions', 'maven_remote_versions_remote_package_fkey');
SELECT split_foreign_key('maven_repositories', 'maven_repositories_repository_fkey');
SELECT split_foreign_key('maven_repository_lifecycle_policy_settings', 'maven_repo_lifecycle_policy_settings_repository_fkey');
SELECT split_foreign_key('maven_repository_lifecycle_rules', 'maven_repo_lifecycle_rules_settings_fkey');
SELECT split_foreign_key('maven_versions', 'maven_versions_maven_package_fkey');
SELECT split_foreign_key('maven_virtual_repositories', 'maven_virtual_repositories_repository_fkey');
SELECT split_foreign_key('maven_virtual_repository_upstreams', 'maven_virtual_repository_upstreams_upstream_fkey');
SELECT split_foreign_key('maven_virtual_repository_upstreams', 'maven_virtual_repository_upstreams_virtual_fkey');
SELECT split_foreign_key('maven_virtual_upstream_rules', 'maven_virtual_upstream_rules_upstream_fkey');
SELECT split_foreign_key('npm_files', 'npm_files_npm_version_fkey');
SELECT split_foreign_key('npm_metadata_files', 'npm_metadata_files_npm_package_fkey');
SELECT split_foreign_key('npm_packages', 'npm_packages_npm_repository_fkey');
SELECT split_foreign_key('npm_remote_files', 'npm_remote_files_remote_version_fkey');
SELECT split_foreign_key('npm_remote_metadata_files', 'npm_remote_metadata_files_remote_package_fkey');
SELECT split_foreign_key('npm_remote_packages', 'npm_remote_packages_remote_repository_fkey');
SELECT split_foreign_key('npm_remote_repositories', 'npm_remote_repositories_ns_key_fkey');
SELECT split_foreign_key('npm_remote_repositories', 'npm_remote_repositories_repository_fkey');
SELECT split_foreign_key('npm_remote_tags', 'npm_remote_tags_remote_metadata_file_fkey');
SELECT split_foreign_key('npm_remote_tags', 'npm_remote_tags_remote_package_fkey');
SELECT split_foreign_key('npm_remote_tags', 'npm_remote_tags_remote_version_fkey');
SELECT split_foreign_key('npm_remote_versions', 'npm_remote_versions_remote_package_fkey');
SELECT split_foreign_key('npm_repositories', 'npm_repositories_repository_fkey');
SELECT split_foreign_key('npm_repository_lifecycle_policy_settings', 'npm_repo_lifecycle_policy_settings_repository_fkey');
SELECT split_foreign_key('npm_repository_lifecycle_rules', 'npm_repo_lifecycle_rules_settings_fkey');
SELECT split_foreign_key('npm_tags', 'npm_tags_npm_package_fkey');
SELECT split_foreign_key('npm_tags', 'npm_tags_npm_version_fkey');
SELECT split_foreign_key('npm_versions', 'npm_versions_npm_package_fkey');
SELECT split_foreign_key('npm_virtual_repositories', 'npm_virtual_repositories_repository_fkey');
SELECT split_foreign_key('npm_virtual_repository_upstreams', 'npm_virtual_repository_upstreams_upstream_fkey');
SELECT split_foreign_key('npm_virtual_repository_upstreams', 'npm_virtual_repository_upstreams_virtual_fkey');
SELECT split_foreign_key('npm_virtual_upstream_rules', 'npm_virtual_upstream_rules_upstream_fkey');
SELECT split_foreign_key('repository_collection_repositories', 'repository_collection_repositories_collection_fkey');
SELECT split_foreign_key('repository_collection_repositories', 'repository_collection_repositories_repository_fkey');
SELECT split_foreign_key('upload_sessions', 'upload_sessions_repository_fkey');

-- +goose Down
SELECT join_foreign_key('upload_sessions', 'upload_sessions_repository_fkey');
SELECT join_foreign_key('repository_collection_repositories', 'repository_collection_repositories_repository_fkey');
SELECT join_foreign_key('repository_collection_repositories', 'repository_collection_repositories_collection_fkey');
SELECT join_foreign_key('npm_virtual_upstream_rules', 'npm_virtual_upstream_rules_upstream_fkey');
SELECT join_foreign_key('npm_virtual_repository_upstreams', 'npm_virtual_repository_upstreams_virtual_fkey');
SELECT join_foreign_key('npm_virtual_repository_upstreams', 'npm_virtual_repository_upstreams_upstream_fkey');
SELECT join_foreign_key('npm_virtual_repositories', 'npm_virtual_repositories_repository_fkey');
SELECT join_foreign_key('npm_versions', 'npm_versions_npm_package_fkey');
SELECT join_foreign_key('npm_tags', 'npm_tags_npm_version_fkey');
SELECT join_foreign_key('npm_tags', 'npm_tags_npm_package_fkey');
SELECT join_foreign_key('npm_repository_lifecycle_rules', 'npm_repo_lifecycle_rules_settings_fkey');
SELECT join_foreign_key('npm_repository_lifecycle_policy_settings', 'npm_repo_lifecycle_policy_settings_repository_fkey');
SELECT join_foreign_key('npm_repositories', 'npm_repositories_repository_fkey');
SELECT join_foreign_key('npm_remote_versions', 'npm_remote_versions_remote_package_fkey');
SELECT join_foreign_key('npm_remote_tags', 'npm_remote_tags_remote_version_fkey');
SELECT join_foreign_key('npm_remote_tags', 'npm_remote_tags_remote_package_fkey');
SELECT join_foreign_key('npm_remote_tags', 'npm_remote_tags_remote_metadata_file_fkey');
SELECT join_foreign_key('npm_remote_repositories', 'npm_remote_repositories_repository_fkey');
SELECT join_foreign_key('npm_remote_repositories', 'npm_remote_repositories_ns_key_fkey');
SELECT join_foreign_key('npm_remote_packages', 'npm_remote_packages_remote_repository_fkey');
SELECT join_foreign_key('npm_remote_metadata_files', 'npm_remote_metadata_files_remote_package_fkey');
SELECT join_foreign_key('npm_remote_files', 'npm_remote_files_remote_version_fkey');
SELECT join_foreign_key('npm_packages', 'npm_packages_npm_repository_fkey');
SELECT join_foreign_key('npm_metadata_files', 'npm_metadata_files_npm_package_fkey');
SELECT join_foreign_key('npm_files', 'npm_files_npm_version_fkey');
SELECT join_foreign_key('maven_virtual_upstream_rules', 'maven_virtual_upstream_rules_upstream_fkey');
SELECT join_foreign_key('maven_virtual_repository_upstreams', 'maven_virtual_repository_upstreams_virtual_fkey');
SELECT join_foreign_key('maven_virtual_repository_upstreams', 'maven_virtual_repository_upstreams_upstream_fkey');
SELECT join_foreign_key('maven_virtual_repositories', 'maven_virtual_repositories_repository_fkey');
SELECT join_foreign_key('maven_versions', 'maven_versions_maven_package_fkey');
SELECT join_foreign_key('maven_repository_lifecycle_rules', 'maven_repo_lifecycle_rules_settings_fkey');
SELECT join_foreign_key('maven_repository_lifecycle_policy_settings', 'maven_repo_lifecycle_policy_settings_repository_fkey');
SELECT join_foreign_key('maven_repositories', 'maven_repositories_repository_fkey');
SELECT join_foreign_key('maven_remote_versions', 'maven_remote_versions_remote_package_fkey');
SELECT join_foreign_key('maven_remote_repositories', 'maven_remote_repositories_repository_fkey');
SELECT join_foreign_key('maven_remote_repositories', 'maven_remote_repositories_ns_key_fkey');
SELECT join_foreign_key('maven_remote_packages', 'maven_remote_packages_remote_repository_fkey');
SELECT join_foreign_key('maven_remote_files', 'maven_remote_files_remote_version_fkey');
SELECT join_foreign_key('maven_remote_files', 'maven_remote_files_remote_package_fkey');
SELECT join_foreign_key('maven_packages', 'maven_packages_maven_repository_fkey');
SELECT join_foreign_key('maven_files', 'maven_files_maven_version_fkey');
SELECT join_foreign_key('maven_files', 'maven_files_maven_package_fkey');
SELECT join_foreign_key('lifecycle_rules', 'lifecycle_rules_settings_fkey');
SELECT join_foreign_key('container_virtual_upstream_rules', 'container_virtual_upstream_rules_upstream_fkey');
SELECT join_foreign_key('container_virtual_repository_upstreams', 'container_virtual_repository_upstreams_virtual_fkey');
SELECT join_foreign_key('container_virtual_repository_upstreams', 'container_virtual_repository_upstreams_upstream_fkey');
SELECT join_foreign_key('container_virtual_repositories', 'container_virtual_repositories_repository_fkey');
SELECT join_foreign_key('container_tags', 'container_tags_container_manifest_fkey');
SELECT join_foreign_key('container_tags', 'container_tags_container_image_fkey');
SELECT join_foreign_key('container_repository_lifecycle_rules', 'container_repo_lifecycle_rules_settings_fkey');
SELECT join_foreign_key('container_repository_lifecycle_policy_settings', 'container_repo_lifecycle_policy_settings_repository_fkey');
SELECT join_foreign_key('container_repositories', 'container_repositories_repository_fkey');
SELECT join_foreign_key('container_remote_tags', 'container_remote_tags_remote_manifest_fkey');
SELECT join_foreign_key('container_remote_tags', 'container_remote_tags_remote_image_fkey');
SELECT join_foreign_key('container_remote_repositories', 'container_remote_repositories_repository_fkey');
SELECT join_foreign_key('container_remote_repositories', 'container_remote_repositories_ns_key_fkey');
SELECT join_foreign_key('container_remote_manifests', 'container_remote_manifests_remote_image_fkey');
SELECT join_foreign_key('container_remote_manifest_relationships', 'container_remote_manifest_relationships_remote_image_fkey');
SELECT join_foreign_key('container_remote_manifest_relationships', 'container_remote_manifest_relationships_parent_fkey');
SELECT join_foreign_key('container_remote_manifest_relationships', 'container_remote_manifest_relationships_child_fkey');
SELECT join_foreign_key('container_remote_images', 'container_remote_images_remote_repository_fkey');
SELECT join_foreign_key('container_remote_blobs', 'container_remote_blobs_remote_image_fkey');
SELECT join_foreign_key('container_manifests', 'container_manifests_container_image_fkey');
SELECT join_foreign_key('container_manifest_relationships', 'container_manifest_relationships_parent_fkey');
SELECT join_foreign_key('container_manifest_relationships', 'container_manifest_relationships_container_image_fkey');
SELECT join_foreign_key('container_manifest_relationships', 'container_manifest_relationships_child_fkey');
SELECT join_foreign_key('container_images', 'container_images_container_repository_fkey');
SELECT join_foreign_key('container_blobs', 'container_blobs_container_image_fkey');
SELECT join_foreign_key('blob_storage_attachments', 'blob_storage_attachments_blob_fkey');
DROP FUNCTION IF EXISTS public.join_foreign_key(regclass, name);
DROP FUNCTION IF EXISTS public.split_foreign_key(regclass, name);
DROP FUNCTION IF EXISTS public.foreign_key_partition_pairs(oid);
