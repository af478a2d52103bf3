-- +goose Up
-- Lifecycle policies become runnable (docs/lifecycle-policies.md):
--   * a fourth rule type, keep_snapshot_builds (3), on the namespace rule
--     table and the three per-format override rule tables;
--   * min_age_days on the namespace settings and the three override
--     settings tables: nothing younger is ever deleted by a policy
--     (existing rows get the default, 1 day);
--   * soft_deleted_by on every row kind the trash lists (and on
--     maven_files, which a policy soft-deletes for old SNAPSHOT builds):
--     who or what moved the row to the trash ("policy:<id>", "admin:<user>",
--     "token:<id>"). Existing rows keep NULL: unknown.
--   * the keyset indexes the policy evaluation walks (one group, newest
--     first).

ALTER TABLE lifecycle_rules DROP CONSTRAINT lifecycle_rules_rule_type_range;
ALTER TABLE lifecycle_rules ADD CONSTRAINT lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2, 3));
ALTER TABLE container_repository_lifecycle_rules DROP CONSTRAINT container_repo_lifecycle_rules_rule_type_range;
ALTER TABLE container_repository_lifecycle_rules
    ADD CONSTRAINT container_repo_lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2, 3));
ALTER TABLE maven_repository_lifecycle_rules DROP CONSTRAINT maven_repo_lifecycle_rules_rule_type_range;
ALTER TABLE maven_repository_lifecycle_rules
    ADD CONSTRAINT maven_repo_lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2, 3));
ALTER TABLE npm_repository_lifecycle_rules DROP CONSTRAINT npm_repo_lifecycle_rules_rule_type_range;
ALTER TABLE npm_repository_lifecycle_rules
    ADD CONSTRAINT npm_repo_lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2, 3));

ALTER TABLE lifecycle_policy_settings ADD COLUMN min_age_days integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT lifecycle_policy_settings_min_age_days_range CHECK (min_age_days BETWEEN 0 AND 3650);
ALTER TABLE container_repository_lifecycle_policy_settings ADD COLUMN min_age_days integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT container_repo_lifecycle_policy_settings_min_age_days_range CHECK (min_age_days BETWEEN 0 AND 3650);
ALTER TABLE maven_repository_lifecycle_policy_settings ADD COLUMN min_age_days integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT maven_repo_lifecycle_policy_settings_min_age_days_range CHECK (min_age_days BETWEEN 0 AND 3650);
ALTER TABLE npm_repository_lifecycle_policy_settings ADD COLUMN min_age_days integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT npm_repo_lifecycle_policy_settings_min_age_days_range CHECK (min_age_days BETWEEN 0 AND 3650);

ALTER TABLE repositories ADD COLUMN soft_deleted_by text NULL,
    ADD CONSTRAINT repositories_soft_deleted_by_length CHECK (char_length(soft_deleted_by) <= 255);
ALTER TABLE container_images ADD COLUMN soft_deleted_by text NULL,
    ADD CONSTRAINT container_images_soft_deleted_by_length CHECK (char_length(soft_deleted_by) <= 255);
ALTER TABLE container_manifests ADD COLUMN soft_deleted_by text NULL,
    ADD CONSTRAINT container_manifests_soft_deleted_by_length CHECK (char_length(soft_deleted_by) <= 255);
ALTER TABLE npm_packages ADD COLUMN soft_deleted_by text NULL,
    ADD CONSTRAINT npm_packages_soft_deleted_by_length CHECK (char_length(soft_deleted_by) <= 255);
ALTER TABLE npm_versions ADD COLUMN soft_deleted_by text NULL,
    ADD CONSTRAINT npm_versions_soft_deleted_by_length CHECK (char_length(soft_deleted_by) <= 255);
ALTER TABLE maven_packages ADD COLUMN soft_deleted_by text NULL,
    ADD CONSTRAINT maven_packages_soft_deleted_by_length CHECK (char_length(soft_deleted_by) <= 255);
ALTER TABLE maven_versions ADD COLUMN soft_deleted_by text NULL,
    ADD CONSTRAINT maven_versions_soft_deleted_by_length CHECK (char_length(soft_deleted_by) <= 255);
ALTER TABLE maven_files ADD COLUMN soft_deleted_by text NULL,
    ADD CONSTRAINT maven_files_soft_deleted_by_length CHECK (char_length(soft_deleted_by) <= 255);

-- record_soft_deleted_by: every soft delete of these rows, whichever code
-- path makes it, records the transaction's actor (set by the store when
-- the transaction begins, from the request's principal or the policy run;
-- unset: NULL, unknown); a restore clears it. A trigger rather than a
-- column in each UPDATE, so no soft-delete path can forget it.
-- +goose StatementBegin
CREATE FUNCTION record_soft_deleted_by() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.soft_deleted_at IS NULL THEN
        NEW.soft_deleted_by := NULL;
    ELSIF OLD.soft_deleted_at IS NULL THEN
        NEW.soft_deleted_by := left(nullif(current_setting('artifact_registry.actor', true), ''), 255);
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER repositories_soft_deleted_by BEFORE UPDATE OF soft_deleted_at ON repositories
    FOR EACH ROW EXECUTE FUNCTION record_soft_deleted_by();
CREATE TRIGGER container_images_soft_deleted_by BEFORE UPDATE OF soft_deleted_at ON container_images
    FOR EACH ROW EXECUTE FUNCTION record_soft_deleted_by();
