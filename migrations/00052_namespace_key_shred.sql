-- +goose Up
-- Crypto-shred on namespace purge (docs/security/upstream-credentials.md).
-- Setting namespaces.purged_at turns every key row of the namespace into the
-- tombstone the CHECKs of namespace_encryption_keys describe (wrapped_key
-- emptied, active cleared, shredded_at set), in the transaction that purges
-- the namespace, whatever path sets purged_at. The credential rows keep their
-- ciphertext and ns_key_id (the ON DELETE RESTRICT key still stands), but no
-- key can unwrap their data keys any more. purged_at is one-way, so a
-- shredded namespace never gets a key again; store/credentials refuses to
-- create one in a namespace that is purged or holds a tombstone.
-- +goose StatementBegin
CREATE FUNCTION shred_namespace_encryption_keys() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE namespace_encryption_keys
       SET wrapped_key = '\x'::bytea, active = false, shredded_at = now()
     WHERE namespace_id = NEW.id AND shredded_at IS NULL;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER namespaces_purge_shreds_keys
    AFTER UPDATE OF purged_at ON namespaces
    FOR EACH ROW WHEN (OLD.purged_at IS NULL AND NEW.purged_at IS NOT NULL)
    EXECUTE FUNCTION shred_namespace_encryption_keys();
-- Namespaces purged before this migration lose their keys now.
UPDATE namespace_encryption_keys k
   SET wrapped_key = '\x'::bytea, active = false, shredded_at = now()
  FROM namespaces n
 WHERE n.id = k.namespace_id AND n.purged_at IS NOT NULL AND k.shredded_at IS NULL;

-- +goose Down
DROP TRIGGER IF EXISTS namespaces_purge_shreds_keys ON namespaces;
DROP FUNCTION IF EXISTS shred_namespace_encryption_keys();
