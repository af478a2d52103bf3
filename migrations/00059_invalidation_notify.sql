-- +goose Up
-- Every instance caches token lookups (with the state of the token's
-- namespace) and the token signing keys (package auth). The changes those
-- caches must follow on every instance within a second notify channel
-- ar_invalidate from the transaction that makes them, so the notification
-- goes out only if it commits, whichever code path (or operator's SQL)
-- made the change. Instances listen on one connection each
-- (internal/invalidate). Payloads:
--   token <namespace id> <token id>  a token revoked, deleted, or its
--                                    expiry, scopes or repositories changed
--   namespace <namespace id>         deleted, restored, purged, a service
--                                    condition imposed or lifted
--   signing-keys                     a signing key created, retired or deleted
-- Column lists and WHEN clauses keep the frequent updates that change
-- nothing cached (last_used_at, the namespace counters) silent.

-- +goose StatementBegin
CREATE FUNCTION invalidate_notify_token() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ar_invalidate', 'token ' || OLD.namespace_id || ' ' || OLD.id);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION invalidate_notify_namespace() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ar_invalidate', 'namespace ' || OLD.id);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION invalidate_notify_signing_keys() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ar_invalidate', 'signing-keys');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_access_tokens_invalidate
    AFTER UPDATE OF revoked_at, expires_at, scopes, repository_ids, token_sha256 ON access_tokens
    FOR EACH ROW
    WHEN (OLD.revoked_at IS DISTINCT FROM NEW.revoked_at
       OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
       OR OLD.scopes IS DISTINCT FROM NEW.scopes
       OR OLD.repository_ids IS DISTINCT FROM NEW.repository_ids
       OR OLD.token_sha256 IS DISTINCT FROM NEW.token_sha256)
    EXECUTE FUNCTION invalidate_notify_token();

CREATE TRIGGER trg_access_tokens_invalidate_delete
    AFTER DELETE ON access_tokens
    FOR EACH ROW EXECUTE FUNCTION invalidate_notify_token();

CREATE TRIGGER trg_namespaces_invalidate
    AFTER UPDATE OF deleted_at, purged_at, blocked_at, disabled_at, suspended_at ON namespaces
    FOR EACH ROW
    WHEN (OLD.deleted_at IS DISTINCT FROM NEW.deleted_at
       OR OLD.purged_at IS DISTINCT FROM NEW.purged_at
       OR OLD.blocked_at IS DISTINCT FROM NEW.blocked_at
       OR OLD.disabled_at IS DISTINCT FROM NEW.disabled_at
       OR OLD.suspended_at IS DISTINCT FROM NEW.suspended_at)
    EXECUTE FUNCTION invalidate_notify_namespace();

CREATE TRIGGER trg_namespaces_invalidate_delete
    AFTER DELETE ON namespaces
    FOR EACH ROW EXECUTE FUNCTION invalidate_notify_namespace();

CREATE TRIGGER trg_token_signing_keys_invalidate
    AFTER INSERT OR UPDATE OR DELETE ON token_signing_keys
    FOR EACH STATEMENT EXECUTE FUNCTION invalidate_notify_signing_keys();

-- +goose Down
DROP TRIGGER IF EXISTS trg_token_signing_keys_invalidate ON token_signing_keys;
DROP TRIGGER IF EXISTS trg_namespaces_invalidate_delete ON namespaces;
DROP TRIGGER IF EXISTS trg_namespaces_invalidate ON namespaces;
DROP TRIGGER IF EXISTS trg_access_tokens_invalidate_delete ON access_tokens;
DROP TRIGGER IF EXISTS trg_access_tokens_invalidate ON access_tokens;
DROP FUNCTION IF EXISTS invalidate_notify_signing_keys();
DROP FUNCTION IF EXISTS invalidate_notify_namespace();
DROP FUNCTION IF EXISTS invalidate_notify_token();
