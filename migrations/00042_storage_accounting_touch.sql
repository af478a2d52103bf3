-- +goose Up
-- Storage accounting, second part (the first is 00041; split so that one
-- migration's transaction does not lock every partition of every table
-- at once).
--
-- container_manifests_blob_sha256_idx: the repository-reference count of
-- the accounting triggers (accounting_repository_refs) finds a manifest by
-- digest; the other blob-referencing tables have such an index already
-- (container_blobs by digest, which equals its blob_sha256).
CREATE INDEX container_manifests_blob_sha256_idx ON container_manifests (namespace_id, blob_sha256);

-- accounting_touch ------------------------------------------------------------------
-- repositories.last_updated_at is the time of the last content change. The
-- insert and delete triggers of 00041 record it for new and purged rows;
-- these record it for soft delete and restore (an UPDATE of
-- soft_deleted_at) of the artifact rows and their parents, and for tag
-- changes of container images (a tag push moves a tag without writing a
-- manifest). Row-level with a WHEN clause: other UPDATEs of these tables
-- (counter folds, metadata) do not run the function.
-- +goose StatementBegin
CREATE FUNCTION accounting_touch() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    r record;
    repo uuid;
BEGIN
    IF TG_OP = 'DELETE' THEN
        r := OLD;
    ELSE
        r := NEW;
    END IF;
    IF TG_ARGV[0] IN ('container_manifests', 'container_tags') THEN
        SELECT cr.repository_id INTO repo FROM container_images i
        JOIN container_repositories cr ON cr.namespace_id = i.namespace_id AND cr.id = i.container_repository_id
        WHERE i.namespace_id = r.namespace_id AND i.id = r.container_image_id;
    ELSIF TG_ARGV[0] = 'container_images' THEN
        SELECT cr.repository_id INTO repo FROM container_repositories cr
        WHERE cr.namespace_id = r.namespace_id AND cr.id = r.container_repository_id;
    ELSIF TG_ARGV[0] = 'npm_versions' THEN
        SELECT nr.repository_id INTO repo FROM npm_packages p
        JOIN npm_repositories nr ON nr.namespace_id = p.namespace_id AND nr.id = p.npm_repository_id
        WHERE p.namespace_id = r.namespace_id AND p.id = r.npm_package_id;
    ELSIF TG_ARGV[0] = 'npm_packages' THEN
        SELECT nr.repository_id INTO repo FROM npm_repositories nr
        WHERE nr.namespace_id = r.namespace_id AND nr.id = r.npm_repository_id;
    ELSIF TG_ARGV[0] = 'maven_versions' THEN
        SELECT mr.repository_id INTO repo FROM maven_packages p
        JOIN maven_repositories mr ON mr.namespace_id = p.namespace_id AND mr.id = p.maven_repository_id
        WHERE p.namespace_id = r.namespace_id AND p.id = r.maven_package_id;
    ELSIF TG_ARGV[0] = 'maven_packages' THEN
        SELECT mr.repository_id INTO repo FROM maven_repositories mr
        WHERE mr.namespace_id = r.namespace_id AND mr.id = r.maven_repository_id;
    ELSE
        RAISE EXCEPTION 'accounting_touch: unexpected table %', TG_ARGV[0];
    END IF;
    IF repo IS NOT NULL THEN
        PERFORM accounting_repository_deltas(ARRAY[r.namespace_id], ARRAY[repo], '{0}', '{0}', true);
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_container_manifests_accounting_touch
    AFTER UPDATE OF soft_deleted_at ON container_manifests FOR EACH ROW
    WHEN (OLD.soft_deleted_at IS DISTINCT FROM NEW.soft_deleted_at)
    EXECUTE FUNCTION accounting_touch('container_manifests');
CREATE TRIGGER trg_container_images_accounting_touch
    AFTER UPDATE OF soft_deleted_at ON container_images FOR EACH ROW
    WHEN (OLD.soft_deleted_at IS DISTINCT FROM NEW.soft_deleted_at)
    EXECUTE FUNCTION accounting_touch('container_images');
CREATE TRIGGER trg_container_tags_accounting_touch
    AFTER INSERT OR DELETE OR UPDATE OF container_manifest_id ON container_tags FOR EACH ROW
    EXECUTE FUNCTION accounting_touch('container_tags');
CREATE TRIGGER trg_npm_versions_accounting_touch
    AFTER UPDATE OF soft_deleted_at ON npm_versions FOR EACH ROW
    WHEN (OLD.soft_deleted_at IS DISTINCT FROM NEW.soft_deleted_at)
    EXECUTE FUNCTION accounting_touch('npm_versions');
CREATE TRIGGER trg_npm_packages_accounting_touch
    AFTER UPDATE OF soft_deleted_at ON npm_packages FOR EACH ROW
    WHEN (OLD.soft_deleted_at IS DISTINCT FROM NEW.soft_deleted_at)
    EXECUTE FUNCTION accounting_touch('npm_packages');
CREATE TRIGGER trg_maven_versions_accounting_touch
    AFTER UPDATE OF soft_deleted_at ON maven_versions FOR EACH ROW
    WHEN (OLD.soft_deleted_at IS DISTINCT FROM NEW.soft_deleted_at)
    EXECUTE FUNCTION accounting_touch('maven_versions');
CREATE TRIGGER trg_maven_packages_accounting_touch
    AFTER UPDATE OF soft_deleted_at ON maven_packages FOR EACH ROW
    WHEN (OLD.soft_deleted_at IS DISTINCT FROM NEW.soft_deleted_at)
    EXECUTE FUNCTION accounting_touch('maven_packages');

-- +goose Down
DROP TRIGGER IF EXISTS trg_maven_packages_accounting_touch ON maven_packages;
DROP TRIGGER IF EXISTS trg_maven_versions_accounting_touch ON maven_versions;
DROP TRIGGER IF EXISTS trg_npm_packages_accounting_touch ON npm_packages;
DROP TRIGGER IF EXISTS trg_npm_versions_accounting_touch ON npm_versions;
DROP TRIGGER IF EXISTS trg_container_tags_accounting_touch ON container_tags;
DROP TRIGGER IF EXISTS trg_container_images_accounting_touch ON container_images;
DROP TRIGGER IF EXISTS trg_container_manifests_accounting_touch ON container_manifests;
DROP FUNCTION IF EXISTS accounting_touch();
DROP INDEX IF EXISTS container_manifests_blob_sha256_idx;
