-- +goose Up
-- Sessions of the web UI. The UI posts a token once and gets an HttpOnly
-- cookie holding a random 256-bit session secret; the token itself never
-- stays in the browser. Instance-wide (an admin session has no namespace),
-- looked up by primary key, so the table is not partitioned.
--   session_sha256   SHA-256 of the cookie's secret; the secret is never
--                    stored.
--   admin_binding    admin sessions only: HMAC-SHA256 keyed by the session
--                    secret over the admin token in force at sign-in. A
--                    session stops working when the configured admin token
--                    changes, and a copy of this table gives nothing to
--                    test admin-token guesses against.
--   access_token_*   token sessions only: the access token the session
--                    stands for, re-validated on every request (revocation,
--                    expiry and namespace conditions end the session). No
--                    foreign key: a token row outlives its revocation, and
--                    authentication treats a missing one as invalid.
--   last_seen_at     moved forward at most once a minute; with the idle
--                    timeout it decides idle expiry.
--   expires_at       the absolute end of the session.
CREATE TABLE ui_sessions (
    session_sha256            bytea       NOT NULL,
    admin_binding             bytea       NULL,
    access_token_namespace_id uuid        NULL,
    access_token_id           uuid        NULL,
    created_at                timestamptz NOT NULL,
    last_seen_at              timestamptz NOT NULL,
    expires_at                timestamptz NOT NULL,
    CONSTRAINT ui_sessions_pkey PRIMARY KEY (session_sha256),
    CONSTRAINT ui_sessions_session_sha256_length CHECK (octet_length(session_sha256) = 32),
    CONSTRAINT ui_sessions_admin_binding_length CHECK (octet_length(admin_binding) = 32),
    CONSTRAINT ui_sessions_one_principal CHECK (
        (admin_binding IS NOT NULL AND access_token_namespace_id IS NULL AND access_token_id IS NULL)
        OR (admin_binding IS NULL AND access_token_namespace_id IS NOT NULL AND access_token_id IS NOT NULL)),
    CONSTRAINT ui_sessions_times CHECK (created_at <= last_seen_at AND created_at < expires_at)
);
-- The expiry sweep: absolute expiry and idle expiry.
CREATE INDEX ui_sessions_expires_at_idx ON ui_sessions (expires_at);
CREATE INDEX ui_sessions_last_seen_at_idx ON ui_sessions (last_seen_at);

-- +goose Down
DROP TABLE IF EXISTS ui_sessions;
