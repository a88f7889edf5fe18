-- Dashboard sign-in sessions. The cookie names a random session id; only its
-- SHA-256 is stored. A session acts for one API key (its id, never its
-- value) and ends with it: revoking the key deletes its sessions.
CREATE TABLE dashboard_sessions (
    id_hash    TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    csrf_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX dashboard_sessions_key ON dashboard_sessions (key_id);
CREATE INDEX dashboard_sessions_expires ON dashboard_sessions (expires_at);