CREATE TRIGGER container_manifests_soft_deleted_by BEFORE UPDATE OF soft_deleted_at ON container_manifests
    FOR EACH ROW EXECUTE FUNCTION record_soft_deleted_by();
CREATE TRIGGER npm_packages_soft_deleted_by BEFORE UPDATE OF soft_deleted_at ON npm_packages
    FOR EACH ROW EXECUTE FUNCTION record_soft_deleted_by();
CREATE TRIGGER npm_versions_soft_deleted_by BEFORE UPDATE OF soft_deleted_at ON npm_versions
    FOR EACH ROW EXECUTE FUNCTION record_soft_deleted_by();
CREATE TRIGGER maven_packages_soft_deleted_by BEFORE UPDATE OF soft_deleted_at ON maven_packages
    FOR EACH ROW EXECUTE FUNCTION record_soft_deleted_by();
CREATE TRIGGER maven_versions_soft_deleted_by BEFORE UPDATE OF soft_deleted_at ON maven_versions
    FOR EACH ROW EXECUTE FUNCTION record_soft_deleted_by();
CREATE TRIGGER maven_files_soft_deleted_by BEFORE UPDATE OF soft_deleted_at ON maven_files
    FOR EACH ROW EXECUTE FUNCTION record_soft_deleted_by();

-- Keyset walks of the evaluation: one image's or package's active rows,
-- newest push first.
CREATE INDEX container_manifests_lifecycle_idx
    ON container_manifests (namespace_id, container_image_id, created_at DESC, id DESC) WHERE soft_deleted_at IS NULL;
CREATE INDEX npm_versions_lifecycle_idx
    ON npm_versions (namespace_id, npm_package_id, created_at DESC, id DESC) WHERE soft_deleted_at IS NULL;
CREATE INDEX maven_versions_lifecycle_idx
    ON maven_versions (namespace_id, maven_package_id, created_at DESC, id DESC) WHERE soft_deleted_at IS NULL;

-- +goose Down
DROP INDEX IF EXISTS maven_versions_lifecycle_idx;
DROP INDEX IF EXISTS npm_versions_lifecycle_idx;
DROP INDEX IF EXISTS container_manifests_lifecycle_idx;
DROP TRIGGER IF EXISTS maven_files_soft_deleted_by ON maven_files;
DROP TRIGGER IF EXISTS maven_versions_soft_deleted_by ON maven_versions;
DROP TRIGGER IF EXISTS maven_packages_soft_deleted_by ON maven_packages;
DROP TRIGGER IF EXISTS npm_versions_soft_deleted_by ON npm_versions;
DROP TRIGGER IF EXISTS npm_packages_soft_deleted_by ON npm_packages;
DROP TRIGGER IF EXISTS container_manifests_soft_deleted_by ON container_manifests;
DROP TRIGGER IF EXISTS container_images_soft_deleted_by ON container_images;
DROP TRIGGER IF EXISTS repositories_soft_deleted_by ON repositories;
DROP FUNCTION IF EXISTS record_soft_deleted_by();
ALTER TABLE maven_files DROP COLUMN IF EXISTS soft_deleted_by;
ALTER TABLE maven_versions DROP COLUMN IF EXISTS soft_deleted_by;
ALTER TABLE maven_packages DROP COLUMN IF EXISTS soft_deleted_by;
ALTER TABLE npm_versions DROP COLUMN IF EXISTS soft_deleted_by;
ALTER TABLE npm_packages DROP COLUMN IF EXISTS soft_deleted_by;
ALTER TABLE container_manifests DROP COLUMN IF EXISTS soft_deleted_by;
ALTER TABLE container_images DROP COLUMN IF EXISTS soft_deleted_by;
ALTER TABLE repositories DROP COLUMN IF EXISTS soft_deleted_by;
ALTER TABLE npm_repository_lifecycle_policy_settings DROP COLUMN IF EXISTS min_age_days;
ALTER TABLE maven_repository_lifecycle_policy_settings DROP COLUMN IF EXISTS min_age_days;
ALTER TABLE container_repository_lifecycle_policy_settings DROP COLUMN IF EXISTS min_age_days;
ALTER TABLE lifecycle_policy_settings DROP COLUMN IF EXISTS min_age_days;
DELETE FROM npm_repository_lifecycle_rules WHERE rule_type = 3;
DELETE FROM maven_repository_lifecycle_rules WHERE rule_type = 3;
DELETE FROM container_repository_lifecycle_rules WHERE rule_type = 3;
DELETE FROM lifecycle_rules WHERE rule_type = 3;
ALTER TABLE npm_repository_lifecycle_rules DROP CONSTRAINT npm_repo_lifecycle_rules_rule_type_range;
ALTER TABLE npm_repository_lifecycle_rules
    ADD CONSTRAINT npm_repo_lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2));
ALTER TABLE maven_repository_lifecycle_rules DROP CONSTRAINT maven_repo_lifecycle_rules_rule_type_range;
ALTER TABLE maven_repository_lifecycle_rules
    ADD CONSTRAINT maven_repo_lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2));
ALTER TABLE container_repository_lifecycle_rules DROP CONSTRAINT container_repo_lifecycle_rules_rule_type_range;
ALTER TABLE container_repository_lifecycle_rules
    ADD CONSTRAINT container_repo_lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2));
ALTER TABLE lifecycle_rules DROP CONSTRAINT lifecycle_rules_rule_type_range;
ALTER TABLE lifecycle_rules ADD CONSTRAINT lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2));
