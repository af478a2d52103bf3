-- +goose Up
-- access_tokens.secret_hint: the first characters of a token's secret
-- (prefix, namespace part and the first 4 random characters), so lists
-- (npm token list, the UI) tell a namespace's tokens apart. 4 of the 43
-- random base62 characters leave over 230 bits unknown. Tokens minted
-- before this column existed keep NULL: their secret was never stored.
-- A nullable column without a default is a catalog-only change.
ALTER TABLE access_tokens ADD COLUMN secret_hint text NULL;
ALTER TABLE access_tokens ADD CONSTRAINT access_tokens_secret_hint_length
    CHECK (char_length(secret_hint) <= 32);

-- +goose Down
ALTER TABLE access_tokens DROP COLUMN IF EXISTS secret_hint;
