-- +goose Up
-- Container hosted manifest relationships and tags:
-- docs/schema.md, "Format tables".
-- Referential actions and blob references follow the rules written out in
-- 00006_container_hosted_repositories.sql (format child -> repositories
-- CASCADE; artifact rows NO ACTION; virtual upstream link CASCADE, upstream
-- reference NO ACTION; blob rows referenced by (namespace_id, blob_sha256)).

-- container_manifest_relationships --------------------------------------------
-- Manifest lists / OCI indexes: parent manifest -> child manifests.
CREATE TABLE container_manifest_relationships (
    id                           uuid NOT NULL,
    namespace_id                 uuid NOT NULL,
    container_image_id           uuid NOT NULL,
    parent_container_manifest_id uuid NOT NULL,
    child_container_manifest_id  uuid NOT NULL,
    CONSTRAINT container_manifest_relationships_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_manifest_relationships_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_manifest_relationships_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_manifest_relationships_container_image_fkey FOREIGN KEY (container_image_id, namespace_id)
        REFERENCES container_images (id, namespace_id),
    CONSTRAINT container_manifest_relationships_parent_fkey FOREIGN KEY (parent_container_manifest_id, namespace_id)
        REFERENCES container_manifests (id, namespace_id),
    CONSTRAINT container_manifest_relationships_child_fkey FOREIGN KEY (child_container_manifest_id, namespace_id)
        REFERENCES container_manifests (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_manifest_relationships_parent_child_key
    ON container_manifest_relationships (namespace_id, parent_container_manifest_id, child_container_manifest_id);
CREATE INDEX container_manifest_relationships_child_idx
    ON container_manifest_relationships (namespace_id, child_container_manifest_id);
CREATE INDEX container_manifest_relationships_image_idx
    ON container_manifest_relationships (namespace_id, container_image_id);
SELECT create_hash_partitions('container_manifest_relationships');

-- container_tags --------------------------------------------------------------
CREATE TABLE container_tags (
    id                    uuid NOT NULL,
    namespace_id          uuid NOT NULL,
    container_image_id    uuid NOT NULL,
    container_manifest_id uuid NOT NULL,
    name                  text NOT NULL,
    CONSTRAINT container_tags_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT container_tags_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT container_tags_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT container_tags_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT container_tags_container_image_fkey FOREIGN KEY (container_image_id, namespace_id)
        REFERENCES container_images (id, namespace_id),
    CONSTRAINT container_tags_container_manifest_fkey FOREIGN KEY (container_manifest_id, namespace_id)
        REFERENCES container_manifests (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX container_tags_image_name_key ON container_tags (namespace_id, container_image_id, name);
CREATE INDEX container_tags_manifest_idx ON container_tags (namespace_id, container_manifest_id);
SELECT create_hash_partitions('container_tags');

-- +goose Down
DROP TABLE IF EXISTS container_tags;
DROP TABLE IF EXISTS container_manifest_relationships;
