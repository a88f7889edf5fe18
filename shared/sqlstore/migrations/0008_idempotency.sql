-- Idempotency keys (CONTRACT §13): per workspace and Idempotency-Key, the
-- fingerprint of the first request (method, path, query and body), the
-- claim of the request that runs it, and once it has finished its answer,
-- which a retry receives again. status is 0 while the first request runs;
-- locked_until is when a retry may take over a request whose process died;
-- expires_at is 24 h after the first request began. The answer's headers are
-- JSON and its body base64, so that any bytes fit both dialects' TEXT.
CREATE TABLE idempotency_keys (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    idem_key     TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    claim        TEXT NOT NULL,
    status       INT NOT NULL DEFAULT 0,
    header       TEXT NOT NULL DEFAULT '',
    body         TEXT NOT NULL DEFAULT '',
    created_at   BIGINT NOT NULL,
    locked_until BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, idem_key)
);
-- The expiry sweep.
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
