-- +goose Up
-- Namespace-level tables (docs/schema.md):
-- lifecycle_policy_settings, lifecycle_rules and namespace_encryption_keys.
-- The repository-level lifecycle overrides live with their format (00006-00008).

-- lifecycle_policy_settings ---------------------------------------------------
-- Namespace default lifecycle policy; one row per namespace.
CREATE TABLE lifecycle_policy_settings (
    id           uuid    NOT NULL,
    namespace_id uuid    NOT NULL,
    enabled      boolean NOT NULL,
    CONSTRAINT lifecycle_policy_settings_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT lifecycle_policy_settings_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT lifecycle_policy_settings_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id)
) PARTITION BY HASH (namespace_id);
CREATE UNIQUE INDEX lifecycle_policy_settings_namespace_id_key ON lifecycle_policy_settings (namespace_id);
SELECT create_hash_partitions('lifecycle_policy_settings');

-- lifecycle_rules -------------------------------------------------------------
-- rule_configuration is validated against a strict JSON schema in Go before it
-- is written (docs/schema.md: every jsonb column).
CREATE TABLE lifecycle_rules (
    id                           uuid     NOT NULL,
    namespace_id                 uuid     NOT NULL,
    lifecycle_policy_settings_id uuid     NOT NULL,
    rule_type                    smallint NOT NULL, -- enum.LifecycleRuleType: 0=keep_last_downloaded_at, 1=keep_last_n, 2=keep_regex
    rule_configuration           jsonb    NOT NULL,
    CONSTRAINT lifecycle_rules_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT lifecycle_rules_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT lifecycle_rules_rule_type_range CHECK (rule_type IN (0, 1, 2)),
    CONSTRAINT lifecycle_rules_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id),
    CONSTRAINT lifecycle_rules_settings_fkey FOREIGN KEY (lifecycle_policy_settings_id, namespace_id)
        REFERENCES lifecycle_policy_settings (id, namespace_id)
) PARTITION BY HASH (namespace_id);
CREATE INDEX lifecycle_rules_settings_idx ON lifecycle_rules (namespace_id, lifecycle_policy_settings_id);
SELECT create_hash_partitions('lifecycle_rules');

-- namespace_encryption_keys ---------------------------------------------------
-- One row per key-encryption key a namespace has held, wrapped by the
-- deployment root key. Superseded versions are deactivated, never deleted
-- (credential rows still resolve them through ns_key_id, ON DELETE RESTRICT).
-- Crypto-shred keeps the row as a tombstone: wrapped_key emptied to zero
-- length, active cleared, shredded_at set. Two row CHECKs keep that shape:
--   * a tombstone is never active;
--   * key material exists if and only if the row is not shredded.
-- "Any tombstone means the whole namespace is shredded" is enforced in Go.
CREATE TABLE namespace_encryption_keys (
    id           uuid        NOT NULL,
    namespace_id uuid        NOT NULL,
    version      integer     NOT NULL,
    wrapped_key  bytea       NOT NULL,
    root_key_uri text        NOT NULL,
    active       boolean     NOT NULL DEFAULT true,
    shredded_at  timestamptz NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT namespace_encryption_keys_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT namespace_encryption_keys_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT namespace_encryption_keys_version_positive CHECK (version >= 1),
    CONSTRAINT namespace_encryption_keys_root_key_uri_length CHECK (char_length(root_key_uri) <= 255),
    CONSTRAINT namespace_encryption_keys_shredded_not_active CHECK (shredded_at IS NULL OR NOT active),
    CONSTRAINT namespace_encryption_keys_material_iff_not_shredded
        CHECK ((octet_length(wrapped_key) > 0) = (shredded_at IS NULL)),
    CONSTRAINT namespace_encryption_keys_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id)
) PARTITION BY HASH (namespace_id);
-- Per-namespace version ordinal.
CREATE UNIQUE INDEX namespace_encryption_keys_namespace_id_version_key
    ON namespace_encryption_keys (namespace_id, version);
-- Exactly one active key per namespace; also the lookup of the wrapping key.
CREATE UNIQUE INDEX namespace_encryption_keys_one_active_key
    ON namespace_encryption_keys (namespace_id) WHERE active = true;
-- Read path: is this namespace shredded?
CREATE INDEX namespace_encryption_keys_shredded_idx
    ON namespace_encryption_keys (namespace_id) WHERE shredded_at IS NOT NULL;
-- Root-key rotation: live rows still wrapped under a root key (fans out to
-- all 64 partitions; background job only).
CREATE INDEX namespace_encryption_keys_root_key_uri_live_idx
    ON namespace_encryption_keys (root_key_uri) WHERE shredded_at IS NULL;
SELECT create_hash_partitions('namespace_encryption_keys');

-- +goose Down
DROP TABLE IF EXISTS namespace_encryption_keys;
DROP TABLE IF EXISTS lifecycle_rules;
DROP TABLE IF EXISTS lifecycle_policy_settings;
