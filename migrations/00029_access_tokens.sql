-- +goose Up
-- Namespace-scoped access tokens: not spelled out by the original schema design.

-- access_tokens ---------------------------------------------------------------
-- Namespace-scoped API / registry-client tokens, required by the management
-- API and the protocol surfaces (docs/architecture.md: OCI, Maven, npm clients and
-- GraphQL authenticate per namespace). Not part of the original schema design.
--   token_sha256    SHA-256 of the secret; the secret itself is never stored.
--                   Lookup is (namespace_id, token_sha256): the namespace comes
--                   from the URL slug, or from the token's plaintext prefix.
--   scopes          enum.TokenScope values: 0=read, 1=write, 2=delete, 3=admin;
--                   non-empty.
--   repository_ids  NULL = every repository of the namespace; otherwise a
--                   non-empty list of repositories.id. Deliberately an array
--                   without FK: a join table with ON DELETE CASCADE would widen
--                   a restricted token to "all repositories" when its last
--                   listed repository is deleted, and NO ACTION would block
--                   repository deletes; a dangling id simply matches nothing.
--   expires_at      NULL = no expiry.
--   last_used_at    buffered through counter_deltas (target access_token).
CREATE TABLE access_tokens (
    id             uuid        NOT NULL,
    namespace_id   uuid        NOT NULL,
    name           text        NOT NULL,
    token_sha256   bytea       NOT NULL,
    scopes         smallint[]  NOT NULL,
    repository_ids uuid[]      NULL,
    expires_at     timestamptz NULL,
    revoked_at     timestamptz NULL,
    last_used_at   timestamptz NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT access_tokens_pkey PRIMARY KEY (id, namespace_id),
    CONSTRAINT access_tokens_id_uuidv7 CHECK ((get_byte(uuid_send(id), 6) >> 4) = 7),
    CONSTRAINT access_tokens_name_length CHECK (char_length(name) <= 255),
    CONSTRAINT access_tokens_token_sha256_length CHECK (octet_length(token_sha256) = 32),
    CONSTRAINT access_tokens_scopes_range
        CHECK (cardinality(scopes) >= 1 AND scopes <@ ARRAY[0, 1, 2, 3]::smallint[]),
    CONSTRAINT access_tokens_repository_ids_nonempty
        CHECK (cardinality(repository_ids) >= 1 AND array_position(repository_ids, NULL) IS NULL),
    CONSTRAINT access_tokens_namespace_id_fkey FOREIGN KEY (namespace_id) REFERENCES namespaces (id)
) PARTITION BY HASH (namespace_id);
-- Authentication lookup by hashed secret.
CREATE UNIQUE INDEX access_tokens_token_sha256_key ON access_tokens (namespace_id, token_sha256);
-- Names are unique among live (unrevoked) tokens of a namespace.
CREATE UNIQUE INDEX access_tokens_live_name_key ON access_tokens (namespace_id, name) WHERE revoked_at IS NULL;
-- Keyset listing, newest first.
CREATE INDEX access_tokens_created_at_idx ON access_tokens (namespace_id, created_at DESC, id DESC);
SELECT create_hash_partitions('access_tokens');

-- +goose Down
DROP TABLE IF EXISTS access_tokens;
