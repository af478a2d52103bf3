-- +goose Up
-- The HMAC keys that sign the OCI bearer tokens of /v2/token. Random (32
-- bytes from the application's crypto/rand), never derived from a
-- configured secret, so an issued token reveals nothing about the admin
-- token. Every instance reads the same rows, so a token issued by one is
-- accepted by all. At most one key is current (retired_at IS NULL): it
-- signs; retired keys only verify the tokens they signed until those
-- expire, and are deleted after the longest bearer token lifetime
-- (store.RotateSigningKey). Not per namespace and never hot: a handful of
-- rows, read once per refresh interval by each instance. Kept in clear;
-- envelope encryption of keys at rest is a separate change.
CREATE TABLE token_signing_keys (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        bytea NOT NULL CHECK (length(key) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    retired_at timestamptz,
    CHECK (retired_at IS NULL OR retired_at >= created_at)
);

-- One current key: two instances that find none and create one at once
-- end with a single key (the loser's INSERT ... ON CONFLICT DO NOTHING).
CREATE UNIQUE INDEX token_signing_keys_one_current_key
    ON token_signing_keys ((retired_at IS NULL)) WHERE retired_at IS NULL;

-- +goose Down
DROP TABLE IF EXISTS token_signing_keys;
